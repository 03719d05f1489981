package local

import (
	"context"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
	trialplan "github.com/sidebench/sidebench/harness/trial"
)

// resizeTrial is a trial with one created pod, default/p, whose events
// land in got.
func resizeTrial(got *collect) (*trial, *podState) {
	tr := &trial{b: &Backend{cl: &localcluster.Cluster{}, opts: Options{Log: io.Discard}}, p: &trialplan.Plan{}, resizing: map[string]bool{},
		sink: &trialSink{known: map[string]bool{"default/p": true}, removed: map[string]bool{}, next: got}}
	tr.flog.Emit = tr.emit
	ps := &podState{name: "default/p", created: true, node: "n", wl: &workload{}, conds: map[corev1.PodConditionType]bool{},
		started: map[string]bool{}, ready: map[string]bool{}, running: map[string]bool{}, attempt: map[string]uint32{},
		done: make(chan struct{}), terminal: make(chan struct{})}
	tr.pods = map[string]*podState{"default/p": ps}
	return tr, ps
}

func podWith(conds ...corev1.PodCondition) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = "default", "p"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds}
	return pod
}

// The kubelet's resize conditions are written as pod.condition with its
// reason and message, once per change; absent is false.
func TestResizeConditionsRecorded(t *testing.T) {
	var got collect
	tr, _ := resizeTrial(&got)
	deferred := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred,
		Message: "Node didn't have enough resource: cpu, requested: 250, used: 1950, capacity: 2000"}
	inProgress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
	steps := []struct {
		name string
		pod  *corev1.Pod
		want []string // cond=v/reason/msg
	}{
		{"deferred", podWith(deferred), []string{"PodResizePending=true/Deferred/" + deferred.Message}},
		{"unchanged", podWith(deferred), nil},
		{"allocated", podWith(inProgress), []string{"PodResizePending=false//", "PodResizeInProgress=true//"}},
		{"actuation error", podWith(corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Reason: "Error", Message: "boom"}),
			[]string{"PodResizeInProgress=true/Error/boom"}},
		{"done", podWith(), []string{"PodResizeInProgress=false//"}},
	}
	for _, s := range steps {
		got = nil
		tr.observe(s.pod, false)
		var seen []string
		for _, e := range got {
			if e.Kind != history.PodCondition {
				continue
			}
			v := "false"
			if e.Value {
				v = "true"
			}
			seen = append(seen, e.Cond+"="+v+"/"+e.Reason+"/"+e.Msg)
		}
		if strings.Join(seen, "|") != strings.Join(s.want, "|") {
			t.Errorf("%s: wrote %q, want %q", s.name, seen, s.want)
		}
	}
}

// A stale status (an attempt running that the wire saw exit) carries no
// resize verdict: its missing conditions are not written as false.
func TestResizeConditionsOfStaleSnapshotIgnored(t *testing.T) {
	var got collect
	tr, ps := resizeTrial(&got)
	tr.observe(podWith(corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}), false)
	ps.attempt["app"], ps.running["app"] = 0, false // seen exited on the wire
	got = nil
	pod := podWith()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	tr.observe(pod, false)
	for _, e := range got {
		if e.Kind == history.PodCondition {
			t.Errorf("stale snapshot wrote %+v", e)
		}
	}
}

// What the kubelet makes of a resize fault decides its record: applied
// only once the kubelet acted on the container; its refusal, or nothing
// by the end, is fault.not-applied with the kubelet's word.
func TestResizeOutcome(t *testing.T) {
	sp := &faults.Spec{Kind: faults.Resize}
	deferred := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, Message: "Node didn't have enough resource: cpu"}
	infeasible := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "InPlacePodVerticalScaling is disabled"}
	cases := []struct {
		name        string
		pods        []*corev1.Pod   // statuses observed, in order
		cri         []history.Event // then CRI events of the pod
		end         bool            // the trial ends before any answer
		wantKind    history.Kind
		wantMsgPart string
	}{
		{name: "resized in place", cri: []history.Event{{Kind: history.ContainerResized, Container: "logs", CPU: 250}},
			wantKind: history.FaultEffect, wantMsgPart: "resized it in place"},
		{name: "deferred, then resized", pods: []*corev1.Pod{podWith(deferred)}, cri: []history.Event{{Kind: history.ContainerResized, Container: "logs", CPU: 250}},
			wantKind: history.FaultEffect, wantMsgPart: "UpdateContainerResources: cpu 250m"},
		{name: "restarted for its policy", cri: []history.Event{{Kind: history.ContainerStopRequested, Container: "logs", Reason: "ResizeRestart"}},
			wantKind: history.FaultEffect, wantMsgPart: "ResizeRestart"},
		{name: "other container resized", cri: []history.Event{{Kind: history.ContainerResized, Container: "app"}}, end: true,
			wantKind: history.FaultNotApplied, wantMsgPart: "did not act on it before the trial ended"},
		{name: "infeasible", pods: []*corev1.Pod{podWith(infeasible)},
			wantKind: history.FaultNotApplied, wantMsgPart: "refused it: PodResizePending Infeasible: InPlacePodVerticalScaling is disabled"},
		{name: "deferred to the end", pods: []*corev1.Pod{podWith(deferred)}, end: true,
			wantKind: history.FaultNotApplied, wantMsgPart: "before the trial ended; last: PodResizePending Deferred: Node didn't have enough resource: cpu"},
		{name: "exited first", cri: []history.Event{{Kind: history.ContainerExited, Container: "logs"}},
			wantKind: history.FaultNotApplied, wantMsgPart: "exited before the kubelet acted"},
		{name: "deferred, then exited", pods: []*corev1.Pod{podWith(deferred)}, cri: []history.Event{{Kind: history.ContainerExited, Container: "logs"}},
			wantKind: history.FaultNotApplied, wantMsgPart: "exited before the kubelet acted on the resize; last: PodResizePending Deferred: Node didn't have enough resource: cpu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got collect
			tr, ps := resizeTrial(&got)
			w := newResizeWait("logs")
			ps.resizes = append(ps.resizes, w)
			for _, pod := range c.pods {
				tr.observe(pod, false)
			}
			for _, e := range c.cri {
				e.Pod = ps.name
				tr.onCRI(&e)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.end {
				cancel()
			}
			tr.awaitResize(ctx, sp, 7, ps, "logs", w) // returns at once: decided, or ctx over
			cancel()
			var kinds []history.Kind
			var msg string
			for _, e := range got {
				if e.Kind.IsFault() {
					kinds = append(kinds, e.Kind)
					if e.Kind != history.FaultEnd {
						msg = e.Msg
					}
				}
			}
			if len(kinds) != 2 || kinds[0] != c.wantKind || kinds[1] != history.FaultEnd {
				t.Fatalf("fault events %v, want [%v fault.end]", kinds, c.wantKind)
			}
			if !strings.Contains(msg, c.wantMsgPart) {
				t.Errorf("msg %q, want it to contain %q", msg, c.wantMsgPart)
			}
			applied, notApplied := tr.flog.Counts()
			if (c.wantKind == history.FaultEffect) != (applied == 1) || applied+notApplied != 1 {
				t.Errorf("counted %d applied, %d not applied", applied, notApplied)
			}
			if len(ps.resizes) != 0 {
				t.Errorf("wait left registered: %d", len(ps.resizes))
			}
		})
	}
}

// Issue 16's fault-resize differential: on the local backend 4 of the 5
// sidecar resizes went to pods the kubelet's admission had rejected
// (phase Failed, reason OutOfcpu) and were recorded as applied. A
// finished pod is not resized (docs/faults.md).
func TestResizeOfRejectedPodNotApplied(t *testing.T) {
	var got collect
	tr, ps := resizeTrial(&got)
	pod := podWith()
	pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, "OutOfcpu"
	tr.observe(pod, false)
	w, err := tr.resize(context.Background(), ps, 0, "logs", &faults.Spec{Kind: faults.Resize})
	if err == nil || w != nil || !strings.Contains(err.Error(), "phase Failed, reason OutOfcpu") {
		t.Fatalf("resize of a rejected pod: wait %v, err %v; want the finished pod refused", w, err)
	}
}

// A kubelet that dies by itself during a trial is recorded (kubelet.down
// with the panic its log ends with) and counts as down; one a fault
// stopped is the fault's to record.
func TestKubeletExitRecorded(t *testing.T) {
	var got collect
	tr, _ := resizeTrial(&got)
	tr.b.cl.Nodes = []*localcluster.Node{{Name: "127.0.0.2", Log: "../../localcluster/testdata/kubelet-resize-panic.log"}}
	tr.b.node = []*nodeState{{kubeletDown: true}}
	if tr.kubeletExited(0) || len(got) != 0 {
		t.Fatalf("an exit during a kubelet-crash fault was recorded: %v", got)
	}
	tr.b.node[0] = &nodeState{}
	if !tr.kubeletExited(0) {
		t.Fatal("an exit without a fault not recorded")
	}
	want := "the kubelet panicked: runtime error: invalid memory address or nil pointer dereference at pkg/kubelet/kuberuntime/kuberuntime_manager.go:1138"
	if len(got) != 1 || got[0].Kind != history.KubeletDown || got[0].Node != "127.0.0.2" || !strings.HasPrefix(got[0].Msg, want) {
		t.Fatalf("events %+v, want kubelet.down %q", got, want)
	}
	if !tr.b.node[0].kubeletDown {
		t.Error("the node's kubelet not marked down: faults would still be applied to it")
	}
}

package local

import (
	"context"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/history"
	trialplan "github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

func TestRewriteSpec(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	in := &corev1.PodSpec{
		InitContainers: []corev1.Container{{
			Name: "proxy", RestartPolicy: &always,
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}, PeriodSeconds: 1, FailureThreshold: 30},
			Lifecycle:    &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 2}}},
		}},
		Containers: []corev1.Container{{Name: "app", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}}},
	}
	out := RewriteSpec(in)
	if in.InitContainers[0].StartupProbe.HTTPGet == nil {
		t.Fatal("input modified")
	}
	p := out.InitContainers[0].StartupProbe
	if p.Exec == nil || p.HTTPGet != nil || p.Exec.Command[2] != cri.ProbeStartup || p.PeriodSeconds != 1 || p.FailureThreshold != 30 {
		t.Errorf("startup probe: %+v", p)
	}
	if h := out.InitContainers[0].Lifecycle.PreStop; h.Exec == nil || h.Sleep != nil || h.Exec.Command[2] != cri.HookPreStop {
		t.Errorf("preStop: %+v", h)
	}
	if r := out.Containers[0].ReadinessProbe; r.Exec == nil || r.Exec.Command[2] != cri.ProbeReadiness {
		t.Errorf("readiness: %+v", r)
	}
	if out.AutomountServiceAccountToken == nil || *out.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken not false")
	}
}

type collect []history.Event

func (c *collect) Write(e *history.Event) error { *c = append(*c, *e); return nil }

func TestTrialSink(t *testing.T) {
	var c collect
	s := &trialSink{next: &c, known: map[string]bool{}, removed: map[string]bool{}}
	s.register("default/a")
	w := func(e history.Event) { s.Write(&e) }
	w(history.Event{T: 10, Kind: history.PodCreated, Pod: "default/a"})
	w(history.Event{T: 5, Kind: history.ContainerRunning, Pod: "default/a", Container: "x"}) // clamped to 10
	w(history.Event{T: 11, Kind: history.ContainerRunning, Pod: "default/other", Container: "x"})
	w(history.Event{T: 12, Kind: history.PodRemoved, Pod: "default/a"})
	w(history.Event{T: 13, Kind: history.ContainerRemoved, Pod: "default/a", Container: "x"})
	w(history.Event{T: 14, Kind: history.KubeletDown, Node: "n"})
	if len(c) != 4 || c[1].T != 10 || c[2].Kind != history.PodRemoved || c[3].Kind != history.KubeletDown {
		t.Fatalf("events: %v", c)
	}
}

func TestSupportsAndFeatureGates(t *testing.T) {
	for p, want := range map[string]bool{
		"kep753":                       true,
		"kep753+ContainerRestartRules": true,
		"kep753+ContainerRestartRules+RestartAllContainersOnContainerExits": true,
		"kep753+RestartAllContainersOnContainerExits":                       false,
		"kep753+SidecarsRestartableDuringPodTermination":                    false,
		"kep753+bug:reinit-mains-first":                                     false,
		"kep753-2019":                                                       false,
		"none":                                                              false,
		"bogus":                                                             false,
		"workaround:wait-wrapper":                                           true,
		"workaround:hold-until-proxy-starts(drain=zero-connections)": true,
	} {
		if got := Supports(p); got != want {
			t.Errorf("Supports(%q) = %v, want %v", p, got, want)
		}
	}
	if g := FeatureGates("kep753", "none"); g != "" {
		t.Errorf("FeatureGates(kep753, none) = %q", g)
	}
	if g := FeatureGates("kep753+ContainerRestartRules"); g != "ContainerRestartRules=true" {
		t.Errorf("FeatureGates(rules) = %q", g)
	}
	if g := FeatureGates("kep753", "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits", "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits+bug:reset-trigger-first"); g != "ContainerRestartRules=true,RestartAllContainersOnContainerExits=true" {
		t.Errorf("FeatureGates(all) = %q", g)
	}
}

func TestRewriteSpecKeepsRestartRules(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	in := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleAction("RestartAllContainers"),
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{88}}}}}}}
	out := RewriteSpec(in)
	c := out.Containers[0]
	if c.RestartPolicy == nil || *c.RestartPolicy != never || len(c.RestartPolicyRules) != 1 ||
		c.RestartPolicyRules[0].Action != "RestartAllContainers" || c.RestartPolicyRules[0].ExitCodes.Values[0] != 88 {
		t.Errorf("restart policy/rules not kept: %+v", c)
	}
}

// TestResetStartFromCRI: the exit of a container whose first matching rule
// is RestartAllContainers writes AllContainersRestarting=True at once (gate
// on, pod not deleting); a stale False from the API is then skipped and
// the API's own True is not written twice.
func TestResetStartFromCRI(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	v1 := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: "RestartAllContainers",
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{88}}}}}}}
	spec, err := convert.PodSpecFromV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := api.ParseGates("kep753+ContainerRestartRules+RestartAllContainersOnContainerExits")
	var got []history.Event
	tr := &trial{p: &trialplan.Plan{Gates: g}, sink: &trialSink{known: map[string]bool{"default/p": true}, removed: map[string]bool{}, next: sinkFunc(func(e *history.Event) error { got = append(got, *e); return nil })}}
	ps := &podState{name: "default/p", created: true, wl: &workload{spec: spec}, conds: map[corev1.PodConditionType]bool{},
		started: map[string]bool{}, ready: map[string]bool{}, running: map[string]bool{}, attempt: map[string]uint32{}}
	tr.pods = map[string]*podState{"default/p": ps}
	if err := tr.onCRI(&history.Event{T: 1, Kind: history.ContainerExited, Pod: "default/p", Container: "app", Code: 1}); err != nil {
		t.Fatal(err)
	}
	if ps.conds[corev1.AllContainersRestarting] {
		t.Fatal("exit 1 matches no rule: no reset")
	}
	tr.onCRI(&history.Event{T: 2, Kind: history.ContainerExited, Pod: "default/p", Container: "app", Code: 88})
	n := 0
	for _, e := range got {
		if e.Kind == history.PodCondition && e.Cond == "AllContainersRestarting" && e.Value {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("AllContainersRestarting=True written %d times, want 1: %+v", n, got)
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = "default", "p"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionFalse}}
	tr.observe(pod, false) // stale: before the kubelet saw the exit
	pod.Status.Conditions[0].Status = corev1.ConditionTrue
	tr.observe(pod, false) // the API catches up: not written again
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	tr.observe(pod, false) // the reset is over
	var conds []bool
	for _, e := range got {
		if e.Kind == history.PodCondition && e.Cond == "AllContainersRestarting" {
			conds = append(conds, e.Value)
		}
	}
	if len(conds) != 2 || !conds[0] || conds[1] {
		t.Errorf("AllContainersRestarting events %v, want [true false]", conds)
	}
}

// TestStaleStatusSnapshotSkipped: at 20 pods/s on a saturated machine a
// kubelet published "app ready, Ready=True, Running" 3-8 s after the CRI
// wire saw every container of the pod exit (the pod had been deleted):
// the checker read it as INV-P3 ("Ready=True while sidecar proxy was not
// ready"). Such a snapshot is the past and is not written; the next,
// current one is; deletion and removal always are.
func TestStaleStatusSnapshotSkipped(t *testing.T) {
	var got []history.Event
	tr := &trial{p: &trialplan.Plan{}, sink: &trialSink{known: map[string]bool{"default/p": true}, removed: map[string]bool{}, next: sinkFunc(func(e *history.Event) error { got = append(got, *e); return nil })}}
	ps := &podState{name: "default/p", created: true, node: "n", wl: &workload{}, conds: map[corev1.PodConditionType]bool{},
		started: map[string]bool{}, ready: map[string]bool{}, running: map[string]bool{}, attempt: map[string]uint32{},
		done: make(chan struct{}), terminal: make(chan struct{})}
	tr.pods = map[string]*podState{"default/p": ps}
	for _, e := range []history.Event{
		{Kind: history.ContainerRunning, Container: "proxy"}, {Kind: history.ContainerRunning, Container: "app"},
		{Kind: history.ContainerExited, Container: "app"}, {Kind: history.ContainerExited, Container: "proxy"},
	} {
		e.Pod = "default/p"
		tr.onCRI(&e)
	}
	got = nil
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	gone := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	now := metav1.Now()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.DeletionTimestamp = "default", "p", &now
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "proxy", Ready: true, State: running}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", Ready: true, State: running}}}
	tr.observe(pod, false)
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind.String())
	}
	if !slices.Equal(kinds, []string{"pod.deleted"}) {
		t.Errorf("stale snapshot wrote %v, want only pod.deleted", kinds)
	}
	// The current status (every container terminated, Succeeded) is written.
	got = nil
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.Conditions = nil
	pod.Status.InitContainerStatuses[0] = corev1.ContainerStatus{Name: "proxy", State: gone}
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", State: gone}
	tr.observe(pod, false)
	if len(got) != 1 || got[0].Kind != history.PodPhase || got[0].Phase != "Succeeded" {
		t.Errorf("current snapshot wrote %+v, want pod.phase Succeeded", got)
	}
	// A snapshot of the running attempt while it runs is current.
	ps.running["app"] = true
	if staleSnapshot(ps, []corev1.ContainerStatus{{Name: "app", State: running}}) {
		t.Error("a running attempt the wire sees running counted as stale")
	}
	ps.attempt["app"] = 1
	if !staleSnapshot(ps, []corev1.ContainerStatus{{Name: "app", State: running, RestartCount: 0}}) {
		t.Error("attempt 0 published running while the wire runs attempt 1: not stale")
	}
}

// The kubelet starts the container after one with a postStart hook only
// once the hook returned (hold-until-proxy-starts relies on it): the
// derived container.started of a container with a hook follows its
// container.poststart-done, not its container.running (INV-H1 read the
// proxy of every hold pod as "Started before its postStart returned").
func TestStartedWaitsForPostStart(t *testing.T) {
	var got []history.Event
	tr := &trial{p: &trialplan.Plan{}, sink: &trialSink{known: map[string]bool{"default/p": true}, removed: map[string]bool{}, next: sinkFunc(func(e *history.Event) error { got = append(got, *e); return nil })}}
	spec := api.PodSpec{Main: []api.Container{{Name: "proxy", Role: api.RoleMain, PostStart: true}, {Name: "app", Role: api.RoleMain}}}
	ps := &podState{name: "default/p", created: true, node: "n", wl: &workload{spec: spec}, conds: map[corev1.PodConditionType]bool{},
		started: map[string]bool{}, ready: map[string]bool{}, running: map[string]bool{}, attempt: map[string]uint32{},
		done: make(chan struct{}), terminal: make(chan struct{})}
	tr.pods = map[string]*podState{"default/p": ps}
	for _, e := range []history.Event{
		{Kind: history.ContainerRunning, Container: "proxy"},
		{Kind: history.ContainerPostStartDone, Container: "proxy", Value: true},
		{Kind: history.ContainerRunning, Container: "app"},
	} {
		e.Pod = "default/p"
		tr.onCRI(&e)
	}
	var seq []string
	for _, e := range got {
		seq = append(seq, e.Kind.String()+" "+e.Container)
	}
	want := []string{"container.running proxy", "container.poststart-done proxy", "container.started proxy", "container.running app", "container.started app"}
	if !slices.Equal(seq, want) {
		t.Errorf("events %v, want %v", seq, want)
	}
}

// TestPreviousTrialEventsDropped is the issue 16 A9 regression: pod names
// repeat across trials (default/web-0), and when one invocation runs
// several scenarios the previous trial's pod is still being killed when
// the next trial starts. Its CRI events must not land in the new trial's
// history: they are attributed by the sandbox's trial label and pod UID,
// not by the name.
func TestPreviousTrialEventsDropped(t *testing.T) {
	var got collect
	tr := &trial{id: "t2-0", p: &trialplan.Plan{}, pods: map[string]*podState{}, uids: map[string]string{},
		sink: &trialSink{known: map[string]bool{}, removed: map[string]bool{}, next: &got}}
	tr.sink.register("default/web-0")
	tr.uids["default/web-0"] = "uid-new"
	srv := cri.New(cri.Config{Node: "127.0.0.2", Sink: cri.SerialSink(criSink{tr})})
	run := func(uid string, labels map[string]string) {
		_, err := srv.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-0", Namespace: "default", Uid: uid},
			Labels:   labels,
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	run("uid-old", map[string]string{LabelTrial: "t1-0"}) // the previous trial's pod, same name
	run("uid-stale", nil)                                 // same name, no trial label, another UID
	run("uid-new", map[string]string{LabelTrial: "t2-0"}) // this trial's pod
	if len(got) != 1 || got[0].Kind != history.SandboxCreated || got[0].Pod != "default/web-0" {
		t.Fatalf("want only this trial's sandbox.created, got %v", got)
	}
	if tr.otherTrial != 2 {
		t.Errorf("dropped %d events of other pods, want 2", tr.otherTrial)
	}
}

package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidebench/sidebench/harness/agentlog"
)

func TestDecidedAt(t *testing.T) {
	s := int64(time.Second)
	cases := []struct {
		name          string
		recv, ltt     int64
		wantAt, wantL int64
	}{
		{"prompt: the receive time", 100*s + 300*ms, 100 * s, 100*s + 300*ms, 300 * ms},
		{"within the second of resolution", 101*s - 1, 100 * s, 101*s - 1, s - 1},
		{"published 20 s late: the decision's latest time", 120 * s, 100 * s, 101*s - 1, 20 * s},
		{"no lastTransitionTime", 120 * s, 0, 120 * s, 0},
		{"ltt ahead of the harness clock (another machine)", 100 * s, 102 * s, 100 * s, 0},
	}
	for _, tc := range cases {
		if at, lag := decidedAt(tc.recv, tc.ltt); at != tc.wantAt || lag != tc.wantL {
			t.Errorf("%s: decidedAt(%d, %d) = %d, %d; want %d, %d", tc.name, tc.recv, tc.ltt, at, lag, tc.wantAt, tc.wantL)
		}
	}
}

// TestObserveLateStatus: a status the kubelet published long after it
// decided it (an overloaded node) is placed at its decision time, with the
// readiness flags that flipped with it, and counted.
func TestObserveLateStatus(t *testing.T) {
	spec := sidecarSpec(t, corev1.RestartPolicyAlways)
	ps := &podState{name: "p", created: true, conds: map[corev1.PodConditionType]bool{}, ready: map[string]bool{},
		exits: map[string]bool{}, streamed: map[string]bool{}, lineKeys: map[agentlog.Key]bool{},
		done: make(chan struct{}), terminal: make(chan struct{})}
	ps.rec = podRecord{Name: "default/p", Node: "n1", Spec: spec}
	tr := &trial{pods: map[string]*podState{"p": ps}}
	ltt := time.Now().Add(-20 * time.Second).Truncate(time.Second)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ltt)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ltt)},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}}}}
	tr.observe(pod, false)
	decided := ltt.UnixNano() + int64(time.Second) - 1
	got := map[string]int64{}
	for _, e := range ps.rec.Observed {
		got[e.Kind.String()+" "+e.Cond+e.Container] = e.T
	}
	for _, k := range []string{"container.ready app", "pod.condition ContainersReady", "pod.condition Ready"} {
		if got[k] != decided {
			t.Errorf("%s at %d, want the decision's latest time %d", k, got[k], decided)
		}
	}
	if at := got["pod.phase "]; at <= decided {
		t.Errorf("phase (no transition time) at %d, want its receive time", at)
	}
	if tr.stats.LateStatus != 2 || tr.stats.StatusLagMax < 19*time.Second {
		t.Errorf("stats %+v, want 2 late changes, lag ≥ 19s", tr.stats)
	}
}

// sidebench-agent does not execute a workaround's wiring: the kube backend
// refuses workaround policies, saying why.
func TestKubeRefusesWorkarounds(t *testing.T) {
	if Supports("workaround:wait-wrapper") || !Supports("kep753") {
		t.Fatal("Supports: want kep753 only")
	}
	ok, why := (&Lazy{}).Supports("workaround:job-quit-signal")
	if ok || !strings.Contains(why, "sidebench-agent does not execute") {
		t.Fatalf("Lazy.Supports = %v, %q", ok, why)
	}
}

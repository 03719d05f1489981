package local

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
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

func TestArrivals(t *testing.T) {
	w := &scenario.Workload{Name: "web", Count: 5, Arrival: scenario.Arrival{Rate: 2, Start: scenario.Duration(time.Second)}}
	got := arrivals(1, w)
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("constant: %v, want %v", got, want)
		}
	}
	w.Arrival = scenario.Arrival{Type: "poisson", Rate: 4}
	a, b := arrivals(7, w), arrivals(7, w)
	for i := range a {
		if a[i] != b[i] || (i > 0 && a[i] < a[i-1]) {
			t.Fatalf("poisson not deterministic/monotone: %v %v", a, b)
		}
	}
	w.Arrival = scenario.Arrival{}
	for _, d := range arrivals(1, w) {
		if d != 0 {
			t.Fatal("all at once")
		}
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

package drive

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

func TestArrivals(t *testing.T) {
	w := &scenario.Workload{Name: "web", Count: 5, Arrival: scenario.Arrival{Rate: 2, Start: scenario.Duration(time.Second)}}
	got := Arrivals(1, w)
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("constant: %v, want %v", got, want)
		}
	}
	w.Arrival = scenario.Arrival{Type: "poisson", Rate: 4}
	a, b := Arrivals(7, w), Arrivals(7, w)
	for i := range a {
		if a[i] != b[i] || (i > 0 && a[i] < a[i-1]) {
			t.Fatalf("poisson not deterministic/monotone: %v %v", a, b)
		}
	}
	w.Arrival = scenario.Arrival{}
	for _, d := range Arrivals(1, w) {
		if d != 0 {
			t.Fatal("all at once")
		}
	}
}

func TestHistorySpecKeepsRestartRules(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	v1 := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job", RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}
	spec, err := convert.PodSpecFromV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	hs := HistorySpec("w", nil, &spec)
	m := hs.Main[0]
	if m.RestartPolicy != "Never" || len(m.Rules) != 1 || m.Rules[0].Action != "Restart" || m.Rules[0].Operator != "In" || m.Rules[0].Values[0] != 42 {
		t.Errorf("history spec lost the restart rules: %+v", m)
	}
}

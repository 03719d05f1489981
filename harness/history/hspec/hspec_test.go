package hspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/reference-impl/convert"
)

func TestKeepsRestartRules(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	always := corev1.ContainerRestartPolicyAlways
	v1 := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always, StartupProbe: &corev1.Probe{}}},
		Containers: []corev1.Container{{Name: "job", RestartPolicy: &never,
			RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}
	spec, err := convert.PodSpecFromV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	hs := Of("w", map[string]string{"a": "b"}, &spec)
	m := hs.Main[0]
	if m.RestartPolicy != "Never" || len(m.Rules) != 1 || m.Rules[0].Action != "Restart" || m.Rules[0].Operator != "In" || m.Rules[0].Values[0] != 42 {
		t.Errorf("history spec lost the restart rules: %+v", m)
	}
	if hs.Workload != "w" || hs.Labels["a"] != "b" || hs.RestartPolicy != "Never" || len(hs.Init) != 1 || !hs.Init[0].Startup || hs.Init[0].Role != "sidecar" {
		t.Errorf("spec: %+v", hs)
	}
}

package chaos

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidebench/sidebench/harness/faults"
)

var env = Env{RunID: "r20261130-0001", Namespace: "sb-r1",
	PhysicalMachines: map[string]string{"node-a": "chaos-mesh/pm-a", "node-b": "chaos-mesh/pm-b"}}

// asMap marshals o to YAML (as kubectl would see it) and back to a map.
func asMap(t *testing.T, o any) map[string]any {
	t.Helper()
	y, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(y, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a path of map keys.
func at(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not an object", strings.Join(path, "."), v)
		}
		v = mm[k]
	}
	return v
}

func want(t *testing.T, m map[string]any, val any, path ...string) {
	t.Helper()
	// Normalise val through JSON, as the map was.
	b, _ := json.Marshal(val)
	var norm any
	_ = json.Unmarshal(b, &norm)
	if got := at(t, m, path...); !reflect.DeepEqual(got, norm) {
		t.Errorf("%s = %#v, want %#v", strings.Join(path, "."), got, norm)
	}
}

func common(t *testing.T, m map[string]any, kind, fault string) {
	t.Helper()
	want(t, m, "chaos-mesh.org/v1alpha1", "apiVersion")
	want(t, m, kind, "kind")
	want(t, m, env.Namespace, "metadata", "namespace")
	want(t, m, map[string]string{LabelRun: env.RunID, LabelFault: fault}, "metadata", "labels")
}

// validate runs Chaos Mesh's own admission webhook validation.
func validate(t *testing.T, o interface{ Validate() ([]string, error) }) {
	t.Helper()
	if _, err := o.Validate(); err != nil {
		t.Errorf("Chaos Mesh's webhook rejects the object: %v", err)
	}
}

func TestContainerKill(t *testing.T) {
	o, err := ContainerKill(env, "kill-proxy", Pods{Names: []string{"web-2", "web-0"}}, "proxy")
	if err != nil {
		t.Fatal(err)
	}
	validate(t, o)
	m := asMap(t, o)
	common(t, m, "PodChaos", "container-kill")
	want(t, m, "container-kill", "spec", "action")
	want(t, m, []string{"proxy"}, "spec", "containerNames")
	want(t, m, "all", "spec", "mode")
	want(t, m, []string{env.Namespace}, "spec", "selector", "namespaces")
	want(t, m, map[string]string{LabelRun: env.RunID}, "spec", "selector", "labelSelectors")
	want(t, m, map[string][]string{env.Namespace: {"web-0", "web-2"}}, "spec", "selector", "pods")

	// Without names, Chaos Mesh picks among the run's pods.
	o, _ = ContainerKill(env, "k", Pods{Labels: map[string]string{"app": "web"}, Count: 3}, "proxy")
	m = asMap(t, o)
	want(t, m, "fixed", "spec", "mode")
	want(t, m, "3", "spec", "value")
	want(t, m, map[string]string{LabelRun: env.RunID, "app": "web"}, "spec", "selector", "labelSelectors")
	validate(t, o)

	if _, err := ContainerKill(env, "k", Pods{}, ""); err == nil {
		t.Error("container-kill without a container accepted (Chaos Mesh would kill the first one)")
	}
}

func TestMemoryStress(t *testing.T) {
	o, err := MemoryStress(env, "oom-proxy", Pods{Names: []string{"web-0"}}, "proxy", 64<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, o)
	m := asMap(t, o)
	common(t, m, "StressChaos", "oom-kill")
	want(t, m, []string{"proxy"}, "spec", "containerNames")
	want(t, m, map[string]any{"workers": 1, "size": "67108864B", "oomScoreAdj": -1000}, "spec", "stressors", "memory")
	want(t, m, "30s", "spec", "duration")
	want(t, m, map[string][]string{env.Namespace: {"web-0"}}, "spec", "selector", "pods")
}

func TestKubeletKill(t *testing.T) {
	o, err := KubeletKill(env, "kubelet", []string{"node-b", "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, o)
	m := asMap(t, o)
	common(t, m, "PhysicalMachineChaos", "kubelet-crash")
	want(t, m, "process", "spec", "action")
	want(t, m, map[string]any{"process": "kubelet", "signal": 9}, "spec", "process")
	want(t, m, "all", "spec", "mode")
	want(t, m, map[string][]string{"chaos-mesh": {"pm-a", "pm-b"}}, "spec", "selector", "physicalMachines")

	// The webhook validation is not a no-op.
	bad := o.DeepCopy()
	bad.Spec.Process.Signal = 0
	if _, err := bad.Validate(); err == nil {
		t.Error("Chaos Mesh's webhook accepted a process kill without a signal")
	}

	if _, err := KubeletKill(env, "k", []string{"node-a", "node-z"}); err == nil || !strings.Contains(err.Error(), "node-z") {
		t.Errorf("node without chaosd: %v", err)
	}
}

func TestEnvChecked(t *testing.T) {
	for _, e := range []Env{{Namespace: "ns"}, {RunID: "r", Namespace: ""}, {RunID: "bad/run id", Namespace: "ns"}} {
		if _, err := ContainerKill(e, "k", Pods{}, "c"); err == nil {
			t.Errorf("env %+v accepted", e)
		}
	}
}

func TestUnsupported(t *testing.T) {
	cases := []struct {
		spec faults.Spec
		bad  bool
		word string
	}{
		{faults.Spec{Kind: faults.OOMKill}, false, ""},
		{faults.Spec{Kind: faults.KubeletCrash, Downtime: time.Second}, false, ""},
		{faults.Spec{Kind: faults.KubeletCrash, Downtime: time.Second, RecoveryCrash: true}, true, "recoveryCrash"},
		{faults.Spec{Kind: faults.RuntimeRestart, Mode: faults.KeepContainers}, false, ""},
		{faults.Spec{Kind: faults.RuntimeRestart, Mode: faults.KillContainers}, true, "kill-containers"},
		{faults.Spec{Kind: faults.NodeShutdown}, true, "node-shutdown"},
		{faults.Spec{Kind: faults.NodePoweroff}, true, "node-poweroff"},
		{faults.Spec{Kind: faults.ContainerGC}, true, "container-gc"},
		{faults.Spec{Kind: faults.ProbeFailure}, true, "probe-failure"},
		{faults.Spec{Kind: faults.ImageChange}, true, "image-change"},
		{faults.Spec{Kind: faults.KindInvalid}, true, "not a fault kind"},
	}
	for _, c := range cases {
		reason, bad := Unsupported(c.spec)
		if bad != c.bad || !strings.Contains(reason, c.word) {
			t.Errorf("Unsupported(%v) = %q, %v; want %v mentioning %q", c.spec.Kind, reason, bad, c.bad, c.word)
		}
		objs, err := ForFault(env, c.spec, 0, Hit{Pods: Pods{Names: []string{"web-0"}}, Container: "proxy", MemoryLimit: 32 << 20, Nodes: []string{"node-a"}})
		if c.bad {
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), reason) {
				t.Errorf("ForFault(%v) error %v, want ErrUnsupported with the reason", c.spec.Kind, err)
			}
			continue
		}
		if err != nil || len(objs) != 1 {
			t.Errorf("ForFault(%v) = %v, %v", c.spec.Kind, objs, err)
			continue
		}
		if objs[0].GetLabels()[LabelRun] != env.RunID || !strings.HasPrefix(objs[0].GetName(), "sb-") {
			t.Errorf("ForFault(%v) object %s labels %v", c.spec.Kind, objs[0].GetName(), objs[0].GetLabels())
		}
	}
	if _, err := ForFault(env, faults.Spec{Kind: faults.OOMKill}, 0, Hit{Container: "proxy"}); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("oom-kill without a memory limit: %v", err)
	}
}

func TestForFaultKinds(t *testing.T) {
	hit := Hit{Pods: Pods{Names: []string{"web-0"}}, Container: "proxy", MemoryLimit: 32 << 20, Nodes: []string{"node-a"}}
	for kind, wantKind := range map[faults.Kind]string{
		faults.OOMKill: "StressChaos", faults.KubeletCrash: "PhysicalMachineChaos", faults.RuntimeRestart: "PhysicalMachineChaos",
	} {
		objs, err := ForFault(env, faults.Spec{Kind: kind, Downtime: time.Second}, 2, hit)
		if err != nil {
			t.Fatal(err)
		}
		m := asMap(t, objs[0])
		want(t, m, wantKind, "kind")
		if kind == faults.RuntimeRestart {
			want(t, m, "containerd", "spec", "process", "process")
		}
	}
}

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, o := range []runtime.Object{&v1alpha1.PodChaos{}, &v1alpha1.StressChaos{}, &v1alpha1.PhysicalMachineChaos{}} {
		gvks, _, err := s.ObjectKinds(o)
		if err != nil || len(gvks) == 0 || gvks[0].GroupVersion().String() != APIVersion {
			t.Errorf("%T: %v %v", o, gvks, err)
		}
	}
	// A built object round-trips through JSON into the CRD type.
	o, _ := ContainerKill(env, "k", Pods{Names: []string{"web-0"}}, "proxy")
	b, _ := json.Marshal(o)
	var back v1alpha1.PodChaos
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Spec, o.Spec) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, back.Spec, o.Spec)
	}
}

func TestName(t *testing.T) {
	if got := Name("R1", "oom_kill#3", 2); got != "sb-r1-oom-kill-3-2" {
		t.Errorf("Name = %q", got)
	}
	long := Name(strings.Repeat("x", 60), "kubelet-crash", 1)
	if len(long) > 63 || strings.HasSuffix(long, "-") {
		t.Errorf("long name %q", long)
	}
}

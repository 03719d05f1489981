package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/chaos"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
)

// list lists Chaos Mesh objects of a kind in ns as unstructured (only
// harness/chaos imports the Chaos Mesh types).
func list(t *testing.T, c client.Client, kind, ns string) []unstructured.Unstructured {
	t.Helper()
	var l unstructured.UnstructuredList
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "chaos-mesh.org", Version: "v1alpha1", Kind: kind + "List"})
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestChaosObjectsOfTheRun: with Chaos Mesh, an oom-kill firing creates a
// StressChaos in the trial's namespace, labelled with the run, naming the
// picked pod and container; the cleanup deletes the run's objects and
// leaves another run's alone.
func TestChaosObjectsOfTheRun(t *testing.T) {
	s := runtime.NewScheme()
	if err := chaos.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	other, err := chaos.ContainerKill(chaos.Env{RunID: "other", Namespace: "sb-run1-t1"}, "theirs", chaos.Pods{Names: []string{"web-0"}}, "app")
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(other).Build()
	b := &Backend{runID: "run1", chaos: c}
	tr := &trial{b: b, ns: "sb-run1-t1"}
	tr.flog.Emit = tr.event
	sp := &faults.Spec{Kind: faults.OOMKill}
	ctx := context.Background()
	if err := tr.createChaos(ctx, sp, 0, chaos.Hit{Pods: chaos.Pods{Names: []string{"web-1"}}, Container: "logs", MemoryLimit: 64 << 20, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	l := list(t, c, "StressChaos", "sb-run1-t1")
	if len(l) != 1 {
		t.Fatalf("%d StressChaos objects, want 1", len(l))
	}
	pods, _, _ := unstructured.NestedMap(l[0].Object, "spec", "selector", "pods")
	ctrs, _, _ := unstructured.NestedStringSlice(l[0].Object, "spec", "containerNames")
	if l[0].GetLabels()[LabelRun] != "run1" || len(ctrs) != 1 || ctrs[0] != "logs" || len(pods) != 1 {
		t.Errorf("object %v", l[0].Object)
	}
	if err := b.deleteChaos(ctx, "sb-run1-t1"); err != nil {
		t.Fatal(err)
	}
	if n := len(list(t, c, "StressChaos", "sb-run1-t1")); n != 0 {
		t.Errorf("after cleanup: %d StressChaos objects", n)
	}
	if n := len(list(t, c, "PodChaos", "sb-run1-t1")); n != 1 {
		t.Errorf("another run's object: %d left, want 1", n)
	}
}

// TestProcessChaos: a kubelet crash on a cluster sidebench does not run
// becomes a PhysicalMachineChaos on the picked node's chaosd, counted as
// applied only once Chaos Mesh reports it injected; a node without a
// registered PhysicalMachine is not applied, with the flag to use.
func TestProcessChaos(t *testing.T) {
	s := runtime.NewScheme()
	if err := chaos.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// Chaos Mesh's controller, as far as this test needs it: it reports
	// every created object injected at once, when inject is set.
	inject := true
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if inject {
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				if err != nil {
					return err
				}
				_ = unstructured.SetNestedSlice(u, []any{map[string]any{"id": "pm", "selectorKey": ".", "phase": "Injected", "injectedCount": int64(1)}}, "status", "experiment", "containerRecords")
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj); err != nil {
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	run := func(pms map[string]string) []history.Event {
		b := &Backend{runID: "run1", chaos: c, cl: &Cluster{}, opts: Options{PhysicalMachines: pms}}
		tr := &trial{b: b, ns: "sb-run1-t1", nodes: []string{"node-a"}}
		tr.flog.Emit = tr.event
		sp := &faults.Spec{Kind: faults.KubeletCrash, Where: faults.Target{NodeCount: 1}}
		tr.fire(context.Background(), sp, 0, "crash", 0, behavior.Seed(1).Rand())
		return tr.global
	}
	kinds := func(evs []history.Event) string {
		var k []string
		for _, e := range evs {
			k = append(k, e.Kind.String())
		}
		return strings.Join(k, " ")
	}
	evs := run(map[string]string{"node-a": "chaos-mesh/pm-a"})
	if got := kinds(evs); got != "fault.begin fault.effect fault.end" {
		t.Errorf("events %q", got)
	}
	if n := len(list(t, c, "PhysicalMachineChaos", "sb-run1-t1")); n != 0 {
		t.Errorf("%d PhysicalMachineChaos left after the firing, want 0 (deleted after the downtime)", n)
	}
	inject = false
	defer func(d time.Duration) { effectWait = d }(effectWait)
	effectWait = 300 * time.Millisecond
	if got := kinds(run(map[string]string{"node-a": "chaos-mesh/pm-a"})); got != "fault.begin fault.not-applied fault.end" {
		t.Errorf("not injected: events %q", got)
	}
	evs = run(nil)
	if len(evs) != 1 || evs[0].Kind != history.FaultNotApplied || !strings.Contains(evs[0].Msg, "--physical-machine") {
		t.Errorf("no PhysicalMachine: %+v", evs)
	}
}

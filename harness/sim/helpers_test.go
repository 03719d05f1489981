package sim

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// benchPod is the pod of the benchmarks: 1 init container, 2 sidecars
// with startup probes, 1 main.
func benchPod() api.PodSpec {
	probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	return api.PodSpec{
		Init: []api.Container{
			{Name: "init", Image: "busybox", Role: api.RoleInit},
			{Name: "proxy", Image: "envoy", Role: api.RoleSidecar, StartupProbe: probe, PreStop: true},
			{Name: "logs", Image: "fluentbit", Role: api.RoleSidecar, StartupProbe: probe},
		},
		Main:                   []api.Container{{Name: "app", Image: "app:v1", Role: api.RoleMain, PreStop: true}},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
}

func benchBehavior() []ContainerBehavior {
	d := behavior.Default()
	init := d
	init.RunTime = behavior.MustParse("uniform(100ms, 300ms)")
	proxy := d
	proxy.StartupAfter = behavior.MustParse("uniform(500ms, 2s)")
	proxy.PreStop = behavior.MustParse("200ms")
	logs := d
	logs.StartupAfter = behavior.MustParse("uniform(0s, 1s)")
	app := d
	app.TermHandling = behavior.MustParse("uniform(100ms, 1s)")
	app.PreStop = behavior.MustParse("100ms")
	return []ContainerBehavior{{Container: "init", Behavior: init}, {Container: "proxy", Behavior: proxy}, {Container: "logs", Behavior: logs}, {Container: "app", Behavior: app}}
}

// benchConfig: pods pods arriving at a constant rate such that about
// concurrent pods are alive, on nodes of 30 pods (at least one node).
func benchConfig(pods, concurrent int) *Config {
	lifetime := 30 * time.Second
	nodes := (concurrent*2)/30 + 1
	rate := float64(concurrent) / lifetime.Seconds()
	return &Config{
		Scenario: "bench",
		Cluster:  Cluster{Nodes: nodes, PodsPerNode: 30},
		Workloads: []Workload{{
			Name:     "web",
			Labels:   map[string]string{"app": "web"},
			Spec:     benchPod(),
			Behavior: benchBehavior(),
			Count:    pods,
			Arrival:  Arrival{Kind: ArrivalPoisson, Rate: rate},
			Lifetime: behavior.MustParse("uniform(20s, 40s)"),
		}},
	}
}

// memSink keeps events in memory (Spec pointers shared, fine for tests).
type memSink struct{ evs []history.Event }

func (m *memSink) Write(e *history.Event) error {
	m.evs = append(m.evs, *e)
	return nil
}

func encode(t testing.TB, cfg *Config, seed uint64) ([]byte, Result) {
	t.Helper()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	res, err := Run(context.Background(), cfg, seed, w)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

func runMem(t testing.TB, cfg *Config, seed uint64) (*memSink, Result) {
	t.Helper()
	s := &memSink{}
	res, err := Run(context.Background(), cfg, seed, s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return s, res
}

func dump(evs []history.Event) string {
	var b bytes.Buffer
	for i := range evs {
		line, _ := history.AppendEvent(nil, &evs[i])
		b.Write(line)
	}
	return b.String()
}

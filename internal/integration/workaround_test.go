package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/sim"
)

// The workarounds of the 2019 debate (docs/workarounds.md), run end to end
// (scenario → trial compiler's transform → sim → checker) against the
// user-level guarantees: for each workaround and guarantee, a case where
// it gives the user what a sidecar is for and the case where it does not,
// with the native design on the same inputs where the contrast is the
// point.

// meshPod is a mesh-style service: a proxy gated by a startup probe on its
// readiness endpoint, an app; deleted after its lifetime.
func meshPod(grace int, proxy, app string) string {
	if !strings.Contains(app, "termHandling") {
		app = strings.TrimPrefix(app+", termHandling: 500ms", ", ")
	}
	return fmt.Sprintf(`- name: mesh
  count: 3
  arrival: {type: constant, rate: 2}
  lifetime: 10s
  template:
    metadata: {labels: {app: mesh}}
    spec:
      terminationGracePeriodSeconds: %d
      initContainers:
      - name: proxy
        image: envoy:1
        restartPolicy: Always
        startupProbe: {httpGet: {path: /ready, port: 15021}, periodSeconds: 1, failureThreshold: 60}
        readinessProbe: {httpGet: {path: /ready, port: 15021}, periodSeconds: 1}
      containers:
      - name: app
        image: app:1
  behaviors:
    default: {startLatency: 200ms, termHandling: 300ms}
    proxy: {startupAfter: 1s, readyAfter: 1s, termHandling: 1s, %s}
    app: {%s}
`, grace, proxy, app)
}

// jobPod is a Job with a log shipper sidecar.
func jobPod(shipper string) string {
	return fmt.Sprintf(`- name: job
  count: 3
  arrival: {type: constant, rate: 2}
  completion: {runTime: 3s}
  template:
    metadata: {labels: {app: job}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 10
      initContainers:
      - name: shipper
        image: fluent-bit:3
        restartPolicy: Always
      containers:
      - name: main
        image: batch:1
  behaviors:
    default: {startLatency: 200ms, termHandling: 300ms}
    shipper: {termHandling: 500ms, termExitCode: 0, %s}
`, shipper)
}

func workaroundScenario(policy, workloads, faults, cluster string) string {
	if faults == "" {
		faults = "[]"
	}
	return fmt.Sprintf(`apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: workarounds}
seed: 20
policies: [%q]
backend: {horizon: 2m}
cluster: {nodes: 2%s}
workloads:
%s
faults: %s
trials: 1
`, policy, cluster, workloads, faults)
}

func TestWorkaroundUserGuarantees(t *testing.T) {
	const (
		appProxy = "USER-APP-PROXY"
		outlives = "USER-PROXY-OUTLIVES"
		jobDone  = "USER-JOB-COMPLETES"
	)
	// A kubelet crash while the proxy's postStart (hold) or startup probe
	// (native) waits for its readiness.
	crashDuringStart := `
- type: kubelet-crash
  downtime: 200ms
  schedule: {type: on-phase, phase: initializing, delay: 500ms}
  target: {workload: mesh}`
	oom := func(workload, container string) string {
		return fmt.Sprintf(`
- type: oom-kill
  schedule: {type: on-phase, phase: running, delay: 1s}
  target: {workload: %s, container: %s}`, workload, container)
	}
	poweroff := `
- type: node-poweroff
  schedule: {at: 5s}
  target: {nodes: [0]}`
	for _, tc := range []struct {
		name, policy, workloads, faults string
		id                              string
		unmet                           bool
	}{
		// wait-wrapper
		{"wait-wrapper execs the app once the proxy serves", "workaround:wait-wrapper", meshPod(30, "", ""), "", appProxy, false},
		{"wait-wrapper whose timeout starts the app anyway", "workaround:wait-wrapper(poll=200ms,timeout=300ms,onTimeout=start)", meshPod(30, "", ""), "", appProxy, true},
		{"wait-wrapper: the proxy drains longer than the app", "workaround:wait-wrapper", meshPod(30, "", ""), "", outlives, false},
		{"wait-wrapper: nothing orders the exits, the app drains longer", "workaround:wait-wrapper", meshPod(30, "", "termHandling: 5s"), "", outlives, true},
		{"wait-wrapper: a shipper that exits on its own lets the Job end", "workaround:wait-wrapper", jobPod("runTime: 6s, exitCode: 0"), "", jobDone, false},
		{"wait-wrapper: the shipper keeps the finished Job running", "workaround:wait-wrapper", jobPod(""), "", jobDone, true},

		// hold-until-proxy-starts
		{"hold: the postStart holds the app until the proxy serves", "workaround:hold-until-proxy-starts", meshPod(30, "", ""), "", appProxy, false},
		{"hold: a kubelet crash during the postStart starts the app early", "workaround:hold-until-proxy-starts", meshPod(30, "", ""), crashDuringStart, appProxy, true},
		{"native: the same kubelet crash, the restarted prober still gates", "kep753", meshPod(30, "", ""), crashDuringStart, appProxy, false},
		{"hold: the drain preStop outlasts the app's drain", "workaround:hold-until-proxy-starts(drain=5s)", meshPod(30, "", "termHandling: 3s"), "", outlives, false},
		{"hold: the app drains longer than the preStop and the proxy's drain", "workaround:hold-until-proxy-starts(drain=1s)", meshPod(30, "", "termHandling: 5s"), "", outlives, true},
		{"hold: zero-connections waits for the app", "workaround:hold-until-proxy-starts(drain=zero-connections)", meshPod(30, "", "termHandling: 5s"), "", outlives, false},
		{"hold: a shipper that exits on its own lets the Job end", "workaround:hold-until-proxy-starts", jobPod("runTime: 6s, exitCode: 0"), "", jobDone, false},
		{"hold: the shipper keeps the finished Job running", "workaround:hold-until-proxy-starts", jobPod(""), "", jobDone, true},

		// job-quit-signal
		{"job-quit-signal: the main tells the shipper to quit", "workaround:job-quit-signal", jobPod(""), "", jobDone, false},
		{"job-quit-signal: an OOM-killed main never signals, the Job hangs", "workaround:job-quit-signal", jobPod(""), oom("job", "main"), jobDone, true},
		{"native: an OOM-killed main, the kubelet stops the shipper", "kep753", jobPod(""), oom("job", "main"), jobDone, false},
		{"job-quit-signal: the wrapper waits for the shipper", "workaround:job-quit-signal", jobPod("readyAfter: 1s"), "", appProxy, false},
		{"job-quit-signal: an OOM-killed shipper is not restarted under Never", "workaround:job-quit-signal", jobPod(""), oom("job", "shipper"), appProxy, true},
		{"job-quit-signal: the shipper quits after the main", "workaround:job-quit-signal", jobPod(""), "", outlives, false},
		{"job-quit-signal: on deletion nothing orders the exits", "workaround:job-quit-signal", meshPod(30, "", "termHandling: 5s"), "", outlives, true},

		// prestop-sleep
		{"prestop-sleep: the sleep outlasts the app's drain", "workaround:prestop-sleep(sleep=5s)", meshPod(30, "", "termHandling: 3s"), "", outlives, false},
		{"prestop-sleep: the app drains longer than the sleep", "workaround:prestop-sleep(sleep=1s)", meshPod(30, "", "termHandling: 5s"), "", outlives, true},
		{"prestop-sleep: power-off, no ordering", "workaround:prestop-sleep", meshPod(30, "", ""), poweroff, outlives, true},
		{"native: power-off, no ordering either", "kep753", meshPod(30, "", ""), poweroff, outlives, true},
		// prestop-sleep orders no start (the sidecars run after the mains):
		// it has no success case for app-never-without-proxy.
		{"prestop-sleep: nothing orders the starts", "workaround:prestop-sleep", meshPod(30, "", ""), "", appProxy, true},
		{"prestop-sleep: a shipper that exits on its own lets the Job end", "workaround:prestop-sleep", jobPod("runTime: 6s, exitCode: 0"), "", jobDone, false},
		{"prestop-sleep: the shipper keeps the finished Job running", "workaround:prestop-sleep", jobPod(""), "", jobDone, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := workaroundScenario(tc.policy, tc.workloads, tc.faults, "")
			o := runTrial(t, text, "", 0)
			row := o.rep.Row(tc.id)
			if row == nil {
				t.Fatalf("no row %s", tc.id)
			}
			if got := row.Unmet > 0; got != tc.unmet {
				var msgs []string
				for _, f := range o.rep.Findings {
					if strings.HasPrefix(f.ID, "USER-") {
						msgs = append(msgs, f.String())
					}
				}
				t.Fatalf("%s under %s: unmet on %d of %d pods, want unmet=%v\n%s", tc.id, tc.policy, row.Unmet, o.pods, tc.unmet, strings.Join(msgs, "\n"))
			}
			if o.rep.Violations() != 0 {
				t.Errorf("kubelet-level violations: %d\n%s", o.rep.Violations(), firstFinding(o))
			}
		})
	}
}

// The startup cost of a workaround is the user's: pod_startup ends at the
// wrapper's exec, so a wait-wrapper that polls every 2 s pays up to 2 s
// over native sidecars on the same seed; hold-until-proxy-starts starts
// the app after the proxy's postStart, as native sidecars do after its
// startup probe.
func TestWorkaroundStartupCost(t *testing.T) {
	p50 := func(policy string) (startup, gate float64) {
		text := workaroundScenario(policy, strings.Replace(meshPod(30, "", ""), "count: 3", "count: 20", 1), "", "")
		recs := podRecords(t, text)
		var s, g []float64
		for _, r := range recs {
			if v, ok := r.Latency(metrics.PodStartup); ok {
				s = append(s, v)
			}
			if v, ok := r.Latency(metrics.SidecarGate); ok {
				g = append(g, v)
			}
		}
		if len(s) != 20 {
			t.Fatalf("%s: pod_startup of %d pods, want 20", policy, len(s))
		}
		return median(s), median(g)
	}
	native, nativeGate := p50("kep753")
	wrapped, wrappedGate := p50("workaround:wait-wrapper(poll=2s)")
	hold, _ := p50("workaround:hold-until-proxy-starts")
	t.Logf("p50 pod_startup ms: native %.0f (gate %.0f), wait-wrapper(poll=2s) %.0f (gate %.0f), hold %.0f", native, nativeGate, wrapped, wrappedGate, hold)
	if wrapped <= native {
		t.Errorf("wait-wrapper(poll=2s) p50 pod_startup %.0f ms, want more than native's %.0f ms (the app starts at the exec)", wrapped, native)
	}
	if wrappedGate <= nativeGate {
		t.Errorf("wait-wrapper(poll=2s) p50 sidecar_gate %.0f ms, want more than native's %.0f ms", wrappedGate, nativeGate)
	}
	if hold > native+1000 || hold < native-1000 {
		t.Errorf("hold p50 pod_startup %.0f ms, want within 1 s of native's %.0f ms", hold, native)
	}
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)/2]
}

// podRecords runs trial 0 of the scenario's first policy on the sim and
// returns each pod's metrics record.
func podRecords(t *testing.T, text string) []metrics.Record {
	t.Helper()
	cfg, tr := compileTrial(t, text, "", 0)
	var recs []metrics.Record
	part := history.NewPartitioner(func(meta *history.Meta, pod string, events []history.Event) error {
		recs = append(recs, metrics.FromEvents(meta, pod, events))
		return nil
	})
	if _, err := sim.RunTrial(context.Background(), cfg, tr.Seed, 0, part); err != nil {
		t.Fatal(err)
	}
	if err := part.Close(); err != nil {
		t.Fatal(err)
	}
	return recs
}

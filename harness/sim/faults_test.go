package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Fault tests: one small deterministic run per fault with fixed timings.
// Timeline of the pod without faults (t in seconds): sandbox 0, init
// 0.1-0.3, proxy running 0.4 (startup passes at 1.4), logs running 1.5
// (startup passes at once), app running 1.6; deleted at 60 with 30 s
// grace.

const sec = int64(time.Second)

func fixedBehavior() []ContainerBehavior {
	d := behavior.Default()
	init := d
	init.RunTime = behavior.Fixed(200 * time.Millisecond)
	proxy := d
	proxy.StartupAfter = behavior.Fixed(time.Second)
	proxy.PreStop = behavior.Fixed(200 * time.Millisecond)
	logs := d
	app := d
	app.PreStop = behavior.Fixed(100 * time.Millisecond)
	app.TermHandling = behavior.Fixed(500 * time.Millisecond)
	return []ContainerBehavior{{Container: "init", Behavior: init}, {Container: "proxy", Behavior: proxy}, {Container: "logs", Behavior: logs}, {Container: "app", Behavior: app}}
}

func faultConfig(pods int, fs ...faults.Spec) *Config {
	return &Config{
		Scenario: "faults",
		Cluster:  Cluster{Nodes: 1, PodsPerNode: 10},
		Workloads: []Workload{{
			Name:     "web",
			Labels:   map[string]string{"app": "web"},
			Spec:     benchPod(),
			Behavior: fixedBehavior(),
			Count:    pods,
			Lifetime: behavior.Fixed(60 * time.Second),
		}},
		Faults: fs,
		Stop:   Stop{MaxDuration: 10 * time.Minute},
	}
}

type evs []history.Event

func (l evs) filter(f func(*history.Event) bool) evs {
	var out evs
	for i := range l {
		if f(&l[i]) {
			out = append(out, l[i])
		}
	}
	return out
}

func (l evs) kind(k history.Kind) evs {
	return l.filter(func(e *history.Event) bool { return e.Kind == k })
}

func (l evs) c(name string) evs {
	return l.filter(func(e *history.Event) bool { return e.Container == name })
}

func (l evs) between(from, to int64) evs {
	return l.filter(func(e *history.Event) bool { return e.T >= from && e.T < to })
}

func (l evs) first() *history.Event {
	if len(l) == 0 {
		return nil
	}
	return &l[0]
}

// runFault runs cfg, checks KEP-753 ordering over the whole history and
// that every pod was removed, and returns the events.
func runFault(t *testing.T, cfg *Config) (evs, Result) {
	t.Helper()
	s, res := runMem(t, cfg, 1)
	o := &orderSink{pods: map[string]*podOrder{}}
	for i := range s.evs {
		o.Write(&s.evs[i])
	}
	for _, e := range o.errs {
		t.Error("ordering: " + e)
	}
	if res.PodsRemoved != res.PodsCreated {
		t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
	}
	if t.Failed() {
		t.Log("\n" + dump(s.evs))
	}
	return evs(s.evs), res
}

func wantFault(t *testing.T, l evs, effects int) {
	t.Helper()
	if n := len(l.kind(history.FaultEffect)); n != effects {
		t.Errorf("%d fault.effect events, want %d", n, effects)
	}
	if len(l.kind(history.FaultBegin)) != len(l.kind(history.FaultEnd)) {
		t.Errorf("%d fault.begin but %d fault.end", len(l.kind(history.FaultBegin)), len(l.kind(history.FaultEnd)))
	}
}

func once(at int64) faults.Schedule { return faults.Schedule{Kind: faults.Once, At: time.Duration(at)} }

func TestFaultKubeletCrash(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.KubeletCrash, When: once(10 * sec), Downtime: 5 * time.Second})
	l, res := runFault(t, cfg)
	wantFault(t, l, 1)
	if d, u := l.kind(history.KubeletDown).first(), l.kind(history.KubeletUp).first(); d == nil || u == nil || d.T != 10*sec || u.T != 15*sec {
		t.Fatalf("kubelet down/up: %v %v", d, u)
	}
	// INV-F1: nothing is re-run or restarted, Started does not flap.
	if n := len(l.kind(history.ContainerStartRequested)); n != 4 {
		t.Errorf("%d starts, want 4 (no container re-run after the kubelet restart)", n)
	}
	if f := l.kind(history.ContainerStarted).between(0, 60*sec).filter(func(e *history.Event) bool { return !e.Value }); len(f) > 0 {
		t.Errorf("Started flapped: %v", f)
	}
	if res.FaultsApplied != 1 {
		t.Errorf("result %+v", res)
	}
}

func TestFaultKubeletCrashDuringTermination(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.KubeletCrash, Downtime: 3 * time.Second, RecoveryCrash: true, RecoveryCrashAfter: 500 * time.Millisecond,
		When: faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseTerminating, Delay: 50 * time.Millisecond}})
	// The main ignores SIGTERM, so termination is in progress at the crash.
	cfg.Workloads[0].Behavior[3].Behavior.TermHandling = behavior.NeverDist()
	l, _ := runFault(t, cfg)
	wantFault(t, l, 2) // the crash and the crash during recovery
	if n := len(l.kind(history.KubeletDown)); n != 2 {
		t.Errorf("%d kubelet.down, want 2", n)
	}
	// INV-F6: termination restarts after the kubelet is back; the main is
	// killed at the end of its grace, then the sidecars stop in order.
	if k := l.kind(history.ContainerKilled).c("app").first(); k == nil {
		t.Error("main never SIGKILLed")
	}
	if n := len(l.kind(history.PodTerminating)); n < 2 {
		t.Errorf("%d pod.terminating, want the termination retried after the restart", n)
	}
}

func TestFaultRuntimeRestartKillContainers(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(10 * sec), Downtime: 3 * time.Second, Mode: faults.KillContainers})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if n := len(l.kind(history.ContainerExited).between(10*sec, 10*sec+1).filter(func(e *history.Event) bool { return e.Code == 137 })); n != 3 {
		t.Errorf("%d containers exited 137 at the restart, want 3", n)
	}
	if l.kind(history.SandboxLost).first() == nil {
		t.Fatal("no sandbox.lost")
	}
	// INV-F3: new sandbox after the runtime is back, init re-runs first.
	sb := l.kind(history.SandboxCreated).filter(func(e *history.Event) bool { return e.Attempt == 1 }).first()
	if sb == nil || sb.T < 13*sec {
		t.Fatalf("sandbox attempt 1: %v", sb)
	}
	if s := l.kind(history.ContainerStartRequested).c("init").between(sb.T, 60*sec).first(); s == nil {
		t.Error("init not re-run in the new sandbox")
	}
	if s := l.kind(history.ContainerRunning).c("app").between(sb.T, 60*sec).first(); s == nil {
		t.Error("app not running again in the new sandbox")
	}
}

func TestFaultRuntimeRestartInFlight(t *testing.T) {
	// proxy's start is in flight at 0.35 s (requested 0.3, running 0.4).
	cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(350 * int64(time.Millisecond)), Downtime: 2 * time.Second})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if f := l.kind(history.ContainerStartFailed).c("proxy").first(); f == nil {
		t.Fatal("in-flight start of proxy did not fail")
	}
	if r := l.kind(history.ContainerRunning).c("app").first(); r == nil || r.T < 2350*int64(time.Millisecond) {
		t.Errorf("app running at %v, want after the runtime is back", r)
	}
	// The failed sync is retried after the pod worker's back-off
	// (backOffPeriod, 10 s), not at the runtime's return: the relist then
	// has no news of the pod (the cut start's record stays Created).
	if s := l.kind(history.ContainerStartRequested).c("proxy").filter(func(e *history.Event) bool { return e.T > 350*int64(time.Millisecond) }).first(); s == nil || s.T != 10350*int64(time.Millisecond) {
		t.Errorf("proxy started again %v, want at 10.35 s", s)
	}
}

func TestFaultOOMKillSidecar(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.OOMKill, When: once(10 * sec), Where: faults.Target{Container: "proxy"}})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	x := l.kind(history.ContainerExited).c("proxy").first()
	if x == nil || x.T != 10*sec || x.Code != 137 || x.Reason != "OOMKilled" {
		t.Fatalf("proxy exit: %v", x)
	}
	if p := l.kind(history.ContainerPreStopBegin).c("proxy").between(0, 10*sec+1); len(p) > 0 {
		t.Error("preStop ran for an OOM-killed container")
	}
	// INV-Q4/R1: the sidecar restarts, the main does not.
	if s := l.kind(history.ContainerStartRequested).c("proxy").filter(func(e *history.Event) bool { return e.Attempt == 1 }).first(); s == nil {
		t.Error("proxy not restarted")
	}
	if n := len(l.kind(history.ContainerStartRequested).c("app")); n != 1 {
		t.Errorf("app started %d times, want 1", n)
	}
}

func TestFaultNotApplied(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.OOMKill, When: once(10 * sec), Where: faults.Target{Container: "init"}})
	l, res := runFault(t, cfg)
	na := l.kind(history.FaultNotApplied).first()
	if na == nil || !strings.Contains(na.Msg, "not running") || res.FaultsNotApplied != 1 || res.FaultsApplied != 0 {
		t.Fatalf("not-applied: %v, result %+v", na, res)
	}
}

func TestFaultNodeShutdown(t *testing.T) {
	cfg := faultConfig(2, faults.Spec{Kind: faults.NodeShutdown, When: once(10 * sec), ShutdownGracePeriod: 20 * time.Second,
		ShutdownGracePeriodCriticalPods: 5 * time.Second, Return: true, Downtime: 10 * time.Second})
	crit := cfg.Workloads[0]
	crit.Name, crit.Count = "critical", 1
	crit.Spec.Critical = true
	cfg.Workloads = append(cfg.Workloads, crit)
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if s := l.kind(history.NodeShutdown).first(); s == nil || s.T != 10*sec {
		t.Fatalf("node.shutdown: %v", s)
	}
	// INV-F4: regular pods first with SGP-SGPCP, then critical pods with
	// SGPCP, as soon as the regular pods are done (at 10.8 s, well before
	// the regular group's 15 s budget ran out: killPods waits for a
	// group's pods or its budget, whichever comes first).
	term := l.kind(history.PodTerminating)
	var lastRegular int64
	for _, e := range l.kind(history.PodPhase) {
		if e.Pod != "default/critical-0" && (e.Phase == "Failed" || e.Phase == "Succeeded") {
			lastRegular = max(lastRegular, e.T)
		}
	}
	if len(term) != 3 || term[0].Reason != "NodeShutdown" || term[0].Grace != int64(15*time.Second) || term[0].T != 10*sec ||
		term[2].Pod != "default/critical-0" || term[2].T != lastRegular || term[2].T >= 25*sec || term[2].Grace != int64(5*time.Second) {
		t.Fatalf("pod.terminating: %v (regular pods done at %d)", term, lastRegular)
	}
	// Failed/Terminated, or Succeeded for a pod whose mains all exited 0
	// (killPods keeps a successful terminal phase).
	done := l.kind(history.PodPhase).filter(func(e *history.Event) bool {
		return (e.Phase == "Failed" && e.Reason == "Terminated") || e.Phase == "Succeeded"
	})
	if len(done) != 3 {
		t.Errorf("want 3 pods Failed/Terminated or Succeeded (INV-F4), got %v", done)
	}
	if d := l.kind(history.NodeDown).first(); d == nil || d.T != 30*sec {
		t.Errorf("node.down: %v", d)
	}
	if u := l.kind(history.NodeUp).first(); u == nil || u.T != 40*sec {
		t.Errorf("node.up: %v", u)
	}
}

func TestFaultPoweroffReturn(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.NodePoweroff, When: once(10 * sec), Return: true, Downtime: 5 * time.Second})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	at := l.between(10*sec, 10*sec+1)
	if n := len(at.kind(history.ContainerExited).filter(func(e *history.Event) bool { return e.Code == 137 })); n != 3 {
		t.Errorf("%d containers died at power-off, want 3", n)
	}
	if len(at.kind(history.ContainerPreStopBegin)) > 0 || len(at.kind(history.PodTerminating)) > 0 {
		t.Error("power-off ran preStop hooks or a termination (INV-F5: none)")
	}
	sb := l.kind(history.SandboxCreated).filter(func(e *history.Event) bool { return e.Attempt == 1 }).first()
	if sb == nil || sb.T < 15*sec {
		t.Fatalf("sandbox attempt 1: %v", sb)
	}
	if s := l.kind(history.ContainerStartRequested).c("init").between(sb.T, 60*sec).first(); s == nil {
		t.Error("init not re-run after the node came back (INV-F3)")
	}
}

func TestFaultPoweroffLost(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.NodePoweroff, When: once(10 * sec)})
	l, res := runFault(t, cfg)
	wantFault(t, l, 1)
	r := l.kind(history.PodRemoved).first()
	if r == nil || r.Reason != "NodeLost" || res.PodsLost != 1 {
		t.Fatalf("pod.removed %v, result %+v", r, res)
	}
}

func TestFaultGCWhileKubeletDown(t *testing.T) {
	cfg := faultConfig(1,
		faults.Spec{Kind: faults.KubeletCrash, When: once(10 * sec), Downtime: 5 * time.Second},
		faults.Spec{Kind: faults.ContainerGC, When: once(12 * sec)})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 2)
	rm := l.kind(history.ContainerRemoved).first()
	if rm == nil || rm.Container != "init" || rm.T != 12*sec {
		t.Fatalf("container.removed: %v", rm)
	}
	// INV-F1: the completed init is not re-run by the restarted kubelet.
	if n := len(l.kind(history.ContainerStartRequested).c("init")); n != 1 {
		t.Errorf("init started %d times, want 1", n)
	}
}

// The runtime removes records; while it restarts it removes none.
func TestFaultGCWhileRuntimeDown(t *testing.T) {
	cfg := faultConfig(1,
		faults.Spec{Kind: faults.RuntimeRestart, When: once(10 * sec), Downtime: 5 * time.Second},
		faults.Spec{Kind: faults.ContainerGC, When: once(12 * sec)})
	l, _ := runFault(t, cfg)
	if rm := l.kind(history.ContainerRemoved).first(); rm != nil {
		t.Errorf("container.removed %v while the runtime was down", rm)
	}
	na := l.kind(history.FaultNotApplied).first()
	if na == nil || na.Fault != "container-gc" || na.Msg != "runtime down" {
		t.Errorf("fault.not-applied %v, want the GC's, \"runtime down\"", na)
	}
}

func TestFaultStartupProbeFailure(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.ProbeFailure, Probe: api.ProbeStartup, Window: 10 * time.Second,
		Where: faults.Target{Container: "proxy"},
		When:  faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseInitializing, Delay: 500 * time.Millisecond}})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	f := l.kind(history.ProbeResult).c("proxy").filter(func(e *history.Event) bool { return e.Result == "failure" }).first()
	if f == nil {
		t.Fatal("no startup probe failure")
	}
	// INV-S2: the sidecar is killed and restarted; nothing after it starts
	// meanwhile (checked by the ordering sink).
	if s := l.kind(history.ContainerStopRequested).c("proxy").first(); s == nil || s.Reason != "StartupProbe" {
		t.Errorf("proxy stop: %v", s)
	}
	if s := l.kind(history.ContainerStartRequested).c("app").first(); s == nil || s.T < f.T {
		t.Errorf("app started at %v, before the sidecar recovered", s)
	}
}

func TestFaultLivenessProbeFailure(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.ProbeFailure, Probe: api.ProbeLiveness, Window: 5 * time.Second,
		Where: faults.Target{Container: "app"}, When: once(10 * sec)})
	cfg.Workloads[0].Spec.Main[0].LivenessProbe = &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if s := l.kind(history.ContainerStopRequested).c("app").first(); s == nil || s.Reason != "LivenessProbe" {
		t.Fatalf("app stop: %v", s)
	}
	if n := len(l.kind(history.ContainerStartRequested).c("app")); n != 2 {
		t.Errorf("app started %d times, want 2", n)
	}
	if n := len(l.kind(history.ContainerStartRequested).c("proxy")); n != 1 {
		t.Errorf("proxy started %d times, want 1 (INV-R3)", n)
	}
}

func TestFaultImageChange(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.ImageChange, Image: "envoy:v2", Where: faults.Target{Container: "proxy"}, When: once(10 * sec)})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if c := l.kind(history.ContainerImageChanged).first(); c == nil || c.Msg != "envoy:v2" {
		t.Fatalf("image-changed: %v", c)
	}
	// INV-U1: only the sidecar restarts.
	if n := len(l.kind(history.ContainerStartRequested).c("proxy")); n != 2 {
		t.Errorf("proxy started %d times, want 2", n)
	}
	if n := len(l.kind(history.ContainerStartRequested).c("app")) + len(l.kind(history.ContainerStartRequested).c("logs")); n != 2 {
		t.Errorf("app/logs started %d times, want once each", n)
	}
}

func TestFaultValidation(t *testing.T) {
	cases := []struct {
		f    faults.Spec
		want string
	}{
		{faults.Spec{Name: "x", Kind: faults.OOMKill, Where: faults.Target{Container: "nope"}}, `fault 0 (x): target "container=nope"`},
		{faults.Spec{Kind: faults.KubeletCrash, Downtime: time.Second, Where: faults.Target{Nodes: []int{3}}}, "node index 3 out of range"},
		{faults.Spec{Kind: faults.KubeletCrash}, "fault 0 (kubelet-crash#0): downtime must be > 0"},
		{faults.Spec{Kind: faults.ProbeFailure, Probe: api.ProbeLiveness, Window: time.Second, Where: faults.Target{Container: "app"}}, "has a liveness probe"},
		{faults.Spec{Kind: faults.OOMKill, Where: faults.Target{Workload: "db"}}, "no workload matches"},
	}
	for _, c := range cases {
		cfg := faultConfig(1, c.f)
		_, err := Run(context.Background(), cfg, 1, history.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.f, err, c.want)
		}
	}
}

// TestAllNodesLost: when every node is powered off for good, waiting and
// later pods are given up instead of waiting forever (even with a
// recurring fault and no stop time).
func TestAllNodesLost(t *testing.T) {
	cfg := faultConfig(20,
		faults.Spec{Kind: faults.NodePoweroff, When: once(10 * sec)},
		faults.Spec{Kind: faults.ContainerGC, When: faults.Schedule{Kind: faults.Every, Interval: time.Second}})
	cfg.Workloads[0].Arrival = Arrival{Kind: ArrivalConstant, Rate: 1}
	cfg.Stop = Stop{}
	_, res := runFault(t, cfg)
	if res.PodsLost != 20-res.PodsCompleted || res.PodsRemoved != 20 {
		t.Fatalf("%+v", res)
	}
}

// TestFaultRuntimeDownInPodKill: the runtime goes down during app's
// preStop (deleted at 60 s, 30 s grace), so app's StopContainer is refused
// (killPodWithSyncResult, the reference's pod_kill_stop_refused.txt).
// Back by the deadline: the sidecars wait out the grace for app, get the
// 2 s minimum, and the sandbox stop SIGKILLs app; one kill. Down until
// just past the deadline (90.55 s): the sidecars' stops and the sandbox
// stop at 90 s are refused too, so the kill runs again after the pod
// worker's back-off (91 s), in order and with the whole grace, preStops
// included.
func TestFaultRuntimeDownInPodKill(t *testing.T) {
	run := func(down time.Duration) evs {
		t.Helper()
		cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(60*sec + 50*int64(time.Millisecond)), Downtime: down})
		s, res := runMem(t, cfg, 1)
		if res.PodsRemoved != res.PodsCreated {
			t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
		}
		return evs(s.evs)
	}
	t.Run("back by the deadline", func(t *testing.T) {
		l := run(2 * time.Second)
		if n := len(l.kind(history.PodTerminating)); n != 1 {
			t.Errorf("%d pod.terminating, want 1", n)
		}
		for _, c := range []string{"logs", "proxy"} {
			if s := l.kind(history.ContainerStopRequested).c(c).first(); s == nil || s.T != 90*sec || s.Grace != 2*sec {
				t.Errorf("%s stop: %+v, want at the deadline (90 s) with 2 s", c, s)
			}
		}
		k := l.kind(history.ContainerKilled).c("app").first()
		sb := l.kind(history.SandboxStopped).first()
		if k == nil || sb == nil || k.T < 90*sec || sb.T != k.T {
			t.Errorf("app killed %+v, sandbox stopped %+v: want app SIGKILLed by the sandbox stop after the sidecars' turn", k, sb)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
	t.Run("down past the deadline", func(t *testing.T) {
		l := run(30500 * time.Millisecond)
		terms := l.kind(history.PodTerminating)
		if len(terms) < 2 {
			t.Fatalf("%d pod.terminating, want the kill run again", len(terms))
		}
		last := terms[len(terms)-1]
		if last.T < 90*sec+550*int64(time.Millisecond) || last.Grace != 30*sec {
			t.Errorf("last kill %+v: want after the runtime is back (90.55 s), with the whole 30 s", last)
		}
		if p := l.kind(history.ContainerPreStopBegin).c("app").between(last.T, 200*sec).first(); p == nil {
			t.Error("app's preStop not run again in the kill run again")
		}
		stop := l.kind(history.ContainerStopRequested).c("app").between(last.T, 200*sec).first()
		exit := l.kind(history.ContainerExited).c("app").between(last.T, 200*sec).first()
		logs := l.kind(history.ContainerStopRequested).c("logs").between(last.T, 200*sec).first()
		if stop == nil || stop.Grace < 29*sec || exit == nil || logs == nil || logs.T < exit.T {
			t.Errorf("last kill: app stop %+v, exit %+v, logs stop %+v: want app stopped with the grace and the sidecars after it", stop, exit, logs)
		}
		if k := l.kind(history.ContainerKilled).first(); k != nil {
			t.Errorf("SIGKILL %+v: the last kill has its grace", k)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
}

// TestFaultRuntimeRestartCutsStopInFlight: app's StopContainer of the pod
// kill (60.1 s, grace 29.9 s) is in flight when the runtime restarts at
// 61 s (containers kept): the kubelet's call fails and the runtime's
// SIGKILL timer is lost with it, the SIGTERM having been delivered. The
// kill's goroutine for app returned the error, so the sidecars wait out
// the grace (90 s). An app that handles SIGTERM in 5 s exits all the same
// (65.1 s); one that would take 40 s is still running at the kill's end,
// and the sandbox stop SIGKILLs it.
func TestFaultRuntimeRestartCutsStopInFlight(t *testing.T) {
	run := func(handling time.Duration) evs {
		t.Helper()
		cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(61 * sec), Downtime: 2 * time.Second})
		cfg.Workloads[0].Behavior[3].Behavior.TermHandling = behavior.Fixed(handling)
		s, res := runMem(t, cfg, 1)
		if res.PodsRemoved != res.PodsCreated {
			t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
		}
		l := evs(s.evs)
		if n := len(l.kind(history.PodTerminating)); n != 1 {
			t.Errorf("%d pod.terminating, want 1", n)
		}
		if s := l.kind(history.ContainerStopRequested).c("logs").first(); s == nil || s.T != 90*sec {
			t.Errorf("logs stop %+v: want at the deadline (90 s), app's goroutine having failed", s)
		}
		return l
	}
	t.Run("exits on its own", func(t *testing.T) {
		l := run(5 * time.Second)
		if x := l.kind(history.ContainerExited).c("app").first(); x == nil || x.T != 65*sec+100*int64(time.Millisecond) || x.Code == 137 {
			t.Errorf("app exit %+v: want its own at 65.1 s", x)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
	t.Run("SIGKILLed by the sandbox stop", func(t *testing.T) {
		l := run(40 * time.Second)
		k := l.kind(history.ContainerKilled).c("app").first()
		sb := l.kind(history.SandboxStopped).first()
		if k == nil || sb == nil || k.T <= 90*sec || sb.T != k.T {
			t.Errorf("app killed %+v, sandbox stopped %+v: want the SIGKILL of the sandbox stop after the sidecars, not the lost timer's at 90 s", k, sb)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
}

// A runtime that refuses calls also hides what its records say: the
// PLEG's relist fails (GenericPLEG.Relist returns on GetPods' error), so
// an exit while the runtime is down reaches the kubelet at the first
// relist after it is back, with every other change of the outage in one
// batch the pod worker's sync reads whole.
func TestFaultRuntimeDownHidesExits(t *testing.T) {
	const down, up = 10 * sec, 13 * sec
	run := func(t *testing.T, never bool) evs {
		t.Helper()
		cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(down), Downtime: time.Duration(up - down)})
		w := &cfg.Workloads[0]
		if never {
			w.Spec.RestartPolicy = api.RestartNever // a Job's pod
			w.Lifetime = behavior.NeverDist()
			w.Behavior[2].Behavior.RunTime = behavior.Fixed(10*time.Second + 200*time.Millisecond) // logs fails first
			w.Behavior[2].Behavior.ExitCode = 1
		}
		w.Behavior[3].Behavior.RunTime = behavior.Fixed(10*time.Second + 500*time.Millisecond) // app ends during the outage
		s, res := runMem(t, cfg, 1)
		if res.PodsRemoved != res.PodsCreated {
			t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
		}
		l := evs(s.evs)
		if x := l.kind(history.ContainerExited).c("app").first(); x == nil || x.T <= down || x.T >= up {
			t.Fatalf("app exit %+v: want during the outage", x)
		}
		return l
	}
	t.Run("restart heard at runtime up", func(t *testing.T) {
		l := run(t, false)
		if n := l.between(down, up).filter(func(e *history.Event) bool {
			return e.Container == "app" && (e.Kind == history.ContainerStartRequested || e.Kind == history.ContainerStartFailed)
		}); len(n) != 0 {
			t.Errorf("app restart attempts during the outage: %+v; the kubelet cannot have heard of its exit", n)
		}
		if s := l.kind(history.ContainerStartRequested).c("app").between(up, 20*sec).first(); s == nil || s.T != up {
			t.Errorf("app restart %+v: want at the runtime's return (13 s)", s)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
	t.Run("job completes at runtime up, sidecar not restarted", func(t *testing.T) {
		l := run(t, true)
		term := l.kind(history.PodTerminating).first()
		if term == nil || term.T != up || term.Reason != "PodCompleted" {
			t.Errorf("pod.terminating %+v: want PodCompleted at the runtime's return (13 s)", term)
		}
		if s := l.kind(history.ContainerStartRequested).c("logs").between(down, 200*sec); len(s) != 0 {
			t.Errorf("logs started again %+v: its exit and app's were heard in one relist, after which the pod is complete", s)
		}
		if t.Failed() {
			t.Log("\n" + dump(l))
		}
	})
}

// A single-container kill whose StopContainer the runtime refused ended
// its SyncPod there and then, and with it the restart planned in the same
// sync. When the relist after the runtime's return shows the container
// exited on its own during the outage, that sync's restart is long gone:
// the restart policy decides (exit 0 under OnFailure: none). The refusal's
// report, delayed for the pod worker's back-off, comes with the relist.
func TestFaultRefusedKillForgottenAtRelist(t *testing.T) {
	cfg := faultConfig(1,
		faults.Spec{Kind: faults.ContainerUnknown, When: once(10 * sec), Where: faults.Target{Container: "app"}},
		faults.Spec{Kind: faults.RuntimeRestart, When: once(10*sec + 200*int64(time.Millisecond)), Downtime: 2300 * time.Millisecond})
	w := &cfg.Workloads[0]
	w.Spec.RestartPolicy = api.RestartOnFailure
	w.Spec.Main[0].PreStop = false
	w.Lifetime = behavior.NeverDist()
	s, res := runMem(t, cfg, 1)
	if res.PodsRemoved != res.PodsCreated {
		t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
	}
	l := evs(s.evs)
	if x := l.kind(history.ContainerExited).c("app").first(); x == nil || x.Code != 0 || x.T >= 12500*int64(time.Millisecond) {
		t.Fatalf("app exit %+v: want 0 on SIGTERM during the outage", x)
	}
	if r := l.kind(history.ContainerStartRequested).c("app"); len(r) != 1 {
		t.Errorf("app started %d times, want once: exit 0 under OnFailure is not restarted", len(r))
	}
	if term := l.kind(history.PodTerminating).first(); term == nil || term.Reason != "PodCompleted" || term.T != 12500*int64(time.Millisecond) {
		t.Errorf("pod.terminating %+v: want PodCompleted at the runtime's return (12.5 s)", term)
	}
	if t.Failed() {
		t.Log("\n" + dump(l))
	}
}

// A pod kill that began while the runtime was down, on containers whose
// exits the outage hid: their stops are refused, and the sandbox stop
// that ends the kill must be refused too, though nothing runs any more
// (the runtime refuses the call, not the containers). It is the kill run
// again after the runtime's return that stops the sandbox.
func TestFaultSandboxStopRefusedWithHiddenExits(t *testing.T) {
	const down, up = 59500 * int64(time.Millisecond), 64500 * int64(time.Millisecond)
	cfg := faultConfig(1, faults.Spec{Kind: faults.RuntimeRestart, When: once(down), Downtime: time.Duration(up - down)})
	w := &cfg.Workloads[0]
	w.Spec.TerminationGracePeriod = 2 * time.Second
	for c, run := range map[int]time.Duration{1: 59250, 2: 58200, 3: 58100} { // proxy, logs, app: exit at about 59.7 s
		w.Behavior[c].Behavior.RunTime = behavior.Fixed(run * time.Millisecond)
	}
	s, res := runMem(t, cfg, 1)
	if res.PodsRemoved != res.PodsCreated {
		t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
	}
	l := evs(s.evs)
	for _, c := range []string{"proxy", "logs", "app"} {
		if x := l.kind(history.ContainerExited).c(c).between(down, up).first(); x == nil {
			t.Fatalf("%s: no exit during the outage", c)
		}
	}
	if sb := l.kind(history.SandboxStopped).first(); sb == nil || sb.T < up {
		t.Errorf("sandbox.stopped %+v: want after the runtime's return (64.5 s)", sb)
	}
	if t.Failed() {
		t.Log("\n" + dump(l))
	}
}

// A kubelet that starts while its runtime is down syncs no pod until the
// runtime is back: its first runtime status check fails and syncLoop skips
// pod synchronization until one succeeds (runtimeState.runtimeErrors).
// Its first sync comes at the runtime's return, not a refused call and the
// pod worker's back-off after it.
func TestFaultKubeletStartsWhileRuntimeDown(t *testing.T) {
	cfg := faultConfig(1,
		faults.Spec{Kind: faults.KubeletCrash, When: once(10 * sec), Downtime: 3 * time.Second},
		faults.Spec{Kind: faults.RuntimeRestart, When: once(11 * sec), Downtime: 4 * time.Second})
	cfg.Workloads[0].Behavior[3].Behavior.RunTime = behavior.Fixed(10400 * time.Millisecond) // app exits at about 12 s
	s, res := runMem(t, cfg, 1)
	if res.PodsRemoved != res.PodsCreated {
		t.Errorf("%d of %d pods removed", res.PodsRemoved, res.PodsCreated)
	}
	l := evs(s.evs)
	if x := l.kind(history.ContainerExited).c("app").first(); x == nil || x.T < 11*sec || x.T >= 13*sec {
		t.Fatalf("app exit %+v: want while the kubelet and the runtime are down", x)
	}
	if f := l.kind(history.ContainerStartFailed).first(); f != nil {
		t.Errorf("start refused %+v: the idle kubelet made no call", f)
	}
	if s := l.kind(history.ContainerStartRequested).c("app").between(11*sec, 60*sec).first(); s == nil || s.T != 15*sec {
		t.Errorf("app restart %+v: want at the runtime's return (15 s)", s)
	}
	if t.Failed() {
		t.Log("\n" + dump(l))
	}
}

package cri

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

// The wiring tests assert the order of events, never their timing: the
// durations are short so that the tests are quick, and every wait has a
// generous bound that only a hang reaches.

func wired(t *testing.T, behaviours map[string]string, wirings map[string]*behavior.Wiring) map[string]string {
	t.Helper()
	a := ann(t, behaviours)
	for name, w := range wirings {
		k, v, err := WiringAnnotation(name, w)
		if err != nil {
			t.Fatal(err)
		}
		a[k] = v
	}
	return a
}

// index returns the position of the first event of kind k for container
// c, waiting for it.
func (e *env) index(t *testing.T, k history.Kind, c string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i, ev := range e.sink.events() {
			if ev.Kind == k && ev.Container == c {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s for %s", k, c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWrapperExecsAfterTheSidecarServes(t *testing.T) {
	e := start(t)
	a := wired(t, map[string]string{
		"app":   `{"startLatency":"0s","readyAfter":"0s"}`,
		"proxy": `{"startLatency":"0s","readyAfter":"150ms"}`,
	}, map[string]*behavior.Wiring{
		"app":   {Wait: &behavior.Wait{For: []string{"proxy"}, Period: 20 * time.Millisecond}},
		"proxy": {Serving: true},
	})
	sb, cfg := e.sandbox(t, a)
	app := e.create(t, sb, cfg, "app")
	proxy := e.create(t, sb, cfg, "proxy")
	e.startC(t, app)
	// The wrapper runs; the application does not answer its probe yet.
	if r, _ := e.exec(t, app, ProbeCommand(ProbeReadiness)); r.ExitCode == 0 {
		t.Fatal("the app's readiness passed before the wrapper exec'd it")
	}
	e.startC(t, proxy)
	serving, started := e.index(t, history.ContainerServing, "proxy"), e.index(t, history.ContainerAppStarted, "app")
	if serving > started {
		t.Fatalf("app-started (#%d) before the proxy served (#%d)", started, serving)
	}
	if r, _ := e.exec(t, app, ProbeCommand(ProbeReadiness)); r.ExitCode != 0 {
		t.Fatal("the app's readiness fails after its exec")
	}
}

func TestWrapperTimeout(t *testing.T) {
	for _, tc := range []struct {
		name           string
		startOnTimeout bool
	}{{"starts anyway", true}, {"fails", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			a := wired(t, map[string]string{"app": `{"startLatency":"0s"}`}, map[string]*behavior.Wiring{
				"app": {Wait: &behavior.Wait{For: []string{"proxy"}, Period: 10 * time.Millisecond, Timeout: 50 * time.Millisecond, StartOnTimeout: tc.startOnTimeout}},
			})
			sb, cfg := e.sandbox(t, a)
			app := e.create(t, sb, cfg, "app")
			e.startC(t, app) // the proxy never starts
			if tc.startOnTimeout {
				e.index(t, history.ContainerAppStarted, "app")
				if ev := e.sink.find(history.ContainerAppStarted, "app"); ev.Value {
					t.Fatal("app-started after a timeout must say the wait failed (v=false)")
				}
				return
			}
			st := waitState(t, e, app, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
			if st.ExitCode != 1 || e.sink.find(history.ContainerAppStarted, "app") != nil {
				t.Fatalf("exit %d, app-started %v: want exit 1 and no exec", st.ExitCode, e.sink.find(history.ContainerAppStarted, "app"))
			}
		})
	}
}

func TestQuitSignal(t *testing.T) {
	beh := map[string]string{
		"main":    `{"startLatency":"0s","runTime":"100ms"}`,
		"shipper": `{"startLatency":"0s","termHandling":"never"}`,
	}
	wiring := map[string]*behavior.Wiring{
		"main":    {Signal: &behavior.Signal{To: []string{"shipper"}}},
		"shipper": {Quit: &behavior.Quit{}},
	}
	t.Run("the main's own exit tells the shipper to quit", func(t *testing.T) {
		e := start(t)
		sb, cfg := e.sandbox(t, wired(t, beh, wiring))
		m, s := e.create(t, sb, cfg, "main"), e.create(t, sb, cfg, "shipper")
		e.startC(t, s)
		e.startC(t, m)
		st := waitState(t, e, s, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
		if st.ExitCode != 0 || e.index(t, history.ContainerExited, "main") > e.index(t, history.ContainerExited, "shipper") {
			t.Fatalf("shipper exit %d: want 0, after the main's", st.ExitCode)
		}
	})
	t.Run("an OOM-killed main never signals", func(t *testing.T) {
		e := start(t)
		b := map[string]string{"main": `{"startLatency":"0s"}`, "shipper": beh["shipper"]}
		sb, cfg := e.sandbox(t, wired(t, b, wiring))
		m, s := e.create(t, sb, cfg, "main"), e.create(t, sb, cfg, "shipper")
		e.startC(t, s)
		e.startC(t, m)
		if _, err := e.srv.OOMKill("default/web-0", "main"); err != nil {
			t.Fatal(err)
		}
		// A quit would have been delivered at once; the shipper is then
		// stopped by SIGTERM, which it ignores: SIGKILL after the grace.
		if _, err := e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: s, Timeout: 1}); err != nil {
			t.Fatal(err)
		}
		if st := e.status(t, s); st.ExitCode != 137 {
			t.Fatalf("shipper exit %d: want 137 (SIGKILL), no quit", st.ExitCode)
		}
	})
}

func TestHoldAndDrainHooks(t *testing.T) {
	e := start(t)
	a := wired(t, map[string]string{
		"proxy": `{"startLatency":"0s","readyAfter":"100ms"}`,
		"app":   `{"startLatency":"0s","runTime":"200ms"}`,
	}, map[string]*behavior.Wiring{
		"proxy": {Serving: true, Hold: &behavior.Poll{Period: 20 * time.Millisecond}, Drain: &behavior.Drain{Of: []string{"app"}, Period: 20 * time.Millisecond}},
	})
	sb, cfg := e.sandbox(t, a)
	proxy, app := e.create(t, sb, cfg, "proxy"), e.create(t, sb, cfg, "app")
	e.startC(t, proxy)
	if r, _ := e.exec(t, proxy, HookCommand(HookPostStart)); r.ExitCode != 0 {
		t.Fatalf("hold postStart failed: %s", r.Stderr)
	}
	if e.index(t, history.ContainerServing, "proxy") > e.index(t, history.ContainerPostStartDone, "proxy") {
		t.Fatal("the hold postStart returned before the proxy served")
	}
	e.startC(t, app)
	if r, _ := e.exec(t, proxy, HookCommand(HookPreStop)); r.ExitCode != 0 {
		t.Fatalf("drain preStop failed: %s", r.Stderr)
	}
	if e.index(t, history.ContainerExited, "app") > e.index(t, history.ContainerPreStopEnd, "proxy") {
		t.Fatal("the drain preStop returned while the app still ran")
	}
}

package cri

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

// The wiring of the workarounds (docs/workarounds.md), on the fake clock:
// every assertion is an exact instant or an order.

const ms = time.Millisecond

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

// stepBy advances the clock n steps of d, waiting after each for every
// callback it fired.
func (e *env) stepBy(n int, d time.Duration) {
	for range n {
		e.step(d)
	}
}

// when returns the time of the first event of kind k for container c, or
// -1.
func (e *env) when(k history.Kind, c string) int64 {
	if ev := e.sink.find(k, c); ev != nil {
		return ev.T
	}
	return -1
}

func TestWrapperExecsAfterTheSidecarServes(t *testing.T) {
	e := start(t)
	a := wired(t, map[string]string{
		"app":   `{"startLatency":"0s","readyAfter":"0s"}`,
		"proxy": `{"startLatency":"0s","readyAfter":"250ms"}`,
	}, map[string]*behavior.Wiring{
		"app":   {Wait: &behavior.Wait{For: []string{"proxy"}, Period: 100 * ms}},
		"proxy": {Serving: true},
	})
	sb, cfg := e.sandbox(t, a)
	app, proxy := e.create(t, sb, cfg, "app"), e.create(t, sb, cfg, "proxy")
	e.startC(t, app)
	e.startC(t, proxy)
	// The wrapper runs; the application does not answer its probe yet.
	if r := e.exec(t, app, ProbeCommand(ProbeReadiness)); r.ExitCode == 0 {
		t.Fatal("the app's readiness passed before the wrapper exec'd it")
	}
	e.stepBy(6, 50*ms) // polls at 0, 100, 200 fail; the proxy serves at 250; the poll at 300 execs
	if got, want := e.when(history.ContainerServing, "proxy"), e.at(250*ms); got != want {
		t.Errorf("container.serving at %d, want %d", got, want)
	}
	ev := e.sink.find(history.ContainerAppStarted, "app")
	if ev == nil || ev.T != e.at(300*ms) || !ev.Value {
		t.Fatalf("app-started %+v, want at %d with v=true", ev, e.at(300*ms))
	}
	if r := e.exec(t, app, ProbeCommand(ProbeReadiness)); r.ExitCode != 0 {
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
				"app": {Wait: &behavior.Wait{For: []string{"proxy"}, Period: 100 * ms, Timeout: 250 * ms, StartOnTimeout: tc.startOnTimeout}},
			})
			sb, cfg := e.sandbox(t, a)
			app := e.create(t, sb, cfg, "app")
			e.startC(t, app) // the proxy never starts
			e.stepBy(3, 100*ms)
			ev := e.sink.find(history.ContainerAppStarted, "app")
			if tc.startOnTimeout {
				if ev == nil || ev.T != e.at(300*ms) || ev.Value {
					t.Fatalf("app-started %+v: want at 300 ms (the first poll past the timeout) with v=false", ev)
				}
				return
			}
			st := e.status(t, app)
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 1 || ev != nil || e.when(history.ContainerExited, "app") != e.at(300*ms) {
				t.Fatalf("state %v exit %d app-started %+v: want exit 1 at 300 ms, no exec", st.State, st.ExitCode, ev)
			}
		})
	}
}

func TestQuitSignal(t *testing.T) {
	wiring := func(file bool) map[string]*behavior.Wiring {
		q := &behavior.Quit{File: file}
		if file {
			q.Period = 100 * ms
		}
		return map[string]*behavior.Wiring{
			"main":    {Signal: &behavior.Signal{To: []string{"shipper"}, File: file}},
			"shipper": {Quit: q},
		}
	}
	shipper := `{"startLatency":"0s","termHandling":"never"}`
	t.Run("the main's own exit tells the shipper to quit", func(t *testing.T) {
		e := start(t)
		sb, cfg := e.sandbox(t, wired(t, map[string]string{"main": `{"startLatency":"0s","runTime":"150ms"}`, "shipper": shipper}, wiring(false)))
		m, s := e.create(t, sb, cfg, "main"), e.create(t, sb, cfg, "shipper")
		e.startC(t, s)
		e.startC(t, m)
		e.step(150 * ms)
		st := e.status(t, s)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || e.when(history.ContainerExited, "shipper") != e.at(150*ms) {
			t.Fatalf("shipper %v exit %d: want exit 0 at 150 ms, with the main", st.State, st.ExitCode)
		}
	})
	t.Run("via a file, at the shipper's next poll", func(t *testing.T) {
		e := start(t)
		sb, cfg := e.sandbox(t, wired(t, map[string]string{"main": `{"startLatency":"0s","runTime":"150ms"}`, "shipper": shipper}, wiring(true)))
		m, s := e.create(t, sb, cfg, "main"), e.create(t, sb, cfg, "shipper")
		e.startC(t, s)
		e.startC(t, m)
		e.stepBy(4, 50*ms)
		if got := e.when(history.ContainerExited, "shipper"); got != e.at(200*ms) {
			t.Fatalf("shipper exited at %d, want %d (its poll after the main's exit at 150 ms)", got, e.at(200*ms))
		}
	})
	t.Run("an OOM-killed main never signals", func(t *testing.T) {
		e := start(t)
		sb, cfg := e.sandbox(t, wired(t, map[string]string{"main": `{"startLatency":"0s"}`, "shipper": shipper}, wiring(false)))
		m, s := e.create(t, sb, cfg, "main"), e.create(t, sb, cfg, "shipper")
		e.startC(t, s)
		e.startC(t, m)
		if _, err := e.srv.OOMKill("default/web-0", "main"); err != nil {
			t.Fatal(err)
		}
		e.step(time.Second)
		if st := e.status(t, s); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("shipper %v after the main's OOM kill: want it still running (no quit)", st.State)
		}
	})
}

func TestHoldPostStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ready   string
		timeout time.Duration
		ok      bool
		at      time.Duration
	}{
		{"returns once the proxy serves", "250ms", 0, true, 300 * ms},
		{"fails when it never does", "never", 150 * ms, false, 150 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			a := wired(t, map[string]string{"proxy": `{"startLatency":"0s","readyAfter":"` + tc.ready + `"}`},
				map[string]*behavior.Wiring{"proxy": {Serving: true, Hold: &behavior.Poll{Period: 100 * ms, Timeout: tc.timeout}}})
			sb, cfg := e.sandbox(t, a)
			proxy := e.create(t, sb, cfg, "proxy")
			e.startC(t, proxy)
			w0 := e.clk.Waiters()
			hook := e.execAsync(proxy, HookCommand(HookPostStart))
			e.waitWaiters(t, w0+1) // the hook's first poll failed and armed the next
			for now := time.Duration(0); now < tc.at && !hook.returned(); now += 50 * ms {
				w := e.clk.Waiters()
				e.step(50 * ms)
				if (now+50*ms)%(100*ms) == 0 && now+50*ms < tc.at {
					e.waitWaiters(t, w) // the hook re-armed its poll
				}
			}
			r := hook.wait(t)
			done := e.sink.find(history.ContainerPostStartDone, "proxy")
			if (r.ExitCode == 0) != tc.ok || done == nil || done.T != e.at(tc.at) || done.Value != tc.ok {
				t.Fatalf("hook exit %d, poststart-done %+v: want ok=%v at %v", r.ExitCode, done, tc.ok, tc.at)
			}
			if tc.ok && e.when(history.ContainerServing, "proxy") > done.T {
				t.Fatal("the hold returned before the proxy served")
			}
		})
	}
}

func TestDrainPreStop(t *testing.T) {
	e := start(t)
	a := wired(t, map[string]string{
		"proxy": `{"startLatency":"0s"}`,
		"app":   `{"startLatency":"0s","runTime":"150ms"}`,
	}, map[string]*behavior.Wiring{"proxy": {Drain: &behavior.Drain{Of: []string{"app"}, Period: 100 * ms}}})
	sb, cfg := e.sandbox(t, a)
	proxy, app := e.create(t, sb, cfg, "proxy"), e.create(t, sb, cfg, "app")
	e.startC(t, proxy)
	e.startC(t, app)
	w0 := e.clk.Waiters()
	hook := e.execAsync(proxy, HookCommand(HookPreStop))
	e.waitWaiters(t, w0+1) // the app runs: the drain polls again at 100 ms
	e.step(100 * ms)
	e.waitWaiters(t, w0+1) // still running: again at 200 ms (the app's exit at 150 was one of w0)
	e.step(50 * ms)        // the app exits at 150 ms
	e.step(50 * ms)        // the poll at 200 ms finds no connection left
	if r := hook.wait(t); r.ExitCode != 0 {
		t.Fatalf("drain preStop failed: %s", r.Stderr)
	}
	if got := e.when(history.ContainerPreStopEnd, "proxy"); got != e.at(200*ms) || e.when(history.ContainerExited, "app") != e.at(150*ms) {
		t.Fatalf("prestop-end at %d, app exit at %d: want 200 ms and 150 ms", got, e.when(history.ContainerExited, "app"))
	}
}

// A hold hook whose caller went away (the kubelet died during the
// postStart) is no hook failure: no kubelet got a result or kills the
// container for it, and the restarted kubelet does not run it again. The
// server writes no container.poststart-done, as the sim's kubelet crash
// drops the hook; a poststart-done=false would read as
// FailedPostStartHook on a container the kubelet goes on to publish
// Started (INV-H1, seen on local-debate-2019 under a kubelet crash).
func TestCancelledPostStartIsNoFailure(t *testing.T) {
	e := start(t)
	a := wired(t, map[string]string{"proxy": `{"startLatency":"0s","readyAfter":"never"}`},
		map[string]*behavior.Wiring{"proxy": {Serving: true, Hold: &behavior.Poll{Period: 100 * ms}}})
	sb, cfg := e.sandbox(t, a)
	proxy := e.create(t, sb, cfg, "proxy")
	e.startC(t, proxy)
	ctx, cancel := context.WithCancel(context.Background())
	w0 := e.clk.Waiters()
	hook := async(func() (*runtimeapi.ExecSyncResponse, error) {
		return e.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: proxy, Cmd: HookCommand(HookPostStart)})
	})
	e.waitWaiters(t, w0+1) // the hold polls
	cancel()
	select {
	case <-hook.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled hook did not return")
	}
	if hook.err == nil {
		t.Error("a cancelled hook returned a result")
	}
	// The client returns at once; the server's handler ends when the
	// hold stops its poll timer, and would write its event just after.
	for deadline := time.Now().Add(30 * time.Second); e.clk.Waiters() > w0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hold kept polling after its caller went away")
		}
	}
	for end := time.Now().Add(300 * ms); time.Now().Before(end); time.Sleep(5 * ms) {
		if ev := e.sink.find(history.ContainerPostStartDone, "proxy"); ev != nil {
			t.Fatalf("poststart-done %+v for a hook whose caller went away", ev)
		}
	}
}

package api

import (
	"strings"
	"testing"
	"time"
)

func TestParseWorkaroundPolicies(t *testing.T) {
	for _, tc := range []struct {
		in, canonical string
		check         func(t *testing.T, g Gates)
	}{
		{in: "workaround:wait-wrapper", canonical: "workaround:wait-wrapper", check: func(t *testing.T, g Gates) {
			w := g.Workarounds.Has(WaitWrapper)
			if w == nil || w.Poll != time.Second || w.Timeout != 0 || w.OnTimeout != TimeoutStart {
				t.Errorf("defaults: %+v", w)
			}
		}},
		{in: "workaround:wait-wrapper(poll=500ms,timeout=15s,onTimeout=fail)", canonical: "workaround:wait-wrapper(poll=500ms,timeout=15s,onTimeout=fail)"},
		{in: "workaround:wait-wrapper(timeout=15s, poll=500ms)", canonical: "workaround:wait-wrapper(poll=500ms,timeout=15s)"},
		// A parameter at its default is dropped from the canonical form.
		{in: "workaround:prestop-sleep(sleep=5s)", canonical: "workaround:prestop-sleep"},
		{in: "workaround:prestop-sleep(sleep=30s)", canonical: "workaround:prestop-sleep(sleep=30s)"},
		{in: "workaround:hold-until-proxy-starts", canonical: "workaround:hold-until-proxy-starts", check: func(t *testing.T, g Gates) {
			w := g.Workarounds.Has(HoldUntilProxyStarts)
			if w.Poll != 500*time.Millisecond || w.Timeout != time.Minute || w.OnTimeout != TimeoutFail || w.Sleep != 5*time.Second || w.ZeroConnections {
				t.Errorf("pilot-agent wait defaults: %+v", w)
			}
		}},
		{in: "workaround:hold-until-proxy-starts(drain=zero-connections)", canonical: "workaround:hold-until-proxy-starts(drain=zero-connections)"},
		{in: "workaround:hold-until-proxy-starts(drain=10s)", canonical: "workaround:hold-until-proxy-starts(drain=10s)"},
		{in: "workaround:job-quit-signal(via=file,wait=off)", canonical: "workaround:job-quit-signal(via=file,wait=off)"},
		{in: "workaround:wait-wrapper+prestop-sleep(sleep=10s)", canonical: "workaround:wait-wrapper+prestop-sleep(sleep=10s)", check: func(t *testing.T, g Gates) {
			if len(g.Workarounds) != 2 || g.Workarounds.Has(PreStopSleep).Sleep != 10*time.Second {
				t.Errorf("composition: %+v", g.Workarounds)
			}
		}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g, err := ParseGates(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !g.IsWorkaround() || g.Policy != PolicyKEP753 || g.Bug != BugNone {
				t.Fatalf("gates %+v: want a workaround under kep753", g)
			}
			if got := g.String(); got != tc.canonical {
				t.Fatalf("String() = %q, want %q", got, tc.canonical)
			}
			back, err := ParseGates(g.String())
			if err != nil || back.String() != tc.canonical {
				t.Fatalf("round trip: %v %q", err, back.String())
			}
			if tc.check != nil {
				tc.check(t, g)
			}
		})
	}
}

func TestParseWorkaroundErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"workaround:", "needs a workaround name"},
		{"workaround:wait-wraper", `unknown workaround "wait-wraper" (allowed: wait-wrapper, hold-until-proxy-starts, job-quit-signal, prestop-sleep)`},
		{"workaround:wait-wrapper(poll=1s", "must end with ')'"},
		{"workaround:wait-wrapper(pol=1s)", `unknown parameter "pol" (allowed: poll, timeout, onTimeout)`},
		{"workaround:wait-wrapper(poll=fast)", `poll="fast": not a duration`},
		{"workaround:wait-wrapper(poll=0s)", "poll=0s: must be > 0"},
		{"workaround:wait-wrapper(poll)", "is not KEY=VALUE"},
		{"workaround:wait-wrapper(poll=1s,poll=2s)", "given twice"},
		{"workaround:prestop-sleep(poll=1s)", `unknown parameter "poll" (allowed: sleep)`},
		{"workaround:job-quit-signal(via=grpc)", `via="grpc": allowed: http, file`},
		{"workaround:hold-until-proxy-starts(drain=forever)", "zero-connections"},
		{"workaround:wait-wrapper+wait-wrapper", "named twice"},
		{"workaround:wait-wrapper+bug:reinit-mains-first", "feature gates and bug replicas do not apply"},
		{"kep735", "workaround:NAME"},
	} {
		if _, err := ParseGates(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseGates(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// Every workaround explains itself and names its parameters with their
// defaults (sidebench validate, docs/workarounds.md).
func TestWorkaroundHelp(t *testing.T) {
	h := WorkaroundHelp()
	for k := WaitWrapper; k <= PreStopSleep; k++ {
		if !strings.Contains(h, WorkaroundPrefix+k.String()+": ") {
			t.Errorf("help lacks %s:\n%s", k, h)
		}
		for _, p := range WorkaroundParams(k) {
			if !strings.Contains(h, "  "+p+" (default ") {
				t.Errorf("help lacks parameter %s of %s", p, k)
			}
		}
	}
}

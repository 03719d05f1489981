package check

import (
	"slices"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// The invariants are the final design's. Histories of the other designs
// must show exactly what those designs give up (ARCHITECTURE.md §Policies).

var policySpec = func() *history.PodSpec {
	return specOf("Always", 30, "init:setup", "sidecar:proxy+startup", "sidecar:log+startup", "main:app")
}

// design2019: sidecars start together after the inits, mains after the
// sidecars are ready; at termination the mains go first, then every
// sidecar is signalled at once.
func design2019() *hb {
	h := newPod("p2019", policySpec())
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).done("setup")
	h.at(100).req("proxy").req("log").at(200).running("proxy").running("log")
	h.at(300).probe("proxy", "startup", "success").started("proxy", true).probe("log", "startup", "success").started("log", true)
	h.at(400).ready("proxy", true).ready("log", true).at(401).up("app")
	h.at(5000).deleted(30).terminating("PodDeleted", 30).stopExit("app", 30, "PodDeleted")
	h.at(5100).stop("proxy", 30, "PodDeleted").stop("log", 30, "PodDeleted").at(5200).exited("proxy", 0).exited("log", 0)
	return h.at(5300).phase("Succeeded").removed()
}

// designNone: no sidecar support, everything after the inits starts and
// stops together.
func designNone() *hb {
	h := newPod("pnone", policySpec())
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).done("setup")
	h.at(100).req("proxy").req("log").req("app").at(200).running("proxy").running("log").running("app").started("app", true)
	h.at(300).probe("proxy", "startup", "success").started("proxy", true).probe("log", "startup", "success").started("log", true)
	h.at(5000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").stop("proxy", 30, "PodDeleted").stop("log", 30, "PodDeleted")
	h.at(5200).exited("proxy", 0).exited("log", 0).exited("app", 0)
	return h.at(5300).phase("Succeeded").removed()
}

func TestPolicies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		h      *hb
		want   []string // invariants with violations; every other must have none
	}{
		{"kep753 final design breaks nothing", "kep753", realistic(), nil},
		{"kep753-2019 breaks sidecar sequencing and reverse order only", "kep753-2019", design2019(), []string{"INV-S1", "INV-T4"}},
		{"none breaks start and termination order", "none", designNone(), []string{"INV-S1", "INV-S5", "INV-T3", "INV-T4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := &history.Meta{Scenario: "policies", Policy: tc.policy, ToleranceNanos: 1e6}
			ev := append([]history.Event{{Kind: history.RunMeta, Meta: meta}}, tc.h.events()...)
			rep := CheckEvents(ev)
			want := map[string]bool{}
			for _, id := range tc.want {
				want[id] = true
			}
			for _, row := range rep.Rows {
				if (row.Violations > 0) != want[row.ID] {
					t.Errorf("%s: %d violations, want violations: %v", row.ID, row.Violations, want[row.ID])
				}
			}
			if t.Failed() {
				t.Logf("findings:%s", dump(rep.Findings))
			}
		})
	}
}

// Swapping two events of a correct history must be caught: here every
// adjacent pair of ordering-relevant events in the termination is swapped
// (the later one takes the earlier one's time).
func TestSwappedEventsAreCaught(t *testing.T) {
	for _, tc := range []struct {
		name       string
		early, pre history.Kind
		ec, pc     string
		want       string
	}{
		{"INV-T3/log SIGTERM swapped with app exit", history.ContainerStopRequested, history.ContainerExited, "log", "app", "INV-T3"},
		{"INV-T4/proxy SIGTERM swapped with log exit", history.ContainerStopRequested, history.ContainerExited, "proxy", "log", "INV-T4"},
		{"INV-S5/app start swapped with log started", history.ContainerStartRequested, history.ContainerStarted, "app", "log", "INV-S5"},
		{"INV-S1/log start swapped with proxy started", history.ContainerStartRequested, history.ContainerStarted, "log", "proxy", "INV-S1"},
		{"INV-T6/app SIGTERM swapped with its preStop end", history.ContainerStopRequested, history.ContainerPreStopEnd, "app", "app", "INV-T6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := realistic().events()
			if fs := checkOne(t, testMeta, ev, tc.want); len(fs) != 0 {
				t.Fatalf("correct history already flagged:%s", dump(fs))
			}
			i, j := find(ev, tc.early, tc.ec, 0), find(ev, tc.pre, tc.pc, 0)
			ev[i], ev[j] = ev[j], ev[i]
			ev[i].T, ev[j].T = ev[j].T, ev[i].T // keep time order
			fs := checkOne(t, testMeta, ev, tc.want)
			if len(fs) == 0 || fs[0].Class != Violation {
				t.Fatalf("swap not caught as a violation:%s", dump(fs))
			}
			if len(fs[0].Excerpt) < 2 {
				t.Fatalf("excerpt should hold both events: %v", fs[0].Excerpt)
			}
		})
	}
}

// No checker may panic on a mangled history: every prefix (a crashed run)
// and every adjacent swap of the realistic history is checked without an
// Unknown verdict.
func TestMangledHistoriesDoNotPanic(t *testing.T) {
	base := realistic().events()
	var variants [][]history.Event
	for n := 1; n <= len(base); n++ {
		variants = append(variants, base[:n])
	}
	for i := 0; i+1 < len(base); i++ {
		ev := slices.Clone(base)
		ev[i], ev[i+1] = ev[i+1], ev[i]
		variants = append(variants, ev)
	}
	for k, ev := range variants {
		w := &worker{checkers: registry, cap: 100}
		var res podResult
		w.check(testMeta, "default/web-0", ev, &res)
		if res.unknown != 0 {
			t.Fatalf("variant %d: unknown verdicts: %+v", k, res.errs)
		}
	}
}

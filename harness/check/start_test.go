package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// steady builds a pod with the given spec whose init containers and main
// containers are up by 1.5 s (every sidecar started behind its startup
// probe if it has one). Inits are named as in the spec.
func steady(name string, spec *history.PodSpec) *hb {
	h := newPod(name, spec)
	h.at(0).created().at(5).scheduled().at(7).phase("Pending").at(10).sandbox()
	t := int64(20)
	for _, c := range spec.Init {
		h.at(t)
		if c.Role == "sidecar" {
			if c.Startup {
				h.startupUp(c.Name)
			} else {
				h.up(c.Name)
			}
		} else {
			h.done(c.Name)
		}
		t += 100
	}
	h.at(t).cond("Initialized", true)
	for _, c := range spec.Main {
		h.up(c.Name)
	}
	return h.phase("Running")
}

// job is a Never pod with two sidecars and one main container.
func jobPod() *hb {
	return steady("job-0", specOf("Never", 30, "sidecar:proxy", "sidecar:log", "main:app"))
}

// jobDone completes job correctly: app exits, the pod is killed in order.
func jobDone(code int32) *hb {
	h := jobPod()
	h.at(5000).exited("app", code).terminating("PodCompleted", 30)
	h.stopExit("log", 30, "PodCompleted").stopExit("proxy", 30, "PodCompleted")
	ph := "Succeeded"
	if code != 0 {
		ph = "Failed"
	}
	return h.at(5100).phase(ph)
}

type invCase struct {
	name string
	ev   func() []history.Event
	id   string
	// want is the class of the finding expected for id; pass cases set
	// clean and expect no finding for id at all.
	want  Class
	clean bool
	meta  *history.Meta
}

func mutate(h *hb, f func(ev []history.Event) []history.Event) func() []history.Event {
	return func() []history.Event { return f(h.events()) }
}

func evs(h *hb) func() []history.Event { return h.events }

func runCases(t *testing.T, cases []invCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := tc.meta
			if meta == nil {
				meta = testMeta
			}
			fs := checkOne(t, meta, tc.ev(), tc.id)
			if tc.clean {
				if len(fs) != 0 {
					t.Fatalf("want no %s finding, got:%s", tc.id, dump(fs))
				}
				return
			}
			for i := range fs {
				if fs[i].Class == tc.want {
					return
				}
			}
			t.Fatalf("want a %s %s, got:%s", tc.id, tc.want, dump(fs))
		})
	}
}

func r() []history.Event { return realistic().events() }

func at(ev []history.Event, k history.Kind, c string) int { return find(ev, k, c, 0) }

func startCases() []invCase {
	return []invCase{
		{name: "INV-S1/holds in a correct history", id: "INV-S1", ev: r, clean: true},
		{name: "INV-S1/second sidecar started before the first was started", id: "INV-S1", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStartRequested, "log"), at(ev, history.ContainerStarted, "proxy"))
			}},
		{name: "INV-S1/sidecar started before the regular init exited", id: "INV-S1", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStartRequested, "proxy"), at(ev, history.ContainerExited, "setup"))
			}},
		{name: "INV-S2/holds in a correct history", id: "INV-S2", ev: r, clean: true},
		{name: "INV-S2/Started published before the startup probe succeeded", id: "INV-S2", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStarted, "proxy"), find(ev, history.ProbeResult, "proxy", 1))
			}},
		{name: "INV-S2/sidecar killed for its startup probe runs preStop and restarts", id: "INV-S2", clean: true,
			ev: evs(newPod("sp", specOf("Always", 30, "sidecar:proxy+startup+prestop", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(1000).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe").
				at(1100).prestopEnd("proxy").stop("proxy", 30, "StartupProbe").exited("proxy", 137).backoff("proxy", 10).
				at(11100).startupUp("proxy").at(11200).up("app"))},
		{name: "INV-S2/sidecar killed for its startup probe is never restarted", id: "INV-S2", want: Bound,
			ev: evs(newPod("sp", specOf("Always", 30, "sidecar:proxy+startup", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(1000).probe("proxy", "startup", "failure").stop("proxy", 30, "StartupProbe").
				exited("proxy", 137).backoff("proxy", 10).at(60000).probe("proxy", "startup", "failure"))},
		{name: "INV-S2/sidecar killed for its startup probe without its preStop", id: "INV-S2", want: Violation,
			ev: evs(newPod("sp", specOf("Always", 30, "sidecar:proxy+startup+prestop", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(1000).probe("proxy", "startup", "failure").stop("proxy", 30, "StartupProbe").
				exited("proxy", 137).at(1100).startupUp("proxy"))},
		{name: "INV-S3/postStart done before Started and before the next container", id: "INV-S3", clean: true,
			ev: evs(newPod("ps", specOf("Always", 30, "sidecar:proxy+poststart", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(50).postStart("proxy").started("proxy", true).at(60).up("app"))},
		{name: "INV-S3/Started published before the sidecar postStart returned", id: "INV-S3", want: Violation,
			ev: evs(newPod("ps", specOf("Always", 30, "sidecar:proxy+poststart", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").started("proxy", true).at(50).postStart("proxy").at(60).up("app"))},
		{name: "INV-S3/second main started while the first main's postStart ran", id: "INV-S3", want: Violation,
			ev: evs(newPod("ps", specOf("Always", 30, "main:a+poststart", "main:b")).at(0).created().at(10).sandbox().
				at(20).req("a").running("a").at(21).req("b").running("b").at(50).postStart("a").started("a", true))},
		{name: "INV-S4/holds in a correct history", id: "INV-S4", ev: r, clean: true},
		{name: "INV-S4/main waited for sidecar readiness (2019 gate)", id: "INV-S4", want: Violation,
			ev: evs(newPod("rd", specOf("Always", 30, "sidecar:proxy+ready", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").started("proxy", true).at(5000).ready("proxy", true).at(5001).up("app"))},
		// The kubelet tried to start the main right after the gate and the
		// runtime refused it: the wait is the outage's, whatever Ready=true
		// came just before the start that took (hook-kill-refused with
		// harsh and critical).
		{name: "INV-S4/a start the runtime refused after the gate, then ready", id: "INV-S4", want: Degradation,
			ev: evs(readyAfterRefusedStart(true))},
		{name: "INV-S4/no start tried after the gate, then ready", id: "INV-S4", want: Violation,
			ev: evs(readyAfterRefusedStart(false))},
		{name: "INV-S4/the kubelet down during the wait, ready at its relist", id: "INV-S4", want: Degradation,
			ev: evs(newPod("rd", specOf("Always", 30, "sidecar:proxy+ready", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").started("proxy", true).ready("proxy", true).at(100).nodeEv(history.KubeletDown).
				at(1100).nodeEv(history.KubeletUp).ready("proxy", true).at(1101).up("app"))},
		{name: "INV-S4/the kubelet down across the previous main's start", id: "INV-S4", want: Degradation,
			ev: evs(newPod("rd", specOf("Always", 30, "sidecar:proxy+ready", "main:worker", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").started("proxy", true).ready("proxy", true).req("worker").at(100).nodeEv(history.KubeletDown).
				at(200).running("worker").at(2100).nodeEv(history.KubeletUp).ready("proxy", true).at(2101).up("app"))},
		{name: "INV-S4/a start right after the Ready of a sidecar without readiness probe is late, not gated", id: "INV-S4", want: Bound,
			ev: evs(newPod("rd", specOf("Always", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").started("proxy", true).at(5000).ready("proxy", true).at(5001).up("app"))},
		{name: "INV-S4/main started long after the sidecar was started", id: "INV-S4", want: Bound,
			ev: evs(newPod("rd", specOf("Always", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(5000).up("app"))},
		{name: "INV-S5/holds in a correct history", id: "INV-S5", ev: r, clean: true},
		{name: "INV-S5/main running before a sidecar was started", id: "INV-S5", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStartRequested, "app"), at(ev, history.ContainerStarted, "log"))
			}},
		{name: "INV-S5/same swap while the kubelet was down is a degradation", id: "INV-S5", want: Degradation,
			ev: func() []history.Event {
				ev := r()
				ev = moveBefore(ev, at(ev, history.ContainerStartRequested, "app"), at(ev, history.ContainerStarted, "log"))
				i := at(ev, history.ContainerStartRequested, "app")
				down := history.Event{T: ev[i].T, Kind: history.KubeletDown, Node: "node-1"}
				return append(ev[:i:i], append([]history.Event{down}, ev[i:]...)...)
			}},
		{name: "INV-S5/same swap right after the kubelet came back is judged", id: "INV-S5", want: Violation,
			ev: func() []history.Event {
				ev := r()
				ev = moveBefore(ev, at(ev, history.ContainerStartRequested, "app"), at(ev, history.ContainerStarted, "log"))
				i := at(ev, history.ContainerStartRequested, "app")
				ev = insertBefore(ev, i, history.Event{Kind: history.KubeletDown}, history.Event{Kind: history.KubeletUp})
				ev[i].T -= 500 * ms1 // down 0.5 s, up right before the start
				return ev
			}},
		{name: "INV-S6/init retried after failure under OnFailure before later containers", id: "INV-S6", clean: true,
			ev: evs(newPod("f", specOf("OnFailure", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(30).exited("setup", 1).backoff("setup", 10).at(10030).done("setup").at(10040).up("proxy").up("app"))},
		{name: "INV-S6/sidecar started after the init failed", id: "INV-S6", want: Violation,
			ev: evs(newPod("f", specOf("OnFailure", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(30).exited("setup", 1).at(40).up("proxy"))},
		{name: "INV-S6/init retried under Never", id: "INV-S6", want: Violation,
			ev: evs(newPod("f", specOf("Never", 30, "init:setup", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(30).exited("setup", 1).at(10030).req("setup"))},
		{name: "INV-S6/pod Running after the init failed under Never", id: "INV-S6", want: Violation,
			ev: evs(newPod("f", specOf("Never", 30, "sidecar:proxy", "init:setup", "main:app")).at(0).created().at(10).sandbox().
				at(15).up("proxy").at(20).req("setup").running("setup").at(30).exited("setup", 1).at(40).phase("Running"))},
	}
}

func TestStartInvariants(t *testing.T) { runCases(t, startCases()) }

// Every checker must have at least one case where it holds and one where
// it is broken: no checker ships untested.
func TestEveryCheckerHasPassingAndFailingCases(t *testing.T) {
	pass, fail := map[string]bool{}, map[string]bool{}
	for _, group := range [][]invCase{startCases(), restartCases(), phaseCases(), terminationCases(), faultCases(), ruleCases(), semanticsCases(), vocabCases(), userCases()} {
		for _, c := range group {
			if c.clean {
				pass[c.id] = true
			} else {
				fail[c.id] = true
			}
		}
	}
	for _, ch := range Checkers() {
		if !pass[ch.ID()] || !fail[ch.ID()] {
			t.Errorf("%s: passing case %v, failing case %v", ch.ID(), pass[ch.ID()], fail[ch.ID()])
		}
	}
}

// TestInitFailureUnseenAfterGC: a regular init of a Never pod exits 42
// while the kubelet is down, and container GC removes its record before
// the kubelet is back: nothing the new kubelet sees says it failed (the
// API never showed it running), so it starts the init sequence again. The
// retry is the GC's, a degradation, not a broken guarantee (the sweep's
// init-rules shape without the gate).
func TestInitFailureUnseenAfterGC(t *testing.T) {
	hist := func(gc bool) func() []history.Event {
		h := newPod("ig", specOf("Never", 30, "init:setup", "init:migrate", "main:app")).at(0).created().at(10).sandbox().
			at(20).req("setup").running("setup").at(300).exited("setup", 0).req("migrate").
			at(350).nodeEv(history.KubeletDown).at(400).running("migrate").at(900).exited("migrate", 42)
		if gc {
			h.at(1000).add(history.Event{Kind: history.FaultBegin, Fault: "container-gc", FaultID: 7}).removedC("setup").removedC("migrate").
				add(history.Event{Kind: history.FaultEnd, Fault: "container-gc", FaultID: 7})
		}
		return evs(h.at(2000).nodeEv(history.KubeletUp).req("migrate").running("migrate").at(5000).exited("migrate", 0))
	}
	runCases(t, []invCase{
		{name: "INV-S6/init failure removed before the kubelet saw it, retried", id: "INV-S6", want: Degradation, ev: hist(true)},
		{name: "INV-S6/init failure kept, retried under Never", id: "INV-S6", want: Violation, ev: hist(false)},
	})
}

// readyAfterRefusedStart: a sidecar with a readiness probe is Started; the
// runtime is down until 4.99 s, and if tried the kubelet's start of the
// main right after the gate fails; Ready=true at 5 s and the main starts
// 1 ms later.
func readyAfterRefusedStart(tried bool) *hb {
	b := newPod("rd", specOf("Always", 30, "sidecar:proxy+ready", "main:app")).at(0).created().at(10).sandbox().
		at(20).req("proxy").running("proxy").started("proxy", true).nodeEv(history.RuntimeDown)
	if tried {
		b.at(25).add(history.Event{Kind: history.ContainerStartFailed, Container: "app", Msg: "runtime down"})
	}
	return b.at(4990).nodeEv(history.RuntimeUp).at(5000).ready("proxy", true).at(5001).up("app")
}

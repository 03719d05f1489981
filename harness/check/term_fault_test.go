package check

import (
	"slices"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// insertBefore inserts events (stamped with ev[i]'s time) before ev[i].
func insertBefore(ev []history.Event, i int, add ...history.Event) []history.Event {
	for k := range add {
		add[k].T = ev[i].T
		add[k].Node = "node-1"
	}
	return slices.Insert(ev, i, add...)
}

// stuck: a pod deleted with grace g seconds at 20 s whose main ignores
// SIGTERM; at the budget's expiry the sidecars are signalled together.
func stuck(g int64) *hb {
	h := steady("st", specOf("Always", g, "sidecar:proxy", "sidecar:log", "main:app"))
	h.at(20000).deleted(g).terminating("PodDeleted", g).stop("app", g, "PodDeleted")
	h.at(20000+g*1000).stop("log", 2, "PodDeleted").stop("proxy", 2, "PodDeleted").at(20100+g*1000).exited("log", 0).exited("proxy", 0)
	return h.at(22000+g*1000).killed("app").exited("app", 137)
}

// refusedKill: a pod deleted at 20 s whose main's StopContainer reaches a
// runtime that is down from 20.5 s to 22 s (down=false: the runtime stays
// up, the stop is taken). retry=false: the sidecar waits out the grace and
// the sandbox stop SIGKILLs app at 50.1 s (killPodWithSyncResult stops the
// sandbox whatever the containers' results). retry=true: the kill runs
// again at 25 s (the pod worker's backoff after the refused sandbox stop)
// with its whole grace and app exits exitMs later.
func refusedKill(down, retry bool, exitMs int64) []history.Event {
	return refusedOrCutKill(down, false, retry, exitMs)
}

// refusedOrCutKill is refusedKill, or with cut the runtime goes down at
// 21 s instead, after it took app's stop: the call in flight fails and
// its SIGKILL timer is lost.
func refusedOrCutKill(down, cut, retry bool, exitMs int64) []history.Event {
	h := steady("rk", specOf("Always", 30, "sidecar:proxy", "main:app"))
	h.at(20000).deleted(30).terminating("PodDeleted", 30).at(20500)
	if down {
		h.nodeEv(history.RuntimeDown)
	}
	h.stop("app", 30, "PodDeleted")
	if cut {
		h.at(21000).nodeEv(history.RuntimeDown)
	}
	if down || cut {
		h.at(22000).nodeEv(history.RuntimeUp)
	}
	if retry {
		return h.at(25000).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").
			at(25000+exitMs).exited("app", 0).stop("proxy", 30, "PodDeleted").at(25500+exitMs).exited("proxy", 0).events()
	}
	return h.at(50000).stop("proxy", 2, "PodDeleted").at(50100).exited("proxy", 0).
		killed("app").exited("app", 137).k(history.SandboxStopped, "").events()
}

// hiddenExit: app exited at 15 s (in back-off), the runtime goes down at
// 19 s and log exits at 19.5 s; the pod is deleted at 20.5 s and proxy is
// signalled when the grace runs out. back=false: the runtime is back only
// at 23 s, so the kill began with log's exit unheard (the PLEG's relist
// fails while the runtime is down): to the kubelet log still ran, its stop
// was refused, and proxy waited for its turn. back=true: the runtime was
// back at 20 s, the kubelet knew, and proxy had nothing to wait for.
func hiddenExit(back bool) []history.Event {
	h := steady("he", specOf("Always", 30, "sidecar:proxy", "sidecar:log", "main:app"))
	h.at(15000).exited("app", 1).at(19000).nodeEv(history.RuntimeDown).at(19500).exited("log", 2)
	if back {
		h.at(20000).nodeEv(history.RuntimeUp)
	}
	h.at(20500).deleted(30).terminating("PodDeleted", 30).stop("log", 30, "PodDeleted")
	if !back {
		h.at(23000).nodeEv(history.RuntimeUp)
	}
	return h.at(50500).stop("proxy", 2, "PodDeleted").at(50600).exited("proxy", 0).k(history.SandboxStopped, "").events()
}

func terminationCases() []invCase {
	swapT3 := func() []history.Event {
		ev := r()
		return moveBefore(ev, at(ev, history.ContainerStopRequested, "log"), at(ev, history.ContainerExited, "app"))
	}
	return []invCase{
		{name: "INV-T1/holds in a correct history", id: "INV-T1", ev: r, clean: true},
		{name: "INV-T1/sidecar preStop begins 3s after the kill", id: "INV-T1", want: Bound,
			ev: evs(steady("t", realisticSpec()).at(20000).terminating("PodDeleted", 30).prestop("app", "PodDeleted").prestop("log", "PodDeleted").
				at(23000).prestop("proxy", "PodDeleted"))},
		{name: "INV-T2/holds in a correct history", id: "INV-T2", ev: r, clean: true},
		{name: "INV-T2/main signalled 5s after its preStop ended", id: "INV-T2", want: Bound,
			ev: evs(steady("t", realisticSpec()).at(20000).terminating("PodDeleted", 30).prestop("app", "PodDeleted").at(21000).prestopEnd("app").
				at(26000).stopExit("app", 24, "PodDeleted"))},
		{name: "INV-T3/holds in a correct history", id: "INV-T3", ev: r, clean: true},
		{name: "INV-T3/sidecar signalled before the main exited", id: "INV-T3", want: Violation, ev: swapT3},
		{name: "INV-T3/same during a node power-off is a degradation", id: "INV-T3", want: Degradation,
			ev: func() []history.Event {
				ev := swapT3()
				i := at(ev, history.ContainerStopRequested, "log")
				return insertBefore(ev, i, history.Event{Kind: history.FaultBegin, Fault: "node-poweroff", FaultID: 7},
					history.Event{Kind: history.NodeDown}, history.Event{Kind: history.FaultEffect, Fault: "node-poweroff", FaultID: 7})
			}},
		{name: "INV-T3/sidecars signalled at grace expiry while the main still runs", id: "INV-T3", want: Degradation, ev: evs(stuck(5))},
		{name: "INV-T4/holds in a correct history", id: "INV-T4", ev: r, clean: true},
		{name: "INV-T4/first sidecar signalled before the second exited", id: "INV-T4", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStopRequested, "proxy"), at(ev, history.ContainerExited, "log"))
			}},
		{name: "INV-T4/sidecars signalled together at grace expiry", id: "INV-T4", want: Degradation, ev: evs(stuck(5))},
		{name: "INV-T5/holds in a correct history", id: "INV-T5", ev: r, clean: true},
		{name: "INV-T5/killed within grace + 2s", id: "INV-T5", ev: evs(stuck(5)), clean: true},
		{name: "INV-T5/main still running 20s into a 5s grace", id: "INV-T5", want: Bound,
			ev: evs(steady("t", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5).stop("app", 5, "PodDeleted").at(40000).exited("app", 0))},
		{name: "INV-T5/stop grace below the 2s minimum", id: "INV-T5", want: Violation,
			ev: evs(steady("t", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5).stop("app", 1, "PodDeleted").exited("app", 0))},
		{name: "INV-T6/holds in a correct history", id: "INV-T6", ev: r, clean: true},
		{name: "INV-T6/main signalled before its own preStop finished", id: "INV-T6", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return moveBefore(ev, at(ev, history.ContainerStopRequested, "app"), at(ev, history.ContainerPreStopEnd, "app"))
			}},
		{name: "INV-T7/holds at grace expiry", id: "INV-T7", ev: evs(stuck(5)), clean: true},
		{name: "INV-T7/SIGKILLed container reports exit 0", id: "INV-T7", want: Violation,
			ev: evs(steady("t", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5).stop("app", 5, "PodDeleted").at(25000).killed("app").exited("app", 0))},
		{name: "INV-T7/SIGKILL before the stop grace ran out", id: "INV-T7", want: Violation,
			ev: evs(steady("t", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5).stop("app", 5, "PodDeleted").at(20500).killed("app").exited("app", 137))},
		{name: "INV-T7/sandbox stop SIGKILLs a main whose StopContainer was refused", id: "INV-T7", clean: true,
			ev: func() []history.Event { return refusedKill(true, false, 0) }},
		{name: "INV-T7/sandbox stop SIGKILLs a main whose stop a runtime restart cut", id: "INV-T7", clean: true,
			ev: func() []history.Event { return refusedOrCutKill(false, true, false, 0) }},
		{name: "INV-T7/same SIGKILL after a stop the runtime took", id: "INV-T7", want: Violation,
			ev: func() []history.Event { return refusedKill(false, false, 0) }},
		{name: "INV-T7/the kill run again gives its whole grace", id: "INV-T7", clean: true,
			ev: func() []history.Event { return refusedKill(true, true, 27000) }},
		{name: "INV-T7/outliving the grace of the kill run again", id: "INV-T7", want: Bound,
			ev: func() []history.Event { return refusedKill(true, true, 31200) }},
		{name: "INV-T8/holds in a correct history", id: "INV-T8", ev: r, clean: true},
		{name: "INV-T8/deleted pod removed without a terminal phase", id: "INV-T8", want: Violation,
			ev: func() []history.Event {
				ev := r()
				return drop(ev, find(ev, history.PodPhase, "", 2))
			}},
		{name: "INV-T8/Succeeded although the SIGKILLed main exited 137", id: "INV-T8", want: Violation,
			ev: evs(stuck(5).at(30000).phase("Succeeded").removed())},
		{name: "INV-T9/sidecar deleted during init is signalled promptly", id: "INV-T9", clean: true,
			ev: evs(deletedDuringInit(1100))},
		{name: "INV-T9/sidecar waited out the grace for containers that never ran", id: "INV-T9", want: Violation,
			ev: evs(deletedDuringInit(31000))},
		{name: "INV-T9/a sidecar whose exit the runtime's outage hid holds the next one's turn", id: "INV-T9", clean: true,
			ev: func() []history.Event { return hiddenExit(false) }},
		{name: "INV-T9/the same exit heard before the kill", id: "INV-T9", want: Violation,
			ev: func() []history.Event { return hiddenExit(true) }},
		{name: "INV-T10/holds in a correct history", id: "INV-T10", ev: r, clean: true},
		{name: "INV-T10/KEP-4438 gate lets sidecars restart during termination", id: "INV-T10", clean: true,
			meta: &history.Meta{Policy: "kep753+SidecarsRestartableDuringPodTermination"},
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).terminating("PodDeleted", 30).
				at(5100).exited("proxy", 1).at(5200).up("proxy"))},
		{name: "INV-T10/init container started during termination", id: "INV-T10", want: Violation,
			ev: evs(deletedDuringInit(1100).at(1200).req("log"))},
	}
}

func TestTerminationInvariants(t *testing.T) { runCases(t, terminationCases()) }

// deletedDuringInit deletes a pod whose first sidecar runs but is not
// started yet (startup probe pending); its SIGTERM comes at stopMs.
func deletedDuringInit(stopMs int64) *hb {
	h := newPod("di", realisticSpec())
	h.at(0).created().at(10).sandbox().at(20).done("setup").at(100).req("proxy").running("proxy")
	h.at(1000).deleted(30).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted").at(1050).prestopEnd("proxy")
	return h.at(stopMs).stopExit("proxy", 29, "PodDeleted")
}

func faultCases() []invCase {
	kubeletRestart := func(h *hb, downMs, upMs int64) *hb {
		return h.at(downMs).fault(history.FaultBegin, "kubelet-crash", 3).nodeEv(history.KubeletDown).
			at(upMs).nodeEv(history.KubeletUp).fault(history.FaultEnd, "kubelet-crash", 3)
	}
	rerunAll := func(h *hb, ms int64) *hb {
		return h.at(ms).done("setup").startupUp("proxy").startupUp("log").up("app")
	}
	return []invCase{
		{name: "INV-F1/kubelet restart re-runs nothing", id: "INV-F1", ev: r, clean: true},
		{name: "INV-F1/completed init re-run after a kubelet restart", id: "INV-F1", want: Violation,
			ev: evs(kubeletRestart(steady("f", realisticSpec()), 10000, 12000).at(12500).done("setup"))},
		{name: "INV-F1/sidecar Started flaps across a kubelet restart", id: "INV-F1", want: Violation,
			ev: evs(kubeletRestart(steady("f", realisticSpec()), 10000, 12000).at(12100).started("proxy", false).at(12200).started("proxy", true))},
		{name: "INV-F2/kubelet restart during init re-runs nothing", id: "INV-F2", clean: true,
			ev: evs(kubeletRestart(newPod("f", realisticSpec()).at(0).created().at(10).sandbox().at(20).done("setup").at(100).req("proxy").running("proxy"), 200, 300).
				at(400).probe("proxy", "startup", "success").started("proxy", true))},
		{name: "INV-F2/completed init re-run after a kubelet restart during init", id: "INV-F2", want: Violation,
			ev: evs(kubeletRestart(newPod("f", realisticSpec()).at(0).created().at(10).sandbox().at(20).done("setup").at(100).req("proxy").running("proxy"), 200, 300).
				at(400).done("setup"))},
		{name: "INV-F3/new sandbox re-runs every init in order", id: "INV-F3", clean: true,
			ev: evs(rerunAll(steady("f", realisticSpec()).at(5000).sandboxLost().at(6000).sandbox(), 6100))},
		{name: "INV-F3/main started in the new sandbox before the sidecars", id: "INV-F3", want: Violation,
			ev: evs(steady("f", realisticSpec()).at(5000).sandboxLost().at(6000).sandbox().at(6100).up("app").done("setup"))},
		{name: "INV-F3/new sandbox under Never after the main was created", id: "INV-F3", want: Violation,
			ev: evs(steady("f", specOf("Never", 30, "sidecar:proxy", "main:app")).at(5000).sandboxLost().at(6000).sandbox())},
		{name: "INV-F5/power-off then a fresh sandbox", id: "INV-F5", clean: true,
			ev: evs(rerunAll(steady("f", realisticSpec()).at(5000).nodeEv(history.NodeDown).at(9000).nodeEv(history.NodeUp).sandboxLost().at(9500).sandbox(), 9600))},
		{name: "INV-F5/container started while the node was down", id: "INV-F5", want: Violation,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.NodeDown).at(6000).req("app"))},
		{name: "INV-F5/container restarted in the sandbox that died with the node", id: "INV-F5", want: Violation,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.NodeDown).at(9000).nodeEv(history.NodeUp).at(9100).up("app"))},
		{name: "INV-F6/kubelet restart during termination, kill retried in time", id: "INV-F6", clean: true,
			ev: evs(kubeletRestart(steady("f", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5), 20100, 21000).
				at(21000).terminating("PodDeleted", 5).stopExit("app", 5, "PodDeleted"))},
		{name: "INV-F6/container still running long after the kubelet came back", id: "INV-F6", want: Bound,
			ev: evs(kubeletRestart(steady("f", specOf("Always", 5, "main:app")).at(20000).terminating("PodDeleted", 5), 20100, 21000).
				at(60000).probe("app", "readiness", "success"))},
		{name: "INV-F7/runtime restart keeps containers running", id: "INV-F7", clean: true,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.RuntimeDown).at(6000).nodeEv(history.RuntimeUp).at(9000).probe("app", "readiness", "success"))},
		{name: "INV-F7/runtime restart kills a running container", id: "INV-F7", want: Violation,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.RuntimeDown).exited("log", 255).at(6000).nodeEv(history.RuntimeUp))},
		// An injected kill at the instant the runtime comes back explains
		// the exit (the sweep's prestop-runtime with harsh, under KEP-4438).
		{name: "INV-F7/injected kill as the runtime comes back", id: "INV-F7", clean: true,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.RuntimeDown).at(6000).nodeEv(history.RuntimeUp).
				add(history.Event{Kind: history.FaultBegin, Fault: "container-kill", FaultID: 9, Container: "log"}).exited("log", 137))},
		{name: "INV-F7/exit as the runtime comes back", id: "INV-F7", want: Violation,
			ev: evs(steady("f", realisticSpec()).at(5000).nodeEv(history.RuntimeDown).at(6000).nodeEv(history.RuntimeUp).exited("log", 137))},
		{name: "INV-F7/container whose start failed is never started again", id: "INV-F7", want: Bound,
			ev: evs(steady("f", realisticSpec()).at(5000).exited("app", 1).at(6000).req("app").k(history.ContainerStartFailed, "app").at(400000).probe("proxy", "readiness", "success"))},
		{name: "INV-F8/sidecar in Unknown state recreated", id: "INV-F8", clean: true,
			ev: evs(steady("f", realisticSpec()).at(5000).stop("proxy", 2, "UnknownState").exited("proxy", 137).at(5100).startupUp("proxy"))},
		{name: "INV-F8/sidecar in Unknown state never recreated", id: "INV-F8", want: Bound,
			ev: evs(steady("f", realisticSpec()).at(5000).stop("proxy", 2, "UnknownState").exited("proxy", 137).at(400000).probe("app", "readiness", "success"))},
		{name: "INV-F8/init in Unknown state recreated under Never", id: "INV-F8", want: Violation,
			ev: evs(newPod("f", specOf("Never", 30, "init:setup", "main:app")).at(0).created().at(10).sandbox().at(20).req("setup").running("setup").
				at(100).stop("setup", 2, "UnknownState").exited("setup", 137).at(200).req("setup"))},
		{name: "INV-U1/image change restarts only that sidecar", id: "INV-U1", clean: true,
			ev: evs(steady("u", realisticSpec()).at(5000).image("proxy").stop("proxy", 30, "SpecChanged").exited("proxy", 0).at(5100).startupUp("proxy"))},
		{name: "INV-U1/two image changes applied at the kubelet's next sync (real kubelet: a PLEG relist later)", id: "INV-U1", clean: true,
			ev: evs(steady("u", realisticSpec()).at(5000).image("proxy").at(6000).image("app").at(6500).stop("proxy", 30, "SpecChanged").exited("proxy", 0).
				at(6600).stop("app", 30, "SpecChanged").exited("app", 0).at(6700).startupUp("proxy").up("app"))},
		{name: "INV-U1/image change of a sidecar restarts the main too", id: "INV-U1", want: Violation,
			ev: evs(steady("u", realisticSpec()).at(5000).image("proxy").stop("proxy", 30, "SpecChanged").stop("app", 30, "SpecChanged").exited("proxy", 0).at(5100).startupUp("proxy"))},
		{name: "INV-U1/image change of a completed init re-runs it", id: "INV-U1", want: Violation,
			ev: evs(steady("u", realisticSpec()).at(5000).image("setup").at(5100).done("setup"))},
		{name: "INV-U1/image change takes effect during termination", id: "INV-U1", want: Violation,
			ev: evs(steady("u", realisticSpec()).at(20000).terminating("PodDeleted", 30).at(20100).image("proxy").stop("proxy", 30, "SpecChanged"))},
		// Issue 16 B: computeInitContainerActions leaves a running regular
		// init container alone (no containerChanged check): it is neither
		// restarted nor re-run after it completes.
		{name: "INV-U1/image change of a running regular init waits for it to finish", id: "INV-U1", clean: true,
			ev: evs(newPod("u", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(100).image("setup").at(30000).exited("setup", 0).at(30100).up("proxy").up("app").
				at(60000).probe("app", "readiness", "success"))},
		{name: "INV-U1/image change of a running regular init stops it", id: "INV-U1", want: Violation,
			ev: evs(newPod("u", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(100).image("setup").stop("setup", 30, "SpecChanged").exited("setup", 0).at(200).done("setup"))},
		{name: "INV-U1/image change of a running regular init re-runs it after it completed", id: "INV-U1", want: Violation,
			ev: evs(newPod("u", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(100).image("setup").at(3000).exited("setup", 0).at(3100).done("setup"))},
		{name: "INV-U1/image change of a running sidecar never applied", id: "INV-U1", want: Bound,
			ev: evs(steady("u", realisticSpec()).at(5000).image("proxy").at(60000).probe("app", "readiness", "success"))},
	}
}

func TestFaultInvariants(t *testing.T) { runCases(t, faultCases()) }

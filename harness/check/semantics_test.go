package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// DSL helpers for the events of issue 16's checkers.

func (h *hb) reqOOM(c string, oom int32) *hb {
	return h.add(history.Event{Kind: history.ContainerStartRequested, Container: c, OOMScoreAdj: oom})
}
func (h *hb) scheduledWith(cpu, mem int64) *hb {
	return h.add(history.Event{Kind: history.PodScheduled, CPU: cpu, Mem: mem})
}
func (h *hb) shutdown(totalSec, critSec int64) *hb {
	return h.add(history.Event{Kind: history.NodeShutdown, Grace: totalSec * 1e9, CritGrace: critSec * 1e9})
}
func (h *hb) resize(c string, cpu, mem int64) *hb {
	return h.add(history.Event{Kind: history.ContainerResize, Container: c, CPU: cpu, Mem: mem})
}
func (h *hb) resized(c string, cpu, mem int64) *hb {
	return h.add(history.Event{Kind: history.ContainerResized, Container: c, CPU: cpu, Mem: mem})
}
func (h *hb) phaseReason(ph, reason string) *hb {
	return h.add(history.Event{Kind: history.PodPhase, Phase: ph, Reason: reason})
}

const mi = int64(1 << 20)

// onFailure gives s restartPolicy OnFailure.
func onFailure(s *history.PodSpec) *history.PodSpec {
	s.RestartPolicy = "OnFailure"
	return s
}

// resSpec is a Burstable pod: init 100m/64Mi, sidecar proxy 50m/32Mi
// (memory restarts it on resize), main app 200m/256Mi (cpu restarts it).
func resSpec() *history.PodSpec {
	s := specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")
	s.Init[0].CPURequest, s.Init[0].MemRequest = 100, 64*mi
	s.Init[1].CPURequest, s.Init[1].MemRequest, s.Init[1].MemResizeRestart = 50, 32*mi, true
	s.Main[0].CPURequest, s.Main[0].MemRequest, s.Main[0].CPUResizeRestart = 200, 256*mi, true
	s.QOSClass = "Burstable"
	return s
}

// probeSpec gives container c of s probe timings.
func withProbe(s *history.PodSpec, c, kind string, ps history.ProbeSpec) *history.PodSpec {
	for _, l := range [2][]history.ContainerSpec{s.Init, s.Main} {
		for i := range l {
			if l[i].Name != c {
				continue
			}
			switch kind {
			case "liveness":
				l[i].LivenessSpec = &ps
			case "readiness":
				l[i].ReadinessSpec = &ps
			case "startup":
				l[i].StartupSpec = &ps
			}
		}
	}
	return s
}

// liveApp is an Always pod whose main app has a liveness probe (and
// preStop) with a 5 s probe-level grace.
func liveApp() *history.PodSpec {
	return withProbe(specOf("Always", 30, "sidecar:proxy", "main:app+live"), "app", "liveness", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1, Grace: 5e9})
}

func semanticsCases() []invCase {
	return []invCase{
		// Serial starts (issue 16 A1): the second main waits for the first
		// to run, not for the sidecar's readiness.
		{name: "INV-S4/the second main starts after the first one ran", id: "INV-S4", clean: true,
			ev: evs(newPod("s", specOf("Always", 30, "sidecar:proxy", "main:app", "main:worker")).at(0).created().at(10).sandbox().
				at(20).up("proxy").req("app").at(1500).running("app").started("app", true).req("worker").at(1600).running("worker"))},
		{name: "INV-S4/the second main waits long after the first one ran", id: "INV-S4", want: Bound,
			ev: evs(newPod("s", specOf("Always", 30, "sidecar:proxy", "main:app", "main:worker")).at(0).created().at(10).sandbox().
				at(20).up("proxy").req("app").at(1500).running("app").started("app", true).at(4000).req("worker").running("worker"))},
		{name: "INV-S4/a main that ran in a lost sandbox restarts through backoff", id: "INV-S4", clean: true,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).sandboxLost().exited("app", 137).exited("proxy", 137).
				at(6000).sandbox().up("proxy").at(15000).up("app"))},
		// INV-P4
		{name: "INV-P4/holds in a correct history", id: "INV-P4", ev: r, clean: true},
		{name: "INV-P4/a regular init container with a probe", id: "INV-P4", want: Violation,
			ev: evs(steady("v", specOf("Always", 30, "init:setup+startup", "main:app")))},
		{name: "INV-P4/a probe result for a regular init container", id: "INV-P4", want: Violation,
			ev: evs(steady("v", specOf("Always", 30, "init:setup", "main:app")).at(5000).probe("setup", "readiness", "success"))},
		// INV-P5
		{name: "INV-P5/holds in a correct history", id: "INV-P5", ev: r, clean: true},
		{name: "INV-P5/readiness probed before the startup probe succeeded", id: "INV-P5", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy+startup+ready", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(500).probe("proxy", "readiness", "success").at(900).probe("proxy", "startup", "success").started("proxy", true))},
		// Found in the soak profile: a start request that failed (runtime
		// down) is an attempt that never ran; the probes of the attempt
		// that ran after it are not its own.
		{name: "INV-P5/start failed while the runtime was down, the retried start probed after startup success", id: "INV-P5", clean: true,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy+startup+live", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").add(history.Event{Kind: history.ContainerStartFailed, Container: "proxy", Msg: "runtime restarted"}).
				at(1020).add(history.Event{Kind: history.ContainerStartFailed, Container: "proxy", Msg: "runtime down"}).
				at(6000).req("proxy").at(7000).running("proxy").at(8000).probe("proxy", "startup", "success").started("proxy", true).
				probe("proxy", "liveness", "success"))},
		{name: "INV-P5/the retried start's liveness probe runs before its startup success", id: "INV-P5", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy+startup+live", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").add(history.Event{Kind: history.ContainerStartFailed, Container: "proxy", Msg: "runtime restarted"}).
				at(6000).req("proxy").at(7000).running("proxy").at(7500).probe("proxy", "liveness", "success").
				at(8000).probe("proxy", "startup", "success").started("proxy", true))},
		{name: "INV-P5/liveness kill with the probe-level grace", id: "INV-P5", clean: true,
			ev: evs(steady("p", liveApp()).at(5000).probe("app", "liveness", "failure").stop("app", 5, "LivenessProbe").exited("app", 0).at(5100).up("app"))},
		{name: "INV-P5/liveness kill with the pod's grace instead of the probe's", id: "INV-P5", want: Violation,
			ev: evs(steady("p", liveApp()).at(5000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 0).at(5100).up("app"))},
		{name: "INV-P5/preStop time comes out of the probe-level grace", id: "INV-P5", clean: true,
			ev: evs(steady("p", withProbe(specOf("Always", 30, "main:app+live+prestop"), "app", "liveness", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1, Grace: 10e9})).
				at(5000).probe("app", "liveness", "failure").prestop("app", "LivenessProbe").at(8000).prestopEnd("app").stop("app", 7, "LivenessProbe").exited("app", 0))},
		// INV-P6
		{name: "INV-P6/holds in a correct history", id: "INV-P6", ev: r, clean: true},
		{name: "INV-P6/a sidecar's liveness keeps running, inert, during termination", id: "INV-P6", clean: true,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy+live", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(9000).probe("proxy", "liveness", "failure").at(9100).exited("app", 0).stopExit("proxy", 25, "PodDeleted"))},
		{name: "INV-P6/a main's liveness probe runs during termination", id: "INV-P6", want: Violation,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy", "main:app+live")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(9000).probe("app", "liveness", "failure"))},
		{name: "INV-P6/a probe kill during termination", id: "INV-P6", want: Violation,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy+live", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(5500).probe("proxy", "liveness", "failure").stop("proxy", 30, "LivenessProbe"))},
		{name: "INV-P6/readiness failure during termination applied", id: "INV-P6", clean: true,
			ev: evs(steady("t", withProbe(specOf("Always", 30, "main:app+ready"), "app", "readiness", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1})).
				at(5000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").at(5500).probe("app", "readiness", "failure").ready("app", false).cond("Ready", false).at(9000).exited("app", 0))},
		{name: "INV-P6/readiness failure during termination not applied", id: "INV-P6", want: Bound,
			ev: evs(steady("t", withProbe(specOf("Always", 30, "main:app+ready"), "app", "readiness", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1})).
				at(5000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").at(5500).probe("app", "readiness", "failure").at(9000).exited("app", 0))},
		// INV-H1
		{name: "INV-H1/holds in a correct history", id: "INV-H1", ev: r, clean: true},
		{name: "INV-H1/a main Started before its postStart returned", id: "INV-H1", want: Violation,
			ev: evs(newPod("h", specOf("Always", 30, "main:app+poststart")).at(0).created().at(10).sandbox().at(20).req("app").running("app").started("app", true).at(900).postStart("app"))},
		{name: "INV-H1/liveness kill runs preStop", id: "INV-H1", clean: true,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+live+prestop", "main:app")).at(5000).probe("proxy", "liveness", "failure").prestop("proxy", "LivenessProbe").
				at(5200).prestopEnd("proxy").stop("proxy", 30, "LivenessProbe").exited("proxy", 0).at(5300).up("proxy"))},
		{name: "INV-H1/liveness kill without preStop", id: "INV-H1", want: Violation,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+live+prestop", "main:app")).at(5000).probe("proxy", "liveness", "failure").stop("proxy", 30, "LivenessProbe").exited("proxy", 0).at(5300).up("proxy"))},
		// killContainer runs preStop only "if gracePeriod > 0".
		{name: "INV-H1/liveness kill with grace 0 runs no preStop", id: "INV-H1", clean: true,
			ev: evs(steady("h", specOf("Always", 0, "sidecar:proxy+live+prestop", "main:app")).at(5000).probe("proxy", "liveness", "failure").stop("proxy", 2, "LivenessProbe").exited("proxy", 0).at(5300).up("proxy"))},
		{name: "INV-H1/pod kill stops a container without its preStop", id: "INV-H1", want: Violation,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy", "main:app+prestop")).at(5000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").exited("app", 0))},
		{name: "INV-H1/preStop after an OOM kill", id: "INV-H1", want: Violation,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+prestop", "main:app")).at(5000).add(history.Event{Kind: history.ContainerExited, Container: "proxy", Code: 137, Reason: "OOMKilled"}).
				at(5100).prestop("proxy", "OOMKilled"))},
		// INV-H2
		{name: "INV-H2/holds in a correct history", id: "INV-H2", ev: r, clean: true},
		{name: "INV-H2/sidecar preStop before the pod kill (2019)", id: "INV-H2", want: Violation,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+prestop", "main:app")).at(5000).deleted(30).prestop("proxy", "PodDeleted").at(5500).terminating("PodDeleted", 30))},
		{name: "INV-H2/sidecar preStop twice in one kill", id: "INV-H2", want: Violation,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+prestop", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted").
				at(5100).prestopEnd("proxy").at(6000).prestop("proxy", "PodDeleted"))},
		{name: "INV-H2/preStop again after a kubelet restart during the kill", id: "INV-H2", clean: true,
			ev: evs(steady("h", specOf("Always", 30, "sidecar:proxy+prestop", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted").
				at(5100).nodeEv(history.KubeletDown).at(7000).nodeEv(history.KubeletUp).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted"))},
		// INV-Q1
		{name: "INV-Q1/effective requests of a sidecar pod", id: "INV-Q1", clean: true,
			ev: evs(newPod("q", resSpec()).at(0).created().scheduledWith(250, 288*mi))},
		{name: "INV-Q1/effective requests summed like ordinary containers", id: "INV-Q1", want: Violation,
			ev: evs(newPod("q", resSpec()).at(0).created().scheduledWith(350, 352*mi))},
		// INV-Q2
		{name: "INV-Q2/QoS class over all containers", id: "INV-Q2", ev: evs(newPod("q", resSpec()).at(0).created()), clean: true},
		{name: "INV-Q2/Guaranteed while the sidecar sets no limits", id: "INV-Q2", want: Violation,
			ev: func() []history.Event {
				s := specOf("Always", 30, "sidecar:proxy", "main:app")
				s.Main[0].CPURequest, s.Main[0].CPULimit, s.Main[0].MemRequest, s.Main[0].MemLimit = 100, 100, mi, mi
				s.QOSClass = "Guaranteed"
				return newPod("q", s).at(0).created().events()
			}},
		// INV-Q3
		{name: "INV-Q3/sidecar no higher than the main", id: "INV-Q3", clean: true,
			ev: evs(newPod("q", resSpec()).at(0).created().at(10).sandbox().reqOOM("setup", 998).at(20).reqOOM("proxy", 992).at(30).reqOOM("app", 992))},
		{name: "INV-Q3/sidecar above the main (its own request decides)", id: "INV-Q3", want: Violation,
			ev: evs(newPod("q", resSpec()).at(0).created().at(10).sandbox().reqOOM("setup", 998).at(20).reqOOM("proxy", 999).at(30).reqOOM("app", 992))},
		// A main's memory resize changes the bound for later starts only:
		// the sidecar keeps the score it started with (the sweep's
		// resize-restart shape found the checker comparing it with the
		// main's score after the resize).
		{name: "INV-Q3/the main's memory resized after the sidecar started", id: "INV-Q3", clean: true,
			ev: evs(newPod("q", resSpec()).at(0).created().at(10).sandbox().reqOOM("setup", 998).at(20).reqOOM("proxy", 992).at(30).reqOOM("app", 992).
				at(5000).resize("app", 200, 384*mi).at(5100).exited("app", 0).at(5200).reqOOM("app", 988))},
		{name: "INV-Q3/a sidecar started after the main's memory resize keeps the old bound", id: "INV-Q3", want: Violation,
			ev: evs(newPod("q", resSpec()).at(0).created().at(10).sandbox().reqOOM("setup", 998).at(20).reqOOM("proxy", 992).at(30).reqOOM("app", 992).
				at(5000).resize("app", 200, 384*mi).at(5100).exited("app", 0).at(5200).reqOOM("app", 988).
				at(6000).exited("proxy", 1).at(6100).reqOOM("proxy", 992))},
		{name: "INV-Q3/a BestEffort pod's container not at 1000", id: "INV-Q3", want: Violation,
			ev: evs(newPod("q", specOf("Always", 30, "main:app")).at(0).created().at(10).sandbox().reqOOM("app", 500))},
		// INV-Q5
		{name: "INV-Q5/a regular init's CPUs reused, the sidecar's not", id: "INV-Q5", clean: true,
			ev: evs(newPod("c", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				add(history.Event{Kind: history.ContainerStartRequested, Container: "setup", CPUs: "0-1"}).
				at(20).add(history.Event{Kind: history.ContainerStartRequested, Container: "proxy", CPUs: "0"}).
				at(30).add(history.Event{Kind: history.ContainerStartRequested, Container: "app", CPUs: "1-2"}))},
		{name: "INV-Q5/a main gets the sidecar's CPU", id: "INV-Q5", want: Violation,
			ev: evs(newPod("c", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				add(history.Event{Kind: history.ContainerStartRequested, Container: "setup", CPUs: "0-1"}).
				at(20).add(history.Event{Kind: history.ContainerStartRequested, Container: "proxy", CPUs: "0"}).
				at(30).add(history.Event{Kind: history.ContainerStartRequested, Container: "app", CPUs: "0-1"}))},
		// INV-Q4
		{name: "INV-Q4/OOM-killed sidecar restarted", id: "INV-Q4", clean: true,
			ev: evs(steady("o", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).add(history.Event{Kind: history.ContainerExited, Container: "proxy", Code: 137, Reason: "OOMKilled"}).
				at(5100).up("proxy").at(60000).probe("app", "readiness", "success"))},
		{name: "INV-Q4/OOM-killed sidecar never restarted", id: "INV-Q4", want: Bound,
			ev: evs(steady("o", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).add(history.Event{Kind: history.ContainerExited, Container: "proxy", Code: 137, Reason: "OOMKilled"}).
				at(400000).probe("app", "readiness", "success"))},
		{name: "INV-Q4/an OOM kill stops another container", id: "INV-Q4", want: Violation,
			ev: evs(steady("o", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).add(history.Event{Kind: history.ContainerExited, Container: "proxy", Code: 137, Reason: "OOMKilled"}).
				at(5050).stop("app", 30, "").at(5100).up("proxy"))},
		// INV-F4
		{name: "INV-F4/regular pod shut down within its group's budget", id: "INV-F4", clean: true,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 15).stopExit("app", 15, "NodeShutdown").
				stopExit("proxy", 15, "NodeShutdown").phaseReason("Failed", "Terminated"))},
		{name: "INV-F4/kill with the pod's full grace instead of the group's budget", id: "INV-F4", want: Violation,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 30).stopExit("app", 30, "NodeShutdown").
				stopExit("proxy", 30, "NodeShutdown").phaseReason("Failed", "Terminated"))},
		// nodeshutdown_manager.go killPods: the status function sets Failed
		// "unless it was already in a successful terminal phase", and the
		// terminal getPhase of a pod whose mains all exited 0 is Succeeded:
		// a real kubelet v1.37.2 publishes Succeeded (local backend,
		// local-node-shutdown). Found by the sim-vs-local differential.
		{name: "INV-F4/Succeeded after a node-shutdown kill when every main exited 0", id: "INV-F4", clean: true,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 15).stopExit("app", 15, "NodeShutdown").
				stopExit("proxy", 15, "NodeShutdown").phase("Succeeded"))},
		{name: "INV-F4/Succeeded after a node-shutdown kill when a main exited 143", id: "INV-F4", want: Violation,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 15).stop("app", 15, "NodeShutdown").exited("app", 143).
				stopExit("proxy", 15, "NodeShutdown").phase("Succeeded"))},
		// Observed on real kubelets v1.37.2 (local-node-shutdown in make
		// e2e): the Terminated reason is lost when the regenerated status
		// overwrites the status function's before it is synced.
		{name: "INV-F4/Failed without a reason after a node-shutdown kill (the kubelet's racy reason)", id: "INV-F4", clean: true,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 15).stop("app", 15, "NodeShutdown").exited("app", 143).
				stopExit("proxy", 15, "NodeShutdown").phase("Failed"))},
		{name: "INV-F4/Failed with another reason after a node-shutdown kill", id: "INV-F4", want: Violation,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).terminating("NodeShutdown", 15).stop("app", 15, "NodeShutdown").exited("app", 143).
				stopExit("proxy", 15, "NodeShutdown").phaseReason("Failed", "Evicted"))},
		{name: "INV-F4/a pod already being deleted is not killed again", id: "INV-F4", clean: true,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(4000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").
				at(5000).shutdown(20, 5).at(12000).exited("app", 0).stopExit("proxy", 18, "PodDeleted").phase("Succeeded"))},
		{name: "INV-F4/pod not terminated by the shutdown", id: "INV-F4", want: Violation,
			ev: evs(steady("s", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).at(12000).probe("app", "readiness", "success"))},
		// INV-U2
		{name: "INV-U2/sidecar resized in place", id: "INV-U2", clean: true,
			ev: evs(steady("u", resSpec()).at(5000).resize("proxy", 100, 32*mi).at(5500).resized("proxy", 100, 32*mi).at(60000).probe("app", "readiness", "success"))},
		{name: "INV-U2/RestartContainer restarts only that container", id: "INV-U2", clean: true,
			ev: evs(steady("u", resSpec()).at(5000).resize("app", 300, 256*mi).at(5100).stop("app", 30, "ResizeRestart").exited("app", 0).at(5200).up("app"))},
		{name: "INV-R4/restarted for a resize after exit 0 under OnFailure", id: "INV-R4", clean: true,
			ev: evs(steady("u", onFailure(resSpec())).at(5000).resize("app", 300, 256*mi).at(5100).stop("app", 30, "ResizeRestart").exited("app", 0).at(5200).up("app"))},
		{name: "INV-U2/resized in place although its policy restarts it", id: "INV-U2", want: Violation,
			ev: evs(steady("u", resSpec()).at(5000).resize("proxy", 50, 64*mi).at(5500).resized("proxy", 50, 64*mi))},
		{name: "INV-U2/restarted for a resize its policy applies in place", id: "INV-U2", want: Violation,
			ev: evs(steady("u", resSpec()).at(5000).resize("proxy", 100, 32*mi).at(5100).stop("proxy", 30, "ResizeRestart").exited("proxy", 0).at(5200).up("proxy"))},
		{name: "INV-U2/resize of a sidecar restarts the main too", id: "INV-U2", want: Violation,
			ev: evs(steady("u", resSpec()).at(5000).resize("proxy", 50, 64*mi).at(5100).stop("proxy", 30, "ResizeRestart").stop("app", 30, "ResizeRestart").
				exited("proxy", 0).exited("app", 0).at(5200).up("proxy").up("app"))},
		{name: "INV-U2/resize applied during termination", id: "INV-U2", want: Violation,
			ev: evs(steady("u", resSpec()).at(5000).deleted(30).terminating("PodDeleted", 30).resize("proxy", 100, 32*mi).at(5500).resized("proxy", 100, 32*mi))},
		{name: "INV-U2/in-place resize never applied", id: "INV-U2", want: Bound,
			ev: evs(steady("u", resSpec()).at(5000).resize("proxy", 100, 32*mi).at(60000).probe("app", "readiness", "success"))},
	}
}

func TestSemanticsInvariants(t *testing.T) { runCases(t, semanticsCases()) }

package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// sidecarCrash: a running Always pod whose sidecar proxy exits 1 at 5 s,
// with a 10 s backoff announced; then restart at restartMs (0: never) and
// a later event at 60 s so the history visibly carries on.
func sidecarCrash(restartMs int64) *hb {
	h := steady("sc", specOf("Never", 30, "sidecar:proxy", "main:app"))
	h.at(5000).exited("proxy", 1).backoff("proxy", 10)
	if restartMs > 0 {
		h.at(restartMs).up("proxy")
	}
	return h.at(60000).probe("app", "readiness", "success")
}

func restartCases() []invCase {
	return []invCase{
		{name: "INV-R1/exited sidecar restarted under restartPolicy Never", id: "INV-R1", ev: evs(sidecarCrash(15000)), clean: true},
		{name: "INV-R1/exited sidecar never restarted", id: "INV-R1", want: Bound, ev: evs(sidecarCrash(0))},
		{name: "INV-R1/not restarted while the kubelet was down is a degradation", id: "INV-R1", want: Degradation,
			ev: evs(sidecarCrash(0).at(6000).nodeEv(history.KubeletDown).at(59000).nodeEv(history.KubeletUp))},
		{name: "INV-R2/restart after the announced backoff", id: "INV-R2", ev: evs(sidecarCrash(15000)), clean: true},
		{name: "INV-R2/restart before the announced backoff", id: "INV-R2", want: Bound, ev: evs(sidecarCrash(7000))},
		{name: "INV-R2/restart long after the announced backoff", id: "INV-R2", want: Bound, ev: evs(sidecarCrash(40000))},
		// GetBackoffKey hashes the image and the resources: after a change
		// the kubelet finds no backoff and restarts at once.
		{name: "INV-R2/restart before the announced backoff after an image change", id: "INV-R2", clean: true,
			ev: evs(sidecarCrash(0).at(6000).image("proxy").at(6100).up("proxy"))},
		{name: "INV-R2/restart before the announced backoff after a resize", id: "INV-R2", clean: true,
			ev: evs(sidecarCrash(0).at(6000).resize("proxy", 500, 0).at(6100).up("proxy"))},
		{name: "INV-R3/sidecar restart leaves mains alone", id: "INV-R3", ev: evs(sidecarCrash(15000)), clean: true},
		{name: "INV-R3/sidecar crash stops the main container", id: "INV-R3", want: Violation,
			ev: evs(sidecarCrash(0).at(6000).stop("app", 30, "").exited("app", 0).at(15000).up("proxy"))},
		// A main's own kill (its postStart failed) after the sidecar's exit,
		// its exit hidden by a runtime outage, then the pod kill's preStop
		// on the container the kubelet still believes running: the later
		// preStop does not make the first stop the pod kill's (found by a
		// triple of shutdown-refused, grace-0 and rules-sidecar).
		{name: "INV-R3/a pod kill's preStop after the main's own stop keeps its reason", id: "INV-R3", clean: true,
			ev: evs(sidecarCrash(0).at(5500).stop("app", 2, "FailedPostStartHook").at(5600).nodeEv(history.RuntimeDown).at(6000).exited("app", 0).
				at(7000).deleted(30).terminating("PodDeleted", 30).prestop("app", "PodDeleted").prestopEnd("app").stop("app", 30, "PodDeleted").
				at(9000).nodeEv(history.RuntimeUp))},
		{name: "INV-R3/sidecar crash re-runs the regular init", id: "INV-R3", want: Violation,
			ev: evs(steady("sc", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(5000).exited("proxy", 1).at(6000).done("setup").up("proxy"))},
		{name: "INV-R4/main restarted after a failure under OnFailure", id: "INV-R4", clean: true,
			ev: evs(steady("m", specOf("OnFailure", 30, "init:setup", "main:app")).at(5000).exited("app", 1).at(6000).up("app"))},
		{name: "INV-R4/main restarted under Never", id: "INV-R4", want: Violation,
			ev: evs(steady("m", specOf("Never", 30, "main:app")).at(5000).exited("app", 1).at(6000).up("app"))},
		{name: "INV-R4/main restarted after exit 0 under OnFailure", id: "INV-R4", want: Violation,
			ev: evs(steady("m", specOf("OnFailure", 30, "main:app")).at(5000).exited("app", 0).at(6000).up("app"))},
		// Issue 16 B: computePodActions restarts a container it killed for
		// a spec change whatever the restart policy, and one it killed for
		// a failed liveness or startup probe when shouldRestartOnFailure
		// (Always, OnFailure), whatever its exit code.
		{name: "INV-R4/main killed for an image change restarted under Never", id: "INV-R4", clean: true,
			ev: evs(steady("m", specOf("Never", 30, "main:app")).at(5000).image("app").stop("app", 30, "SpecChanged").exited("app", 0).at(6000).up("app"))},
		{name: "INV-R4/probe-killed main restarted after exit 0 under OnFailure", id: "INV-R4", clean: true,
			ev: evs(steady("m", specOf("OnFailure", 30, "main:app+live")).at(5000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 0).at(6000).up("app"))},
		{name: "INV-R4/probe-killed main restarted under Never", id: "INV-R4", want: Violation,
			ev: evs(steady("m", specOf("Never", 30, "main:app+live")).at(5000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 137).at(6000).up("app"))},
		{name: "INV-R4/main restart re-runs the regular init", id: "INV-R4", want: Violation,
			ev: evs(steady("m", specOf("Always", 30, "init:setup", "main:app")).at(5000).exited("app", 1).at(6000).done("setup").up("app"))},
		{name: "INV-R5/holds in a correct history", id: "INV-R5", ev: r, clean: true},
		{name: "INV-R5/sidecar restarted during termination", id: "INV-R5", want: Violation,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(5100).exited("proxy", 1).at(5200).up("proxy"))},
		// StopLivenessAndStartup stops the mains' probes only: a sidecar's
		// liveness keeps running during termination, inert.
		{name: "INV-R5/sidecar liveness probe runs during termination, killing nothing", id: "INV-R5", clean: true,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy+live", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(9000).probe("proxy", "liveness", "failure"))},
		{name: "INV-R5/sidecar killed for its liveness probe during termination", id: "INV-R5", want: Violation,
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy+live", "main:app")).at(5000).deleted(30).terminating("PodDeleted", 30).
				stop("app", 30, "PodDeleted").at(9000).probe("proxy", "liveness", "failure").stop("proxy", 30, "LivenessProbe"))},
		{name: "INV-R5/gate SidecarsRestartableDuringPodTermination lifts the rule", id: "INV-R5", clean: true,
			meta: &history.Meta{Policy: "kep753+SidecarsRestartableDuringPodTermination"},
			ev: evs(steady("t", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).terminating("PodDeleted", 30).
				at(5100).exited("proxy", 1).at(5200).up("proxy"))},
		{name: "INV-R6/job completes and the pod is killed", id: "INV-R6", ev: evs(jobDone(0)), clean: true},
		{name: "INV-R6/sidecar restarted after the job finished", id: "INV-R6", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 0).at(5001).exited("log", 1).at(6000).up("log"))},
		{name: "INV-R6/sidecars keep the finished pod alive", id: "INV-R6", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 0).at(60000).probe("proxy", "readiness", "success"))},
		{name: "INV-R6/pod killed late after the job finished", id: "INV-R6", want: Bound,
			ev: evs(jobPod().at(5000).exited("app", 0).at(9000).terminating("PodCompleted", 30))},
	}
}

func TestRestartInvariants(t *testing.T) { runCases(t, restartCases()) }

func phaseCases() []invCase {
	return []invCase{
		{name: "INV-C1/job completes, sidecars signalled, pod Succeeded", id: "INV-C1", ev: evs(jobDone(0).at(60000).removed()), clean: true},
		{name: "INV-C1/sidecar never signalled after the job finished", id: "INV-C1", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 0).terminating("PodCompleted", 30).stopExit("log", 30, "PodCompleted").at(60000).removed())},
		// A sidecar that exits on its own while the kill waits on the one
		// after it needs no signal (the sweep's never-sandbox-loss
		// composed with grace-expiry: 8-17 per 8,000 lifecycles).
		{name: "INV-C1/sidecar exited on its own during the completion kill", id: "INV-C1", clean: true,
			ev: evs(jobPod().at(5000).exited("app", 0).terminating("PodCompleted", 30).at(5500).exited("log", 2).
				at(6000).stopExit("proxy", 30, "PodCompleted").phase("Succeeded").at(60000).removed())},
		// The completion kill waits on a hanging preStop; the kubelet
		// restarts and the deletion's kill begins again with its own
		// budget (never-sandbox-loss composed with hanging-hooks).
		{name: "INV-C1/kill begun again after a kubelet restart", id: "INV-C1", clean: true,
			ev: evs(jobPod().at(5000).exited("app", 0).terminating("PodCompleted", 30).stopExit("log", 30, "PodCompleted").prestop("proxy", "PodCompleted").
				at(6000).deleted(30).at(20000).nodeEv(history.KubeletDown).at(22000).nodeEv(history.KubeletUp).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted").
				at(52000).stopExit("proxy", 0, "PodDeleted").phase("Succeeded").at(60000).removed())},
		{name: "INV-C1/no terminal phase after the job finished", id: "INV-C1", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 0).terminating("PodCompleted", 30).stopExit("log", 30, "PodCompleted").stopExit("proxy", 30, "PodCompleted").at(60000).removed())},
		{name: "INV-C2/sidecar exit 137 does not fail the job", id: "INV-C2", clean: true,
			ev: evs(jobPod().at(5000).exited("app", 0).terminating("PodCompleted", 30).stop("log", 30, "PodCompleted").exited("log", 137).stopExit("proxy", 30, "PodCompleted").phase("Succeeded"))},
		{name: "INV-C2/Succeeded although the main failed", id: "INV-C2", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 1).at(5100).phase("Succeeded"))},
		{name: "INV-C2/Failed although the main exited 0", id: "INV-C2", want: Violation,
			ev: evs(jobPod().at(5000).exited("app", 0).at(5100).phase("Failed"))},
		{name: "INV-C2/Failed after the main's record was garbage-collected is a degradation", id: "INV-C2", want: Degradation,
			ev: evs(jobPod().at(5000).exited("app", 0).fault(history.FaultBegin, "container-gc", 2).fault(history.FaultEnd, "container-gc", 2).at(5200).phase("Failed"))},
		{name: "INV-P1/holds in a correct history", id: "INV-P1", ev: r, clean: true},
		{name: "INV-P1/Running while a sidecar's startup probe is pending", id: "INV-P1", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy+startup", "main:app")).at(0).created().at(10).sandbox().at(20).req("proxy").running("proxy").
				at(100).phase("Running").at(200).probe("proxy", "startup", "success").started("proxy", true).at(300).up("app"))},
		{name: "INV-P1/Running once re-initialized in a new sandbox", id: "INV-P1", clean: true,
			ev: evs(steady("p", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(5000).sandboxLost().at(6000).sandbox().phase("Pending").
				at(6100).done("setup").up("proxy").phase("Running").at(6200).up("app"))},
		// Issue 16 A7: getPhase keeps the lost sandbox's terminated
		// statuses, so during re-initialization the kubelet publishes
		// Running whenever no regular init runs and no sidecar runs
		// unstarted.
		{name: "INV-P1/Running during re-initialization after the mains ran in the lost sandbox", id: "INV-P1", clean: true,
			ev: evs(steady("p", specOf("Always", 30, "init:setup", "sidecar:proxy+startup", "main:app")).at(5000).sandboxLost().at(6000).sandbox().
				at(6100).done("setup").phase("Running").at(6200).req("proxy").running("proxy").phase("Pending").
				at(6300).exited("proxy", 137).phase("Running").at(7000).startupUp("proxy").at(7100).up("app"))},
		{name: "INV-P1/Running during re-initialization while a main never ran", id: "INV-P1", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "init:setup", "sidecar:proxy+startup", "main:app")).at(0).created().at(10).sandbox().
				at(20).done("setup").at(30).req("proxy").running("proxy").phase("Pending").at(40).sandboxLost().at(1000).sandbox().
				at(1100).done("setup").phase("Running"))},
		{name: "INV-P1/back to Pending after a main container ran", id: "INV-P1", want: Violation,
			ev: evs(steady("p", realisticSpec()).at(1600).phase("Pending"))},
		// The sweep's hook-kill-refused shape: two restarts of the main
		// cut by runtime restarts leave two Created records; the API
		// status takes its state from the newest and its last termination
		// from the one before, neither terminated, so getPhase counts the
		// main waiting: Pending. One cut start still shows the exit.
		{name: "INV-P1/Pending after two cut starts of the main", id: "INV-P1", want: Degradation,
			ev: evs(cutStarts(2, false))},
		{name: "INV-P1/Pending after a cut start whose predecessor was removed", id: "INV-P1", want: Degradation,
			ev: evs(cutStarts(1, true))},
		{name: "INV-P1/Pending after one cut start of the main", id: "INV-P1", want: Violation,
			ev: evs(cutStarts(1, false))},
		{name: "INV-P1/Pending after two cut starts of a sidecar", id: "INV-P1", want: Degradation, ev: sidecarCutInKill(2)},
		{name: "INV-P1/Pending after one cut start of a sidecar", id: "INV-P1", want: Violation, ev: sidecarCutInKill(1)},
		{name: "INV-C2/Failed after two cut starts of a sidecar", id: "INV-C2", want: Degradation, ev: sidecarCutInKill(2)},
		{name: "INV-C2/Failed after one cut start of a sidecar", id: "INV-C2", want: Violation, ev: sidecarCutInKill(1)},
		{name: "INV-T8/Failed after two cut starts of a sidecar", id: "INV-T8", want: Degradation, ev: sidecarCutInKill(2)},
		{name: "INV-P2/holds in a correct history", id: "INV-P2", ev: r, clean: true},
		{name: "INV-P2/Initialized before the last sidecar was started", id: "INV-P2", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "init:setup", "sidecar:proxy+startup", "main:app")).at(0).created().at(10).sandbox().at(20).done("setup").
				at(100).req("proxy").running("proxy").cond("Initialized", true).at(900).probe("proxy", "startup", "success").started("proxy", true))},
		{name: "INV-P2/Initialized flaps while a sidecar restarts", id: "INV-P2", want: Violation,
			ev: evs(sidecarCrash(15000).at(5001).cond("Initialized", false))},
		{name: "INV-P3/holds in a correct history", id: "INV-P3", ev: r, clean: true},
		{name: "INV-P3/ContainersReady while the main was not ready", id: "INV-P3", want: Violation,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().at(20).up("proxy").
				at(100).req("app").running("app").started("app", true).at(200).cond("ContainersReady", true).at(900).ready("app", true))},
		{name: "INV-P3/status published as one snapshot at the same instant", id: "INV-P3", clean: true,
			ev: evs(newPod("p", specOf("Always", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().at(20).up("proxy").
				at(100).req("app").running("app").cond("ContainersReady", true).started("app", true).ready("app", true))},
		// Issue 16 B: a status published at one instant, then a change at
		// the same instant (a sidecar crashing within the nanosecond it
		// became ready, seen at 1 µs MTBF): two publications, no false
		// ContainersReady.
		{name: "INV-P3/ready and dead within one instant is a flap", id: "INV-P3", clean: true,
			ev: evs(sidecarCrash(15000).at(20000).exited("proxy", 1).at(30000).req("proxy").running("proxy").
				cond("ContainersReady", true).cond("Ready", true).started("proxy", true).ready("proxy", true).
				exited("proxy", 1).cond("ContainersReady", false).cond("Ready", false).started("proxy", false).ready("proxy", false))},
		{name: "INV-P3/ContainersReady in the publication that says the sidecar is not ready", id: "INV-P3", want: Violation,
			ev: evs(sidecarCrash(15000).at(20000).exited("proxy", 1).at(30000).req("proxy").running("proxy").
				cond("ContainersReady", true).started("proxy", true).ready("proxy", false))},
		{name: "INV-P3/Ready while a sidecar was not ready", id: "INV-P3", want: Violation,
			ev: evs(steady("p", realisticSpec()).at(1600).ready("log", false).cond("Ready", true))},
		// make e2e, kube backend (tolerance 1 s): a sidecar OOM-killed
		// 15 ms (timed by a witness) before the kubelet published
		// ContainersReady=True with it ready: the kubelet had not observed
		// the exit yet (PLEG). Within the history's tolerance: no
		// violation; beyond it, still one.
		{name: "INV-P3/a sidecar exit the kubelet could not have observed yet", id: "INV-P3", clean: true, meta: realMeta,
			ev: evs(steady("p", specOf("Always", 30, "sidecar:proxy", "sidecar:logs", "main:app")).at(5000).exited("logs", 137).
				at(5015).cond("ContainersReady", true).cond("Ready", true))},
		{name: "INV-P3/a sidecar exit older than the tolerance", id: "INV-P3", want: Violation, meta: realMeta,
			ev: evs(steady("p", specOf("Always", 30, "sidecar:proxy", "sidecar:logs", "main:app")).at(5000).exited("logs", 137).
				at(6500).cond("ContainersReady", true).cond("Ready", true))},
		// A sidecar that exits while the runtime is down: the kubelet's
		// relist fails until it is back, and a readiness result of
		// another container publishes the stale statuses (found by the
		// hook-kill-refused sweep shape once the sim hid such exits).
		{name: "INV-P3/a sidecar exit hidden by a runtime outage", id: "INV-P3", clean: true,
			ev: evs(steady("p", specOf("Always", 30, "sidecar:proxy", "sidecar:logs", "main:app")).at(4000).nodeEv(history.RuntimeDown).
				at(5000).exited("logs", 2).at(5500).cond("ContainersReady", true).cond("Ready", true).at(6000).nodeEv(history.RuntimeUp))},
		{name: "INV-P3/the same exit once the runtime is back", id: "INV-P3", want: Violation,
			ev: evs(steady("p", specOf("Always", 30, "sidecar:proxy", "sidecar:logs", "main:app")).at(4000).nodeEv(history.RuntimeDown).
				at(5000).exited("logs", 2).at(5200).nodeEv(history.RuntimeUp).at(5500).cond("ContainersReady", true).cond("Ready", true))},
	}
}

// realMeta is a history of a real backend (kube: 1 s tolerance).
var realMeta = &history.Meta{Scenario: "unit", Policy: "kep753", Backend: "kube", ToleranceNanos: 1e9}

func TestPhaseInvariants(t *testing.T) { runCases(t, phaseCases()) }

// cutStarts is a pod whose main ran and exited 0 under Always, then had n
// restarts created but never started (each cut by a runtime restart),
// with the exited record removed by container GC first if gc, and
// published Pending.
func cutStarts(n int, gc bool) *hb {
	b := newPod("p", specOf("Always", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
		at(20).up("proxy").at(100).up("app").phase("Running").at(1000).exited("app", 0)
	if gc {
		b.fault(history.FaultBegin, "container-gc", 2).add(history.Event{Kind: history.ContainerRemoved, Container: "app"}).fault(history.FaultEnd, "container-gc", 2)
	}
	return cutStartsOf(b, "app", n).at(2000).phase("Pending")
}

// cutStartsOf adds n starts of container c created but cut by a runtime
// restart before they ran (attempts 1..n).
func cutStartsOf(b *hb, c string, n int) *hb {
	for k := 1; k <= n; k++ {
		b.at(1000 + int64(k)*100).add(history.Event{Kind: history.ContainerStartRequested, Container: c, Attempt: uint32(k)}).
			nodeEv(history.RuntimeDown).at(1050 + int64(k)*100).nodeEv(history.RuntimeUp)
	}
	return b
}

// sidecarCutInKill: a Job-like main exits 0 during a deletion's kill,
// while the sidecar logs, restarted during termination (KEP-4438), had n
// starts cut by runtime restarts; the kill ends with Failed (TerminatePod
// turns the Pending that getPhase gives for a Waiting sidecar without a
// termination into Failed).
func sidecarCutInKill(n int) func() []history.Event {
	b := newPod("p", specOf("Always", 30, "sidecar:logs", "main:app")).at(0).created().at(10).sandbox().
		at(20).up("logs").at(100).up("app").phase("Running").at(900).exited("logs", 2)
	b = cutStartsOf(b, "logs", n)
	return evs(b.at(1500).deleted(30).terminating("PodDeleted", 30).stopExit("app", 30, "PodDeleted").
		at(1600).phase("Pending").at(1700).phase("Failed").removed())
}

package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// Tolerances the real backends write into run.meta.
var localMeta = &history.Meta{Scenario: "unit", Policy: "kep753", Backend: "local", ToleranceNanos: 5e8}

// forceDeleted: kubectl delete --grace-period=0 --force. The backends record
// pod.deleted/pod.terminating with Grace 0; kubelet's
// calculateEffectiveGracePeriod turns 0 into 1 s, so each sidecar's
// waitForTurn timer fires after 1 s while the main (SIGTERM with the 2 s
// minimum) is still exiting.
func forceDeleted() *hb {
	h := steady("fd", specOf("Always", 30, "sidecar:proxy", "sidecar:log", "main:app+prestop"))
	h.at(20000).deleted(0).terminating("PodDeleted", 0).prestop("app", "PodDeleted")
	// preStop "sleep 5" is cut by its 1 s timeout; SIGTERM with max(1-1,2)=2 s
	h.at(21000).stop("app", 2, "PodDeleted")
	// both sidecars' 1 s timers ran out (log waited on app; proxy on app, log)
	h.at(21000).stop("log", 2, "PodDeleted").stop("proxy", 2, "PodDeleted")
	h.at(21100).exited("log", 0).exited("proxy", 0)
	h.at(22500).exited("app", 0).prestopEnd("app")
	return h.at(22600).phase("Succeeded").at(22700).removed()
}

// truncated: grace 5 s; app and proxy run a 0.9 s preStop (floor -> 0 s
// deducted). app gets SIGTERM(5 s) at 0.9 s, ignores it, SIGKILL at 5.9 s.
// proxy's waitForTurn(5 s) starts at 0.9 s and ends at 5.9 s with app's
// exit: floor(5.0)=5 -> grace 0 -> minimum 2 s: SIGTERM at 5.9 s,
// SIGKILL at 7.9 s = grace + 2.9 s.
func truncated() *hb {
	h := steady("tr", specOf("Always", 5, "sidecar:proxy+prestop", "main:app+prestop"))
	h.at(20000).deleted(5).terminating("PodDeleted", 5).prestop("app", "PodDeleted").prestop("proxy", "PodDeleted")
	h.at(20900).prestopEnd("app").prestopEnd("proxy").stop("app", 5, "PodDeleted")
	h.at(25900).killed("app").exited("app", 137).stop("proxy", 2, "PodDeleted")
	h.at(27900).killed("proxy").exited("proxy", 137)
	return h.at(28500).phase("Failed").at(28600).removed()
}

// jobSlow: Never job, grace 30. app exits at 5 s; the kill starts 0.9 s
// later (PLEG relist, R6 accepts it). log (last sidecar) ignores SIGTERM:
// SIGKILL at kill+30 s. proxy's waitForTurn(30 s) times out with log's exit:
// grace max(30-30,2)=2 s, ignores it, SIGKILL at kill+32 s. The pod worker
// then waits for the next PLEG relist (GetNewerThan, "adds ~1s of latency")
// before getPhase says Succeeded: published 0.9 s after the last exit.
func jobSlow() *hb {
	h := jobPod()
	h.at(5000).exited("app", 0)
	h.at(5900).terminating("PodCompleted", 30).stop("log", 30, "PodCompleted")
	h.at(35900).killed("log").exited("log", 137).stop("proxy", 2, "PodCompleted")
	h.at(37900).killed("proxy").exited("proxy", 137)
	return h.at(38800).phase("Succeeded")
}

// TestKubeletTimingCorners: histories kubelet v1.37.2 produces that the
// termination and completion checkers flagged (a session 8 audit): a force
// delete is a 1 s kill (pod worker), grace is counted in whole seconds
// (killContainer), and a Job's terminal phase waits for the next PLEG
// relist. Each case failed before the checker allowed for it.
func TestKubeletTimingCorners(t *testing.T) {
	runCases(t, []invCase{
		// Sidecars stopped when the 1 s budget expires, before the main
		// exited: order lost to grace expiry, a degradation (it was a
		// violation against the spec's 30 s).
		{name: "INV-T3/force delete: a 1 s kill, order lost when it expires", id: "INV-T3", want: Degradation, ev: evs(forceDeleted())},
		{name: "INV-T4/force delete: a 1 s kill, order lost when it expires", id: "INV-T4", want: Degradation, ev: evs(forceDeleted())},
		{name: "INV-T6/force delete: preStop cut at 1 s", id: "INV-T6", clean: true, ev: evs(forceDeleted())},
		{name: "INV-T5/force delete", id: "INV-T5", clean: true, ev: evs(forceDeleted())},
		{name: "INV-T5/whole-second truncation of preStop and wait", id: "INV-T5", clean: true, meta: localMeta, ev: evs(truncated())},
		{name: "INV-T3/whole-second truncation", id: "INV-T3", clean: true, meta: localMeta, ev: evs(truncated())},
		{name: "INV-C1/Job kill, then the PLEG relist before Succeeded", id: "INV-C1", clean: true, meta: localMeta, ev: evs(jobSlow())},
		{name: "INV-T5/job", id: "INV-T5", clean: true, meta: localMeta, ev: evs(jobSlow())},
		{name: "INV-R6/job", id: "INV-R6", clean: true, meta: localMeta, ev: evs(jobSlow())},
		// The allowances stay bounded: a force-deleted main still
		// running 5 s into its 1 s kill breaks INV-T5.
		{name: "INV-T5/force delete, a main still running 5 s in", id: "INV-T5", want: Bound,
			ev: evs(steady("fd", specOf("Always", 30, "main:app")).at(20000).deleted(0).terminating("PodDeleted", 0).stop("app", 2, "PodDeleted").at(25100).killed("app").exited("app", 137))},
	})
}

// TestShutdownOfAZeroGracePod: nodeshutdown_manager.go killPods passes
// min(group budget, the pod's terminationGracePeriodSeconds) to the pod
// worker, whose calculateEffectiveGracePeriod raises 0 to 1 s. The
// reference kills such a pod with 1 s; INV-F4 flagged it ("a 1.000s
// budget, its group allows 0.000s", 41-43 per 20,000 faulted lifecycles
// of a grace-0 pod under the mixed faults).
func TestShutdownOfAZeroGracePod(t *testing.T) {
	zero := func(total, crit, kill int64) func() []history.Event {
		return evs(steady("s0", specOf("Always", 0, "sidecar:proxy", "main:app")).at(5000).shutdown(total, crit).
			terminating("NodeShutdown", kill).stopExit("app", kill, "NodeShutdown").stopExit("proxy", kill, "NodeShutdown").
			phaseReason("Failed", "Terminated"))
	}
	runCases(t, []invCase{
		{name: "INV-F4/grace-0 pod: a 1 s kill", id: "INV-F4", clean: true, ev: zero(20, 5, 1)},
		// The critical pods take the whole shutdown: the regular group's
		// budget is 0, still a 1 s kill.
		{name: "INV-F4/regular group with no time of its own: a 1 s kill", id: "INV-F4", clean: true,
			ev: evs(steady("s1", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(5, 5).
				terminating("NodeShutdown", 1).stopExit("app", 1, "NodeShutdown").stopExit("proxy", 1, "NodeShutdown").
				phaseReason("Failed", "Terminated"))},
		// The floor is a second, not the group's budget.
		{name: "INV-F4/grace-0 pod killed with 2 s", id: "INV-F4", want: Violation, ev: zero(20, 5, 2)},
	})
}

// TestKubeletInitCorners: an init container OOM-killed with exit 0 has
// failed (isInitContainerFailed) and is re-run; a startup-probe kill with
// grace 0 runs no preStop (killContainer). Both were flagged before.
func TestKubeletInitCorners(t *testing.T) {
	runCases(t, []invCase{
		{name: "INV-F2/OOMKilled init with exit 0 is re-run by the kubelet", id: "INV-F2", clean: true,
			ev: evs(newPod("oom0", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(500).exitedReason("setup", 0, "OOMKilled").
				at(10500).req("setup").running("setup").at(11000).exited("setup", 0).
				at(11100).up("proxy").at(11200).up("app"))},
		{name: "INV-S1/the next container waits for the re-run of an OOMKilled init", id: "INV-S1", want: Violation,
			ev: evs(newPod("oom1", specOf("Always", 30, "init:setup", "init:migrate", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("setup").running("setup").at(500).exitedReason("setup", 0, "OOMKilled").
				at(600).req("migrate").running("migrate"))},
		{name: "INV-S2/startup-probe kill with pod grace 0 runs no preStop", id: "INV-S2", clean: true,
			ev: evs(newPod("sg0", specOf("Always", 0, "sidecar:proxy+startup+prestop", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(1000).probe("proxy", "startup", "failure").stop("proxy", 2, "StartupProbe").exited("proxy", 0).
				at(1100).req("proxy").running("proxy").at(2000).probe("proxy", "startup", "success").started("proxy", true).
				at(2100).up("app"))},
	})
}

// On the local and kube backends a probe kill's container.stop-requested
// carries no reason (CRI StopContainer has none), but the probe.result
// failure before it is recorded: the checker reads the stop as the
// kubelet's probe kill. Before, INV-R3 read a liveness kill during the
// sidecar's backoff as "main stopped because the sidecar exited", and INV-R4
// a probe-killed main's restart after exit 0 under OnFailure as a break.
func TestProbeKillWithoutRecordedReason(t *testing.T) {
	duringBackoff := steady("lv", specOf("Always", 30, "sidecar:proxy", "main:app+live"))
	duringBackoff.at(5000).exited("proxy", 1).backoff("proxy", 10)
	duringBackoff.at(8000).probe("app", "liveness", "failure").stop("app", 30, "").at(8500).exited("app", 143)
	duringBackoff.at(9000).up("app").at(15000).up("proxy")
	onFailure := steady("lo", specOf("OnFailure", 30, "sidecar:proxy", "main:app+live"))
	onFailure.at(8000).probe("app", "liveness", "failure").stop("app", 30, "").at(8500).exited("app", 0).at(9000).up("app")
	// A stop after the probe passed again is no probe kill.
	passedAgain := steady("lp", specOf("OnFailure", 30, "sidecar:proxy", "main:app+live"))
	passedAgain.at(7000).probe("app", "liveness", "failure").at(7500).probe("app", "liveness", "success").
		at(8000).stop("app", 30, "").at(8500).exited("app", 0).at(9000).up("app")
	runCases(t, []invCase{
		{name: "INV-R3/liveness kill with no recorded reason", id: "INV-R3", clean: true, ev: evs(duringBackoff)},
		{name: "INV-R4/OnFailure liveness kill, exit 0, restarted", id: "INV-R4", clean: true, ev: evs(onFailure)},
		{name: "INV-R4/a stop after the probe passed again is no probe kill", id: "INV-R4", want: Violation, ev: evs(passedAgain)},
	})
}

// TestMainStartFailedThenNextMain: SyncPod starts the mains one by one and
// ignores a failed StartContainer (kuberuntime_manager.go step 9): the next
// main may start at once, with no postStart hook of the failed one to wait
// for. INV-S3 judged the failed, never-run attempt as if its hook were
// still running.
func TestMainStartFailedThenNextMain(t *testing.T) {
	runCases(t, []invCase{
		{name: "INV-S3/main's first start failed, retried before the next main", id: "INV-S3", clean: true,
			ev: evs(newPod("s3", specOf("Always", 30, "sidecar:proxy", "main:app1+poststart", "main:app2")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).req("app1").at(150).nodeEv(history.RuntimeDown).k(history.ContainerStartFailed, "app1").
				at(1150).nodeEv(history.RuntimeUp).at(5000).req("app1").running("app1").at(5500).postStart("app1").started("app1", true).
				at(5600).up("app2"))},
		{name: "INV-S3/main's start failed, next main started in the same sync", id: "INV-S3", clean: true,
			ev: evs(newPod("s3b", specOf("Always", 30, "sidecar:proxy", "main:app1+poststart", "main:app2")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).req("app1").at(150).k(history.ContainerStartFailed, "app1").at(160).up("app2"))},
		{name: "INV-S3/the next main started while the hook runs", id: "INV-S3", want: Violation,
			ev: evs(newPod("s3c", specOf("Always", 30, "sidecar:proxy", "main:app1+poststart", "main:app2")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).req("app1").running("app1").at(160).up("app2").at(900).postStart("app1"))},
	})
}

// TestInitRerunAfterEveryMainRecordRemoved: when the runtime holds no
// record of any main (every exited record removed, as the harness's
// all-exited container GC does), computeInitContainerActions finds the pod
// not initialized and re-runs the init after the last started sidecar;
// INV-F1 promises no re-run only while a main exists.
func TestInitRerunAfterEveryMainRecordRemoved(t *testing.T) {
	gcAll := newPod("gc", specOf("Always", 30, "sidecar:proxy", "init:setup", "main:app")).at(0).created().at(10).sandbox().
		at(20).up("proxy").at(100).done("setup").at(200).up("app").at(3000).exited("app", 1)
	gcSetupOnly := newPod("gc1", specOf("Always", 30, "sidecar:proxy", "init:setup", "main:app")).at(0).created().at(10).sandbox().
		at(20).up("proxy").at(100).done("setup").at(200).up("app").at(3000).exited("app", 1)
	runCases(t, []invCase{
		{name: "INV-F1/last init re-run after every main record was removed", id: "INV-F1", clean: true,
			ev: evs(gcAll.at(3500).fault(history.FaultBegin, "container-gc", 4).k(history.ContainerRemoved, "app").k(history.ContainerRemoved, "setup").fault(history.FaultEnd, "container-gc", 4).
				at(3600).done("setup").at(3700).up("app"))},
		{name: "INV-F1/init re-run while the main's record remains", id: "INV-F1", want: Violation,
			ev: evs(gcSetupOnly.at(3500).fault(history.FaultBegin, "container-gc", 4).k(history.ContainerRemoved, "setup").fault(history.FaultEnd, "container-gc", 4).
				at(3600).done("setup").at(3700).up("app"))},
	})
}

// TestNeverPodNewSandboxAfterAFailedStart: a Never pod whose main's start
// failed when the runtime went down and lost the sandbox: no main was ever
// created, so the kubelet's no-new-sandbox rule for Never pods does not
// hold it back. INV-F3 counted the failed start as a created main.
func TestNeverPodNewSandboxAfterAFailedStart(t *testing.T) {
	runCases(t, []invCase{
		{name: "INV-F3/Never pod re-initialized after its main's start failed", id: "INV-F3", clean: true,
			ev: evs(newPod("f3", specOf("Never", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).req("app").at(150).nodeEv(history.RuntimeDown).sandboxLost().exited("proxy", 137).k(history.ContainerStartFailed, "app").
				at(1150).nodeEv(history.RuntimeUp).at(2000).sandbox().at(2100).up("proxy").at(2200).up("app"))},
		{name: "INV-F3/Never pod re-initialized after its main ran", id: "INV-F3", want: Violation,
			ev: evs(newPod("f3b", specOf("Never", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).up("app").at(150).nodeEv(history.RuntimeDown).sandboxLost().exited("proxy", 137).exited("app", 137).
				at(1150).nodeEv(history.RuntimeUp).at(2000).sandbox().at(2100).up("proxy").at(2200).up("app"))},
		// The same with every record removed (container GC) before the new
		// sandbox: computePodActions finds no container status and creates
		// it (a triple of harsh, never-sandbox-loss and gc-heavy).
		{name: "INV-F3/Never pod re-initialized after GC removed every record", id: "INV-F3", clean: true,
			ev: evs(newPod("f3c", specOf("Never", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).up("app").at(150).nodeEv(history.RuntimeDown).sandboxLost().exited("proxy", 137).exited("app", 137).
				at(1150).nodeEv(history.RuntimeUp).at(1500).removedC("proxy").removedC("app").at(2000).sandbox().at(2100).up("proxy").at(2200).up("app"))},
		{name: "INV-F3/Never pod re-initialized with one record left", id: "INV-F3", want: Violation,
			ev: evs(newPod("f3d", specOf("Never", 30, "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
				at(20).up("proxy").at(100).up("app").at(150).nodeEv(history.RuntimeDown).sandboxLost().exited("proxy", 137).exited("app", 137).
				at(1150).nodeEv(history.RuntimeUp).at(1500).removedC("proxy").at(2000).sandbox().at(2100).up("proxy").at(2200).up("app"))},
	})
}

// TestPreStopRerunAfterKubeletRestart: a kill the restarted kubelet retries
// runs the preStop hooks again (its killContainer does not know they ran),
// so a sidecar whose hook hangs is signalled at the new kill's budget
// expiry. INV-T9 measured from the retried kill as if the sidecar had no
// hook ("signalled 3.000s late"; 444 per 20,000 lifecycles of a 3 s-grace
// pod with a hanging preStop under the mixed faults), because the attempt
// records the first hook only.
func TestPreStopRerunAfterKubeletRestart(t *testing.T) {
	retried := func(rerun bool) func() []history.Event {
		h := newPod("pr", specOf("Always", 3, "sidecar:mesh+prestop", "main:app")).at(0).created().at(10).sandbox().at(20).up("mesh").
			at(2000).deleted(3).terminating("PodDeleted", 3).prestop("mesh", "PodDeleted").
			at(3000).nodeEv(history.KubeletDown).at(4000).nodeEv(history.KubeletUp).terminating("PodDeleted", 3)
		if rerun {
			h.prestop("mesh", "PodDeleted")
		}
		return evs(h.at(7000).stop("mesh", 2, "PodDeleted").at(7300).exited("mesh", 0).prestopEnd("mesh").phase("Failed").at(7400).removed())
	}
	// The first kill's hook ended before the crash, and the retried kill
	// runs none: 3 s of waiting is late.
	ended := newPod("pe", specOf("Always", 3, "sidecar:mesh+prestop", "main:app")).at(0).created().at(10).sandbox().at(20).up("mesh").
		at(2000).deleted(3).terminating("PodDeleted", 3).prestop("mesh", "PodDeleted").at(2500).prestopEnd("mesh").
		at(3000).nodeEv(history.KubeletDown).at(4000).nodeEv(history.KubeletUp).terminating("PodDeleted", 3).
		at(7000).stop("mesh", 2, "PodDeleted").at(7300).exited("mesh", 0).phase("Failed").at(7400).removed()
	runCases(t, []invCase{
		{name: "INV-T9/hook run again by the retried kill, signalled at its expiry", id: "INV-T9", clean: true, ev: retried(true)},
		// The first hook still running is waited on as well (the
		// reference keeps it; the kubelet runs it again).
		{name: "INV-T9/first hook still running, signalled at the retried kill's expiry", id: "INV-T9", clean: true, ev: retried(false)},
		{name: "INV-T9/no hook left in the retried kill, signalled at its expiry", id: "INV-T9", want: Violation, ev: evs(ended)},
	})
}

// TestShutdownKillForgottenByARestartedKubelet: the shutdown manager learns
// of a graceful node shutdown from logind's PrepareForShutdown signal, sent
// once; a kubelet restarted during the shutdown's kill starts with
// nodeShuttingDownNow false and syncs the pod (neither deleted nor terminal
// in the API) as a live one, restarting its exited sidecar. INV-T10 and R5
// called that restart "during pod termination" (8 to 50 per 50,000
// lifecycles of the sweep's harsh shape: kubelet crashes 300 ms into pod
// kills).
func TestShutdownKillForgottenByARestartedKubelet(t *testing.T) {
	h := func(restart bool) func() []history.Event {
		b := steady("sk", specOf("Always", 30, "sidecar:proxy", "main:app")).at(5000).shutdown(20, 5).
			terminating("NodeShutdown", 15).stop("app", 15, "NodeShutdown").at(5100).exited("app", 0).stop("proxy", 15, "NodeShutdown")
		if restart {
			b.at(5200).nodeEv(history.KubeletDown)
		}
		b.at(5300).exited("proxy", 0)
		if restart {
			b.at(6200).nodeEv(history.KubeletUp)
		}
		return evs(b.at(6300).up("proxy").at(6400).up("app"))
	}
	runCases(t, []invCase{
		{name: "INV-T10/restarted kubelet forgot the shutdown's kill", id: "INV-T10", clean: true, ev: h(true)},
		{name: "INV-R5/restarted kubelet forgot the shutdown's kill", id: "INV-R5", clean: true, ev: h(true)},
		{name: "INV-T10/no restart: starts during the shutdown's kill", id: "INV-T10", want: Violation, ev: h(false)},
		{name: "INV-R5/no restart: sidecar restarted during the shutdown's kill", id: "INV-R5", want: Violation, ev: h(false)},
	})
}

// TestProbeKillHookIntoPodKill: a startup-probe kill's preStop hook hangs
// when the pod is deleted. The kubelet cancels the sync that runs that
// kill and runs the hook again in the pod's kill, so the sidecar is
// signalled at the pod kill's budget expiry; the reference keeps the
// running hook, with the same signal. INV-T9 measured from the deletion
// as if the sidecar had no hook (the sweep's hanging-hooks shape).
func TestProbeKillHookIntoPodKill(t *testing.T) {
	kill := func(hookEnds bool) func() []history.Event {
		h := newPod("ph", specOf("Always", 20, "sidecar:proxy+startup+prestop", "main:app")).at(0).created().at(10).sandbox().
			at(20).req("proxy").running("proxy").at(2000).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe")
		if hookEnds {
			h.at(2500).prestopEnd("proxy")
		}
		return evs(h.at(3000).deleted(20).terminating("PodDeleted", 20).
			at(23000).stop("proxy", 2, "PodDeleted").at(23300).exited("proxy", 0).phase("Failed").at(23400).removed())
	}
	// A deletion with a shorter grace (10 s) than the probe kill's (20 s):
	// the container is stopped at the pod kill's expiry, which INV-T6 must
	// take for the hook's budget (hanging-hooks composed with
	// startup-kills: "3.058s before its budget expired").
	shorter := func(stopAt int64) func() []history.Event {
		return evs(newPod("ph", specOf("Always", 20, "sidecar:proxy+startup+prestop", "main:app")).at(0).created().at(10).sandbox().
			at(20).req("proxy").running("proxy").at(2000).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe").
			at(3000).deleted(10).terminating("PodDeleted", 10).
			at(stopAt).stop("proxy", 2, "PodDeleted").at(stopAt+300).exited("proxy", 0).phase("Failed").at(stopAt + 400).removed())
	}
	runCases(t, []invCase{
		{name: "INV-T9/probe kill's hook still running, signalled at the pod kill's expiry", id: "INV-T9", clean: true, ev: kill(false)},
		{name: "INV-T9/probe kill's hook ended before the deletion, signalled 20 s late", id: "INV-T9", want: Violation, ev: kill(true)},
		{name: "INV-T6/probe kill's hook still running, signalled at a shorter pod kill's expiry", id: "INV-T6", clean: true, ev: shorter(13000)},
		{name: "INV-T6/probe kill's hook still running, signalled before the pod kill's expiry", id: "INV-T6", want: Violation, ev: shorter(8000)},
	})
}

// TestInitRerunAfterGCIsNotTheImageChange: a sidecar whose image never
// pulled has its image changed; then container GC removes the completed
// init "migrate" and, with a running sidecar before it as the latest init
// container with a record, computeInitContainerActions starts migrate
// again. That is the GC's re-run (INV-F2, excused by it), not the image
// change's: INV-U1 called it "image change of logs re-ran init migrate"
// (the sweep's interleaved shape).
func TestInitRerunAfterGCIsNotTheImageChange(t *testing.T) {
	h := func(removed bool) func() []history.Event {
		b := newPod("ug", specOf("Always", 30, "sidecar:proxy", "init:migrate", "sidecar:logs", "main:app")).at(0).created().at(10).sandbox().
			at(20).up("proxy").at(100).req("migrate").running("migrate").at(300).exited("migrate", 0).req("logs").k(history.ContainerStartFailed, "logs").
			at(600).add(history.Event{Kind: history.ContainerImageChanged, Container: "logs", Msg: "fluent:2"})
		if removed {
			b.at(1000).removedC("migrate")
		}
		return evs(b.at(1000).req("migrate").running("migrate").at(1200).exited("migrate", 0).at(1300).up("logs").at(1400).up("app"))
	}
	runCases(t, []invCase{
		{name: "INV-U1/init re-run after its record was removed", id: "INV-U1", clean: true, ev: h(true)},
		{name: "INV-U1/init re-run with its record kept", id: "INV-U1", want: Violation, ev: h(false)},
	})
}

// TestInitRerunAfterGCIsNotTheSidecarsOrTheMains: the kubelet crashed while
// the main and the second sidecar exited; container GC removed their
// records and the completed init "migrate"'s before it came back. With no
// main record left the pod has not initialized
// (HasAnyActiveRegularContainerStarted), and computeInitContainerActions,
// walking back to the running sidecar proxy, starts migrate again: the
// GC's re-run (INV-F2), not an effect of the sidecar's exit (INV-R3) or of
// the main's restart (INV-R4). The sweep's kitchen-sink shape (interleaved
// with gc-heavy) found both checkers blaming it. With migrate's record
// kept, the same re-run is theirs.
func TestInitRerunAfterGCIsNotTheSidecarsOrTheMains(t *testing.T) {
	h := func(removed bool) func() []history.Event {
		b := newPod("rg", specOf("Always", 30, "init:setup", "sidecar:proxy", "init:migrate", "sidecar:logs", "main:app")).at(0).created().at(10).sandbox().
			at(20).done("setup").at(100).up("proxy").at(200).done("migrate").at(300).up("logs").at(400).up("app").
			at(1000).nodeEv(history.KubeletDown).at(1100).exited("app", 0).at(1200).exited("logs", 1).at(1500).removedC("app").removedC("logs")
		if removed {
			b.removedC("migrate")
		}
		return evs(b.at(2000).nodeEv(history.KubeletUp).req("migrate").running("migrate").at(2300).exited("migrate", 0).
			at(2400).up("logs").at(2500).up("app"))
	}
	runCases(t, []invCase{
		{name: "INV-R3/init re-run after its record was removed", id: "INV-R3", clean: true, ev: h(true)},
		{name: "INV-R4/init re-run after its record was removed", id: "INV-R4", clean: true, ev: h(true)},
		{name: "INV-R3/init re-run with its record kept", id: "INV-R3", want: Violation, ev: h(false)},
		{name: "INV-R4/init re-run with its record kept", id: "INV-R4", want: Violation, ev: h(false)},
	})
}

// TestRunningInitRerunAfterGC: an image change reaches regular init setup
// while it runs; it completes, and GC removes its record while no record
// of a later container exists: computeInitContainerActions starts from the
// first init again. INV-U1's "re-ran it after it completed" is the GC's
// re-run then (INV-F2), as for the completed inits above; with the record
// kept it is the image change's.
func TestRunningInitRerunAfterGC(t *testing.T) {
	h := func(removed bool) func() []history.Event {
		b := newPod("ui", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app")).at(0).created().at(10).sandbox().
			at(20).req("setup").running("setup").at(100).add(history.Event{Kind: history.ContainerImageChanged, Container: "setup", Msg: "busybox:2"}).
			at(300).exited("setup", 0)
		if removed {
			b.at(400).removedC("setup")
		}
		return evs(b.at(500).req("setup").running("setup").at(700).exited("setup", 0).at(800).up("proxy").at(900).up("app"))
	}
	runCases(t, []invCase{
		{name: "INV-U1/running init re-run after its record was removed", id: "INV-U1", clean: true, ev: h(true)},
		{name: "INV-U1/running init re-run with its record kept", id: "INV-U1", want: Violation, ev: h(false)},
	})
}

// TestCompletedMainRerunAfterGCAndKubeletRestart: a Never Job's main
// exited 0 and the kubelet began stopping the sidecars (PodCompleted);
// container GC removed the main's record and the kubelet crashed. The
// restarted kubelet forgot that kill (SyncPod's own, decided again only if
// the runtime still says so); with no main record the pod has not
// initialized, so it restarts the exited sidecar and then, with no status
// for the main, starts the main again (ShouldContainerBeRestarted) whatever
// the policy. That is the GC's degradation (INV-R4 excused), and neither a
// restart "during pod termination" (INV-R5, T10) nor after completion
// (INV-R6): the sweep's gc-heavy shape with Jobs found 92-123 of these per
// 8,000 lifecycles. With the main's record kept, the restarted kubelet
// kills the pod again and restarts nothing (computePodActions clears
// InitContainersToStart): the sidecar's restart is INV-R6's (a degradation
// of the kubelet crash).
func TestCompletedMainRerunAfterGCAndKubeletRestart(t *testing.T) {
	h := func(removed bool) func() []history.Event {
		b := newPod("cg", specOf("Never", 30, "sidecar:proxy", "sidecar:logs", "main:app")).at(0).created().at(10).sandbox().
			at(20).up("proxy").at(100).up("logs").at(200).up("app").
			at(1000).exited("app", 0).terminating("PodCompleted", 30).stop("logs", 30, "PodCompleted")
		if removed {
			b.at(1010).removedC("app")
		}
		b.at(1100).nodeEv(history.KubeletDown).at(1300).exited("logs", 0).
			at(2100).nodeEv(history.KubeletUp).req("logs").running("logs")
		if removed {
			b.at(2300).req("app").running("app")
		}
		return evs(b)
	}
	runCases(t, []invCase{
		{name: "INV-R4/main re-run after its record was removed", id: "INV-R4", want: Degradation, ev: h(true)},
		{name: "INV-R5/sidecar restarted after the kill was forgotten", id: "INV-R5", clean: true, ev: h(true)},
		{name: "INV-T10/started after the kill was forgotten", id: "INV-T10", clean: true, ev: h(true)},
		{name: "INV-R6/main re-run after its record was removed", id: "INV-R6", clean: true, ev: h(true)},
		{name: "INV-R6/sidecar restarted with the main's record kept", id: "INV-R6", want: Degradation, ev: h(false)},
	})
}

// TestProbeKillHookRerunAfterKubeletRestart: a startup-probe kill's preStop
// began, the kubelet crashed during it, and the restarted kubelet's prober
// failed the probe again and killed the container anew: the hook runs
// again and the stop's grace is the probe budget (the pod's 20 s) less
// that second hook's run, 19.5 s. INV-P5 measured from the first hook
// (the sweep's harsh shape with startup-kills: "the probe budget gives
// 17.487s"). Without the second hook the first one's run counts.
func TestProbeKillHookRerunAfterKubeletRestart(t *testing.T) {
	h := func(rerun bool) func() []history.Event {
		spec := withProbe(specOf("Always", 20, "sidecar:proxy+startup+prestop", "main:app"), "proxy", "startup", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1})
		b := newPod("pk", spec).at(0).created().at(10).sandbox().
			at(20).req("proxy").running("proxy").
			at(1000).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe").
			at(1010).nodeEv(history.KubeletDown).at(5010).nodeEv(history.KubeletUp)
		if rerun {
			b.at(6010).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe")
		}
		return evs(b.at(6510).prestopEnd("proxy").add(history.Event{Kind: history.ContainerStopRequested, Container: "proxy", Grace: 19_500_000_000, Reason: "StartupProbe"}))
	}
	runCases(t, []invCase{
		{name: "INV-P5/grace after the hook run again", id: "INV-P5", clean: true, ev: h(true)},
		{name: "INV-P5/the same grace after one hook", id: "INV-P5", want: Violation, ev: h(false)},
	})
}

// TestUnknownKillAfterCutProbeKill: a startup-probe kill's preStop began,
// the kubelet crashed during it, the runtime then reported the container
// Unknown, and the restarted kubelet killed it for that, with the pod's
// whole grace and no hook. The kill is the new kubelet's (UnknownState):
// INV-P5 judged it as the first kubelet's probe kill ("the probe budget
// gives 17.668s"; the sweep's pod-kill-refused with startup-kills). With no
// kubelet restart in between, the same stop still counts as the probe's.
func TestUnknownKillAfterCutProbeKill(t *testing.T) {
	h := func(restart bool) func() []history.Event {
		spec := withProbe(specOf("Always", 20, "sidecar:proxy+startup+prestop", "main:app"), "proxy", "startup", history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1})
		b := newPod("uk", spec).at(0).created().at(10).sandbox().
			at(20).req("proxy").running("proxy").
			at(1000).probe("proxy", "startup", "failure").prestop("proxy", "StartupProbe")
		if restart {
			b.at(1300).nodeEv(history.KubeletDown)
		}
		b.at(2000).k(history.ContainerUnknown, "proxy")
		if restart {
			b.at(3300).nodeEv(history.KubeletUp)
		}
		return evs(b.at(3300).stop("proxy", 20, "UnknownState"))
	}
	runCases(t, []invCase{
		{name: "INV-P5/the restarted kubelet's Unknown-state kill", id: "INV-P5", clean: true, ev: h(true)},
		{name: "INV-P5/the same stop within the probe's kill", id: "INV-P5", want: Violation, ev: h(false)},
	})
}

// TestPostStartFailureForgottenByARestartedKubelet: a main's postStart
// failed while the runtime was down, so the kill that follows failed; the
// kubelet crashed, and the restarted one, which knows nothing of the hook,
// publishes the running container Started. A degradation of INV-H1 (the
// sweep's never-sandbox-loss composed with harsh). Without the kubelet
// restart it is one too: startContainer only logs the failed kill and
// returns ErrPostStartHook, and the next sync keeps the container
// (poststart_kill_stop_failed.txt; the sweep's interleaved shape, once
// the reference forgot such a kill). A Started after a kill the runtime
// took is a violation.
func TestPostStartFailureForgottenByARestartedKubelet(t *testing.T) {
	h := func(restart, runtimeDown bool) func() []history.Event {
		b := newPod("ph", specOf("Always", 20, "sidecar:proxy", "main:app+poststart")).at(0).created().at(10).sandbox().
			at(20).up("proxy").at(100).req("app").running("app")
		if runtimeDown {
			b.at(1000).nodeEv(history.RuntimeDown)
		}
		b.at(1100).failedHookKill("app")
		if runtimeDown {
			b.at(2000).nodeEv(history.RuntimeUp)
		}
		if restart {
			b.at(2300).nodeEv(history.KubeletDown).at(3300).nodeEv(history.KubeletUp)
		}
		return evs(b.at(3300).started("app", true).at(9000).probe("proxy", "readiness", "success"))
	}
	runCases(t, []invCase{
		{name: "INV-H1/Started after a kubelet restart forgot the failed hook", id: "INV-H1", want: Degradation, ev: h(true, true)},
		{name: "INV-H1/Started after the kill failed, no restart", id: "INV-H1", want: Degradation, ev: h(false, true)},
		{name: "INV-H1/Started after the kill was sent", id: "INV-H1", want: Violation, ev: h(false, false)},
	})
}

// TestPostStartKillRefusedOrdersNothing: the same forgotten kill for a
// sidecar (INV-S3's Started after a failed hook) and for a main that
// starts before the next main (INV-S3's serial mains: the next start
// follows the refused stop, as SyncPod goes on to the next container once
// startContainer returned; poststart_kill_stop_failed.txt). With the
// runtime up the kill took, and the next main must wait for the exit.
func TestPostStartKillRefusedOrdersNothing(t *testing.T) {
	sidecar := func(runtimeDown bool) func() []history.Event {
		b := newPod("ps", specOf("Always", 20, "sidecar:proxy+poststart", "main:app")).at(0).created().at(10).sandbox().
			at(20).req("proxy").running("proxy")
		if runtimeDown {
			b.at(30).nodeEv(history.RuntimeDown)
		}
		b.at(100).failedHookKill("proxy")
		if runtimeDown {
			b.at(2000).nodeEv(history.RuntimeUp)
		}
		return evs(b.at(2100).started("proxy", true).at(2200).req("app").running("app").started("app", true))
	}
	mains := func(runtimeDown bool) func() []history.Event {
		b := newPod("pm", specOf("Always", 20, "main:app+poststart", "main:worker")).at(0).created().at(10).sandbox().
			at(20).req("app").running("app")
		if runtimeDown {
			b.at(30).nodeEv(history.RuntimeDown)
		}
		b.at(100).failedHookKill("app")
		if runtimeDown {
			b.at(2000).nodeEv(history.RuntimeUp)
		}
		return evs(b.at(2100).req("worker").running("worker"))
	}
	runCases(t, []invCase{
		{name: "INV-S3/sidecar Started after its kill was refused", id: "INV-S3", want: Degradation, ev: sidecar(true)},
		{name: "INV-S3/sidecar Started after its kill was sent", id: "INV-S3", want: Violation, ev: sidecar(false)},
		{name: "INV-S3/next main after the refused kill", id: "INV-S3", clean: true, ev: mains(true)},
		{name: "INV-S3/next main before the exit", id: "INV-S3", want: Violation, ev: mains(false)},
	})
}

// TestRefusedKillThenUnknownKill: a Job main's postStart failed while the
// runtime was down, so the kill that followed was refused and forgotten;
// the runtime then reported the container Unknown and the next sync
// killed it for that, which restarts it whatever the policy (INV-F8): its
// exit 0 under OnFailure is followed by a start (the sweep's
// hook-kill-refused with job-sidecar-crash). The checker judged the
// restart by the refused kill's reason. Had that kill taken (the runtime
// up), its exit 0 ends the main.
func TestRefusedKillThenUnknownKill(t *testing.T) {
	h := func(refused bool) func() []history.Event {
		b := newPod("pu", specOf("OnFailure", 20, "sidecar:proxy", "main:app+poststart")).at(0).created().at(10).sandbox().
			at(20).up("proxy").at(100).req("app").running("app")
		if refused {
			b.at(150).nodeEv(history.RuntimeDown)
		}
		b.at(200).failedHookKill("app")
		if refused {
			b.at(400).k(history.ContainerUnknown, "app").at(1150).nodeEv(history.RuntimeUp).at(1200).stop("app", 20, "UnknownState")
		}
		return evs(b.at(1500).exited("app", 0).at(1600).add(history.Event{Kind: history.ContainerStartRequested, Container: "app", Attempt: 1}).running("app"))
	}
	runCases(t, []invCase{
		{name: "INV-R4/restart after the Unknown kill that followed a refused one", id: "INV-R4", clean: true, ev: h(true)},
		{name: "INV-R4/restart after exit 0 of a kill that took", id: "INV-R4", want: Violation, ev: h(false)},
	})
}

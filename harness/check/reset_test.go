package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

var rulesMeta = &history.Meta{Scenario: "t", Policy: "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits", Backend: "sim"}

// resetSpec: a sidecar and a main whose exit 88 resets the pod, and whose
// exit 42 restarts only it (container policy Never).
func resetSpec(rp string) *history.PodSpec {
	s := specOf(rp, 30, "sidecar:proxy", "main:app")
	s.Main[0].RestartPolicy = "Never"
	s.Main[0].Rules = []history.RestartRule{
		{Action: "RestartAllContainers", Operator: "In", Values: []int32{88}},
		{Action: "Restart", Operator: "In", Values: []int32{42}},
	}
	return s
}

// onFailureMain gives s's main the container policy OnFailure, no rules.
func onFailureMain(s *history.PodSpec) *history.PodSpec {
	s.Main[0].RestartPolicy, s.Main[0].Rules = "OnFailure", nil
	return s
}

func (h *hb) removedC(c string) *hb { return h.k(history.ContainerRemoved, c) }

// resetHistory is a correct reset: app exits 88, proxy is stopped with
// 2 s and removed, then app; then proxy and app start again in order.
func resetHistory() *hb {
	return newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().
		at(20).up("proxy").at(30).up("app").
		at(1000).exited("app", 88).cond("AllContainersRestarting", true).stop("proxy", 2, "RestartAllContainers").
		at(1100).exited("proxy", 137).removedC("proxy").at(1110).removedC("app").
		at(1120).req("proxy").cond("AllContainersRestarting", false).running("proxy").started("proxy", true).
		at(1200).up("app")
}

func ruleCases() []invCase {
	return []invCase{
		{name: "INV-RR1/restart on exit 42 by rule in a Never pod", id: "INV-RR1", clean: true, meta: rulesMeta,
			ev: evs(newPod("a", resetSpec("Never")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 42).at(1010).up("app"))},
		{name: "INV-RR1/restart after exit 0 with container policy Never", id: "INV-RR1", want: Violation, meta: rulesMeta,
			ev: evs(newPod("a", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 0).at(1010).up("app"))},
		// computePodActions: a probe kill follows the container-level
		// restartPolicy, not the pod's, and not the rules.
		{name: "INV-R4/probe-killed main with container policy Never restarted in an Always pod", id: "INV-R4", want: Violation, meta: rulesMeta,
			ev: evs(newPod("p", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 143).at(1010).up("app"))},
		{name: "INV-R4/probe-killed main with container policy Never stays down", id: "INV-R4", clean: true, meta: rulesMeta,
			ev: evs(newPod("p", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 143))},
		{name: "INV-R4/probe-killed main with container policy OnFailure restarted after exit 0 in a Never pod", id: "INV-R4", clean: true, meta: rulesMeta,
			ev: evs(newPod("p", onFailureMain(resetSpec("Never"))).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).probe("app", "liveness", "failure").stop("app", 30, "LivenessProbe").exited("app", 0).at(1010).up("app"))},
		{name: "INV-RA7/correct reset", id: "INV-RA7", clean: true, meta: rulesMeta, ev: evs(resetHistory())},
		{name: "INV-RA7/trigger restarted before the sidecar was removed", id: "INV-RA7", want: Violation, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).stop("proxy", 2, "RestartAllContainers").
				at(1010).req("app").running("app"))},
		{name: "INV-RA4/correct reset", id: "INV-RA4", clean: true, meta: rulesMeta, ev: evs(resetHistory())},
		{name: "INV-RA4/trigger removed first", id: "INV-RA4", want: Violation, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).removedC("app").stop("proxy", 2, "RestartAllContainers").
				at(1100).exited("proxy", 137).removedC("proxy"))},
		// Container GC removed the trigger's exited record during the
		// reset: the runtime's removal, not the kubelet's order (the
		// sweep's kitchen-sink shape, rules-sidecar with gc-heavy).
		{name: "INV-RA4/trigger removed first by container GC", id: "INV-RA4", clean: true, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).stop("proxy", 2, "RestartAllContainers").
				at(1050).fault(history.FaultBegin, "container-gc", 9).removedC("app").fault(history.FaultEnd, "container-gc", 9).
				at(1100).exited("proxy", 137).removedC("proxy").
				at(1120).req("proxy").cond("AllContainersRestarting", false).running("proxy").started("proxy", true).
				at(1200).up("app"))},
		// A runtime restart that kills containers takes the sandbox of a
		// pod being reset: the loss ends the reset's virtual sandbox, which
		// continues the real one the killed attempt ran in.
		{name: "INV-F7/runtime restart that loses the sandbox during a reset", id: "INV-F7", clean: true, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).
				at(1050).nodeEv(history.RuntimeDown).exited("proxy", 137).k(history.SandboxStopped, "").sandboxLost())},
		{name: "INV-F7/runtime restart that kills during a reset, sandbox kept", id: "INV-F7", want: Violation, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).
				at(1050).nodeEv(history.RuntimeDown).exited("proxy", 137))},
		{name: "INV-RA5/correct reset", id: "INV-RA5", clean: true, meta: rulesMeta, ev: evs(resetHistory())},
		{name: "INV-RA5/reset kill with the pod grace and a preStop", id: "INV-RA5", want: Violation, meta: rulesMeta,
			ev: evs(newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
				at(1000).exited("app", 88).cond("AllContainersRestarting", true).prestop("proxy", "RestartAllContainers").stop("proxy", 30, "RestartAllContainers"))},
	}
}

func TestRuleInvariants(t *testing.T) { runCases(t, ruleCases()) }

// TestResetIsANewInitialization: after a reset the start invariants apply
// again in the same sandbox: a main starting before the sidecar started is
// an INV-S5 violation, a correct re-initialization is not.
func TestResetIsANewInitialization(t *testing.T) {
	if fs := checkOne(t, rulesMeta, resetHistory().events(), "INV-S5"); len(fs) != 0 {
		t.Fatalf("correct reset flagged:%s", dump(fs))
	}
	bad := newPod("r", resetSpec("Always")).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
		at(1000).exited("app", 88).cond("AllContainersRestarting", true).stop("proxy", 2, "RestartAllContainers").
		at(1100).exited("proxy", 137).removedC("proxy").at(1110).removedC("app").
		at(1120).req("app").req("proxy").cond("AllContainersRestarting", false)
	fs := checkOne(t, rulesMeta, bad.events(), "INV-S5")
	if len(fs) == 0 || fs[0].Class != Violation {
		t.Fatalf("main started before the sidecar after a reset not caught as INV-S5:%s", dump(fs))
	}
}

// TestMainRemovedByAResetIsNoSuccess: a main that exited 0 on its own (a
// postStart hook failure's kill) while a sidecar's exit 77 reset the pod,
// and was removed by the reset, is published Waiting, last terminated 137
// (RestartingAllContainers: convertToAPIContainerStatuses for a container
// missing while the pod restarts). Deleted before it re-runs, the pod is
// Failed (getPhase: stopped, not succeeded). INV-C2 and T8 called that
// Failed a violation (the sim under the mixed faults and kill-77, 1 in
// 20,000 lifecycles); they already allowed it for a main the reset itself
// killed.
func TestMainRemovedByAResetIsNoSuccess(t *testing.T) {
	spec := specOf("Always", 30, "sidecar:proxy", "main:app+poststart")
	spec.Init[0].Rules = []history.RestartRule{{Action: "RestartAllContainers", Operator: "In", Values: []int32{77}}}
	reset := func(removeApp bool, phase string) func() []history.Event {
		h := newPod("rm", spec).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
			at(100).stop("app", 30, "FailedPostStartHook").
			at(400).exited("proxy", 77).cond("AllContainersRestarting", true).
			at(500).exited("app", 0)
		if removeApp {
			h.removedC("app")
		}
		h.at(600).removedC("proxy").cond("AllContainersRestarting", false).req("proxy").
			at(700).deleted(30).terminating("PodDeleted", 30).at(800).running("proxy").stop("proxy", 30, "PodDeleted").
			at(900).exited("proxy", 0).phase(phase)
		return evs(h)
	}
	runCases(t, []invCase{
		{name: "INV-C2/main removed by the reset: Failed", id: "INV-C2", clean: true, meta: rulesMeta, ev: reset(true, "Failed")},
		{name: "INV-T8/main removed by the reset: Failed", id: "INV-T8", clean: true, meta: rulesMeta, ev: reset(true, "Failed")},
		{name: "INV-C2/main removed by the reset: not Succeeded", id: "INV-C2", want: Violation, meta: rulesMeta, ev: reset(true, "Succeeded")},
		// Its record kept (the reset cut short by the deletion before the
		// removal), the main's own exit 0 decides.
		{name: "INV-C2/main's record kept: Succeeded", id: "INV-C2", clean: true, meta: rulesMeta, ev: reset(false, "Succeeded")},
		{name: "INV-C2/main's record kept: not Failed", id: "INV-C2", want: Violation, meta: rulesMeta, ev: reset(false, "Failed")},
	})
}

// TestMainRemovedByAResetHasNotFinished: in a Never pod, a main that a
// RestartAllContainers reset removed will run again (its record is gone:
// ShouldContainerBeRestarted), so the pod has not completed and the
// sidecars the reset restarts are no INV-R6 restart after completion (the
// sweep's completion-rules shape: the main exited 0 inside the reset).
// Without a reset, a sidecar restarted after the main's exit 0 is one.
func TestMainRemovedByAResetHasNotFinished(t *testing.T) {
	spec := specOf("Never", 30, "sidecar:proxy", "main:app+poststart")
	spec.Init[0].Rules = []history.RestartRule{{Action: "RestartAllContainers", Operator: "In", Values: []int32{77}}}
	reset := evs(newPod("rm", spec).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
		at(100).stop("app", 30, "FailedPostStartHook").
		at(400).exited("proxy", 77).cond("AllContainersRestarting", true).
		at(500).exited("app", 0).removedC("app").
		at(600).removedC("proxy").cond("AllContainersRestarting", false).req("proxy").
		at(700).deleted(30).terminating("PodDeleted", 30).at(800).running("proxy").stop("proxy", 30, "PodDeleted").
		at(900).exited("proxy", 0).phase("Failed"))
	noReset := evs(newPod("rm", spec).at(0).created().at(10).sandbox().at(20).up("proxy").at(30).up("app").
		at(100).stop("app", 30, "FailedPostStartHook").
		at(400).exited("proxy", 1).at(500).exited("app", 0).at(600).req("proxy"))
	runCases(t, []invCase{
		{name: "INV-R6/main removed by a reset: not finished", id: "INV-R6", clean: true, meta: rulesMeta, ev: reset},
		{name: "INV-R6/main exited 0, no reset: finished", id: "INV-R6", want: Violation, meta: rulesMeta, ev: noReset},
	})
}

// initRulesSpec: a regular init with its own restartPolicy Never and a
// rule retrying exit 42 (validateInitContainerRestartPolicy allows both
// under ContainerRestartRules), in a pod with restartPolicy rp.
func initRulesSpec(rp, own string) *history.PodSpec {
	s := specOf(rp, 30, "init:migrate", "sidecar:proxy", "main:app")
	s.Init[0].RestartPolicy = own
	if own == "Never" {
		s.Init[0].Rules = []history.RestartRule{{Action: "Restart", Operator: "In", Values: []int32{42}}}
	}
	return s
}

// TestInitContainerRestartRules: a regular init's rules and own policy
// decide its retry (computeInitContainerActions: ShouldContainerBeRestarted)
// and, when it is not retried, the pod fails whatever the pod's policy
// (getPhase: failedInitializationNotRestartable). In Unknown state only the
// own policy counts. INV-S6 and F8 read the pod's policy alone.
func TestInitContainerRestartRules(t *testing.T) {
	failed := func(rp string, code int32) *hb {
		return newPod("ir", initRulesSpec(rp, "Never")).at(0).created().at(10).sandbox().
			at(20).req("migrate").running("migrate").at(500).exited("migrate", code)
	}
	runCases(t, []invCase{
		{name: "INV-S6/Never pod, init retried on exit 42 by its rule", id: "INV-S6", clean: true, meta: rulesMeta,
			ev: evs(failed("Never", 42).at(600).req("migrate").running("migrate").at(900).exited("migrate", 0).at(1000).up("proxy").at(1100).up("app"))},
		{name: "INV-S6/Never pod, init retried on exit 1, which no rule matches", id: "INV-S6", want: Violation, meta: rulesMeta,
			ev: evs(failed("Never", 1).at(600).req("migrate").running("migrate"))},
		{name: "INV-S6/Always pod, init's own Never: not retried, the pod fails", id: "INV-S6", clean: true, meta: rulesMeta,
			ev: evs(failed("Always", 1).at(600).phase("Failed"))},
		{name: "INV-S6/Always pod, init's own Never: retried", id: "INV-S6", want: Violation, meta: rulesMeta,
			ev: evs(failed("Always", 1).at(600).req("migrate").running("migrate"))},
		// Without the gate the container's policy is not read.
		{name: "INV-S6/Always pod without the gate: retried", id: "INV-S6", clean: true,
			ev: evs(failed("Always", 1).at(600).req("migrate").running("migrate").at(900).exited("migrate", 0).at(1000).up("proxy").at(1100).up("app"))},
		{name: "INV-F8/Never pod, init's own OnFailure in Unknown state: recreated", id: "INV-F8", clean: true, meta: rulesMeta,
			ev: evs(newPod("iu", initRulesSpec("Never", "OnFailure")).at(0).created().at(10).sandbox().
				at(20).req("migrate").running("migrate").at(300).k(history.ContainerUnknown, "migrate").stop("migrate", 30, "UnknownState").
				at(400).exited("migrate", 137).at(500).req("migrate").running("migrate"))},
	})
}

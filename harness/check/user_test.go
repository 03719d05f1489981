package check

import (
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

func (h *hb) serving(c string) *hb {
	return h.add(history.Event{Kind: history.ContainerServing, Container: c, Value: true})
}
func (h *hb) appStarted(c string, ok bool) *hb {
	return h.add(history.Event{Kind: history.ContainerAppStarted, Container: c, Value: ok})
}
func (h *hb) exitedReason(c string, code int32, reason string) *hb {
	return h.add(history.Event{Kind: history.ContainerExited, Container: c, Code: code, Reason: reason})
}

// The shapes of the user-level tests: a mesh-style service (proxy + app)
// and a Job with a log shipper, as the native design, a wait-wrapper, a
// hold-until-proxy-starts, a prestop-sleep and a job-quit-signal run them.
var (
	svcNative  = func() *history.PodSpec { return specOf("Always", 30, "sidecar:proxy+startup+ready", "main:app") }
	svcWrapped = func() *history.PodSpec { return specOf("Always", 30, "main:app+waits", "main:proxy+ready+intent") }
	svcHold    = func() *history.PodSpec {
		return specOf("Always", 30, "main:proxy+ready+poststart+prestop+intent", "main:app")
	}
	jobNative  = func() *history.PodSpec { return specOf("Never", 10, "sidecar:shipper", "main:main") }
	jobWrapped = func() *history.PodSpec { return specOf("Never", 10, "main:main+waits", "main:shipper+intent") }
)

// nativeSvc is a service pod under kep753: the app starts once the proxy
// served (its startup probe passed), and is deleted at 10 s.
func nativeSvc() *hb {
	return newPod("svc", svcNative()).at(0).created().at(10).sandbox().
		at(20).req("proxy").running("proxy").at(1020).serving("proxy").probe("proxy", "startup", "success").started("proxy", true).
		req("app").at(1200).running("app").started("app", true).ready("app", true)
}

func userCases() []invCase {
	return []invCase{
		// app-never-without-proxy
		{name: "USER-APP-PROXY/native: the app starts after the proxy served", id: "USER-APP-PROXY", clean: true,
			ev: evs(nativeSvc().at(10000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").
				at(12000).exited("app", 0).stop("proxy", 28, "PodDeleted").at(13000).exited("proxy", 0))},
		{name: "USER-APP-PROXY/none: the app starts before the proxy serves", id: "USER-APP-PROXY", want: Unmet,
			ev: evs(newPod("svc", svcNative()).at(0).created().at(10).sandbox().
				at(20).req("proxy").req("app").at(200).running("proxy").running("app").at(1200).serving("proxy"))},
		{name: "USER-APP-PROXY/native: an OOM-killed proxy leaves the app without it until it serves again", id: "USER-APP-PROXY", want: Unmet,
			ev: evs(nativeSvc().at(5000).exitedReason("proxy", 137, "OOMKilled").req("proxy").at(5200).running("proxy").at(6200).serving("proxy"))},
		{name: "USER-APP-PROXY/native: a failed readiness of the proxy while the app runs", id: "USER-APP-PROXY", want: Unmet,
			ev: evs(nativeSvc().at(5000).probe("proxy", "readiness", "failure").at(8000).probe("proxy", "readiness", "success"))},
		{name: "USER-APP-PROXY/native: app and proxy die together at power-off", id: "USER-APP-PROXY", clean: true,
			ev: evs(nativeSvc().at(5000).nodeEv(history.NodeDown).exited("proxy", 137).exited("app", 137).sandboxLost())},
		{name: "USER-APP-PROXY/kubelet evidence when the runtime does not report serving", id: "USER-APP-PROXY", clean: true,
			ev: evs(newPod("svc", svcNative()).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(1020).probe("proxy", "startup", "success").started("proxy", true).
				req("app").at(1200).running("app"))},
		{name: "USER-APP-PROXY/wait-wrapper: the wrapper execs the app once the proxy serves", id: "USER-APP-PROXY", clean: true,
			ev: evs(newPod("svc", svcWrapped()).at(0).created().at(10).sandbox().
				at(20).req("app").at(200).running("app").req("proxy").at(400).running("proxy").
				at(1400).serving("proxy").at(2200).appStarted("app", true))},
		{name: "USER-APP-PROXY/wait-wrapper: the wait timed out and the app started anyway", id: "USER-APP-PROXY", want: Unmet,
			ev: evs(newPod("svc", svcWrapped()).at(0).created().at(10).sandbox().
				at(20).req("app").at(200).running("app").req("proxy").at(400).running("proxy").
				at(15200).appStarted("app", false).at(20000).serving("proxy"))},
		{name: "USER-APP-PROXY/hold-until-proxy-starts: the app starts after the proxy's postStart", id: "USER-APP-PROXY", clean: true,
			ev: evs(newPod("svc", svcHold()).at(0).created().at(10).sandbox().
				at(20).req("proxy").at(200).running("proxy").at(1200).serving("proxy").postStart("proxy").req("app").at(1400).running("app"))},
		{name: "USER-APP-PROXY/hold-until-proxy-starts: a kubelet restart during the postStart starts the app early", id: "USER-APP-PROXY", want: Unmet,
			ev: evs(newPod("svc", svcHold()).at(0).created().at(10).sandbox().
				at(20).req("proxy").at(200).running("proxy").at(300).nodeEv(history.KubeletDown).at(500).nodeEv(history.KubeletUp).
				req("app").at(700).running("app").at(1200).serving("proxy"))},

		// proxy-outlives-app
		{name: "USER-PROXY-OUTLIVES/native: reverse-order termination", id: "USER-PROXY-OUTLIVES", clean: true,
			ev: evs(nativeSvc().at(10000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").
				at(12000).exited("app", 0).stop("proxy", 28, "PodDeleted").at(13000).exited("proxy", 0))},
		{name: "USER-PROXY-OUTLIVES/prestop-sleep: the app drains longer than the proxy's sleep", id: "USER-PROXY-OUTLIVES", want: Unmet,
			ev: evs(newPod("svc", specOf("Always", 30, "main:app", "main:proxy+prestop+intent")).at(0).created().at(10).sandbox().
				at(20).up("app").up("proxy").at(100).serving("proxy").
				at(10000).deleted(30).terminating("PodDeleted", 30).prestop("proxy", "PodDeleted").stop("app", 30, "PodDeleted").
				at(15000).prestopEnd("proxy").stop("proxy", 25, "PodDeleted").at(15100).exited("proxy", 0).at(18000).exited("app", 0))},
		{name: "USER-PROXY-OUTLIVES/power-off: no ordering", id: "USER-PROXY-OUTLIVES", want: Unmet,
			ev: evs(nativeSvc().at(5000).nodeEv(history.NodeDown).exited("proxy", 137).exited("app", 137).sandboxLost())},
		{name: "USER-PROXY-OUTLIVES/graceful exits at the same instant are not a failure", id: "USER-PROXY-OUTLIVES", clean: true,
			ev: evs(nativeSvc().at(10000).deleted(30).terminating("PodDeleted", 30).stop("app", 30, "PodDeleted").stop("proxy", 30, "PodDeleted").
				at(12000).exited("proxy", 0).exited("app", 0))},
		{name: "USER-PROXY-OUTLIVES/both SIGKILLed when the grace ran out", id: "USER-PROXY-OUTLIVES", want: Unmet,
			ev: evs(nativeSvc().at(10000).deleted(2).terminating("PodDeleted", 2).stop("app", 2, "PodDeleted").stop("proxy", 2, "PodDeleted").
				at(12000).killed("proxy").exited("proxy", 137).killed("app").exited("app", 137))},

		// job-completes
		{name: "USER-JOB-COMPLETES/native: the sidecars are stopped once the main finished", id: "USER-JOB-COMPLETES", clean: true,
			ev: evs(newPod("job", jobNative()).at(0).created().at(10).sandbox().at(20).up("shipper").serving("shipper").up("main").
				at(5000).exited("main", 0).terminating("PodCompleted", 10).stop("shipper", 10, "PodCompleted").at(5300).exited("shipper", 0).
				phase("Succeeded").at(5400).removed())},
		{name: "USER-JOB-COMPLETES/wait-wrapper: the shipper keeps the finished Job running", id: "USER-JOB-COMPLETES", want: Unmet,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").serving("shipper").
				at(1020).appStarted("main", true).at(5000).exited("main", 0).at(60000).nodeEv(history.KubeletUp))},
		{name: "USER-JOB-COMPLETES/job-quit-signal: the main tells the shipper to quit", id: "USER-JOB-COMPLETES", clean: true,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").serving("shipper").
				at(1020).appStarted("main", true).at(5000).exited("main", 0).exited("shipper", 0).phase("Succeeded").at(60000).removed())},
		{name: "USER-JOB-COMPLETES/job-quit-signal: an OOM-killed main never signals and the Job hangs", id: "USER-JOB-COMPLETES", want: Unmet,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").serving("shipper").
				at(1020).appStarted("main", true).at(5000).exitedReason("main", 137, "OOMKilled").at(60000).nodeEv(history.KubeletUp))},
		{name: "USER-JOB-COMPLETES/wait-wrapper: the main waits for a shipper that died and will not restart", id: "USER-JOB-COMPLETES", want: Unmet,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").
				at(300).exitedReason("shipper", 137, "OOMKilled").at(60000).nodeEv(history.KubeletUp))},
		{name: "USER-JOB-COMPLETES/wait-wrapper: an OOM-killed shipper under Never fails the Job whose main succeeded", id: "USER-JOB-COMPLETES", want: Unmet,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").serving("shipper").
				at(1020).appStarted("main", true).at(3000).exitedReason("shipper", 137, "OOMKilled").at(5000).exited("main", 0).phase("Failed").at(5100).removed())},
		{name: "USER-JOB-COMPLETES/native: the shipper's exit code does not decide the phase", id: "USER-JOB-COMPLETES", clean: true,
			ev: evs(newPod("job", jobNative()).at(0).created().at(10).sandbox().at(20).up("shipper").serving("shipper").up("main").
				at(5000).exited("main", 0).terminating("PodCompleted", 10).stop("shipper", 10, "PodCompleted").at(5300).exited("shipper", 143).
				phase("Succeeded").at(5400).removed())},
		{name: "USER-JOB-COMPLETES/a history that stops before the deadline judges nothing", id: "USER-JOB-COMPLETES", clean: true,
			ev: evs(newPod("job", jobWrapped()).at(0).created().at(10).sandbox().at(20).up("main").up("shipper").serving("shipper").
				at(1020).appStarted("main", true).at(5000).exited("main", 0))},
	}
}

func TestUserGuarantees(t *testing.T) { runCases(t, userCases()) }

// User-level findings are Unmet, attributed to the fault that can have
// caused them, and never violations: they change no verdict.
func TestUserGuaranteesChangeNoVerdict(t *testing.T) {
	ev := newPod("svc", svcNative()).at(0).created().at(10).sandbox().
		at(20).req("proxy").req("app").at(200).running("proxy").running("app").at(1200).serving("proxy").events()
	unmet := map[string][]string{} // what the run hook sees (PodVerdict.Unmet → pods.jsonl)
	rep := CheckEvents(append([]history.Event{{Kind: history.RunMeta, Meta: testMeta}}, ev...), Workers(1),
		OnPod(func(_ *history.Meta, pod string, _ []history.Event, v PodVerdict) { unmet[pod] = v.Unmet }))
	row := rep.Row("USER-APP-PROXY")
	if row == nil || row.Unmet != 1 || row.Violations != 0 || row.Level != User {
		t.Fatalf("row: %+v", row)
	}
	if rep.Violations() != 0 || rep.ViolatingPods != 0 {
		for _, f := range rep.Findings {
			if f.Class == Violation && strings.HasPrefix(f.ID, "USER-") {
				t.Errorf("user-level violation: %v", f)
			}
		}
	}
	if got := unmet["default/svc"]; len(got) != 1 || got[0] != "USER-APP-PROXY" {
		t.Errorf("PodVerdict.Unmet = %v", unmet)
	}
}

// The attribution names the fault whose window holds the offending event:
// an oom-kill of the proxy.
func TestUserFindingAttributed(t *testing.T) {
	ev := nativeSvc().at(5000).fault(history.FaultBegin, "oom-kill", 7).exitedReason("proxy", 137, "OOMKilled").
		fault(history.FaultEffect, "oom-kill", 7).fault(history.FaultEnd, "oom-kill", 7).
		req("proxy").at(5200).running("proxy").at(6200).serving("proxy").events()
	fs := checkOne(t, testMeta, ev, "USER-APP-PROXY")
	if len(fs) != 1 || fs[0].Class != Unmet || fs[0].Fault == nil || fs[0].Fault.Name != "oom-kill" {
		t.Fatalf("findings: %s", dump(fs))
	}
}

package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// Cases for the events of issue 16 D's vocabulary: a failed postStart
// hook, a container the runtime reports Unknown.

func (h *hb) postStartFailed(c string) *hb {
	return h.add(history.Event{Kind: history.ContainerPostStartDone, Container: c, Value: false, Msg: "FailedPostStartHook"})
}
func (h *hb) unknown(c string) *hb { return h.k(history.ContainerUnknown, c) }

// hookPod: a sidecar and two mains, app with postStart and preStop.
func hookPod() *history.PodSpec {
	return specOf("Always", 10, "sidecar:proxy", "main:app+poststart+prestop", "main:worker")
}

// failedPostStart: app's first postStart fails at 1 s; the kubelet runs its
// preStop, stops it, and only after its exit starts it again and then
// worker.
func failedPostStart() *hb {
	h := newPod("h", hookPod()).at(0).created().at(10).sandbox().at(20).up("proxy").cond("Initialized", true)
	h.at(100).req("app").running("app").at(1000).postStartFailed("app").prestop("app", "FailedPostStartHook").
		at(1500).prestopEnd("app").stop("app", 10, "FailedPostStartHook").at(1600).exited("app", 0)
	return h.at(1600).req("app").running("app").at(1700).postStart("app").started("app", true).ready("app", true).at(1800).up("worker")
}

var extraVocab []invCase

func vocabCases() []invCase {
	return append(extraVocab, []invCase{
		{name: "INV-H1/a failed postStart kill runs preStop first", id: "INV-H1", clean: true, ev: evs(failedPostStart())},
		{name: "INV-H1/a failed postStart kill without preStop", id: "INV-H1", want: Violation,
			ev: func() []history.Event {
				ev := failedPostStart().events()
				ev = drop(ev, at(ev, history.ContainerPreStopEnd, "app"))
				return drop(ev, at(ev, history.ContainerPreStopBegin, "app"))
			}},
		{name: "INV-H1/Started published after the postStart hook failed", id: "INV-H1", want: Violation,
			ev: func() []history.Event {
				ev := failedPostStart().events()
				i := at(ev, history.ContainerPostStartDone, "app")
				return insertBefore(ev, i+1, history.Event{Kind: history.ContainerStarted, Container: "app", Value: true})
			}},
		{name: "INV-S3/the next main waits for the exit of a main whose postStart failed", id: "INV-S3", clean: true, ev: evs(failedPostStart())},
		{name: "INV-S3/the next main starts after a failed postStart, before the exit", id: "INV-S3", want: Violation,
			ev: func() []history.Event {
				ev := failedPostStart().events()
				// worker's first start moved to right after app's failed hook
				return moveBefore(ev, at(ev, history.ContainerStartRequested, "worker"), at(ev, history.ContainerPreStopBegin, "app"))
			}},
		{name: "INV-S3/a sidecar whose postStart failed is not Started", id: "INV-S3", want: Violation,
			ev: evs(newPod("h", specOf("Always", 10, "sidecar:proxy+poststart", "main:app")).at(0).created().at(10).sandbox().
				at(20).req("proxy").running("proxy").at(500).postStartFailed("proxy").started("proxy", true).at(600).up("app"))},
		// A main the runtime reports Unknown before the kill is not in the
		// kubelet's running pod: the sidecars do not wait for it.
		{name: "INV-T3/a main reported Unknown before the kill is not waited for", id: "INV-T3", clean: true,
			ev: evs(steady("u", specOf("Always", 10, "sidecar:proxy", "main:app")).at(5000).unknown("app").
				at(6000).deleted(10).terminating("PodDeleted", 10).stopExit("proxy", 10, "PodDeleted"))},
		{name: "INV-T3/a main running at the kill is waited for", id: "INV-T3", want: Violation,
			ev: evs(steady("u", specOf("Always", 10, "sidecar:proxy", "main:app")).
				at(6000).deleted(10).terminating("PodDeleted", 10).stopExit("proxy", 10, "PodDeleted").at(6500).stopExit("app", 10, "PodDeleted"))},
		{name: "INV-T3/a main reported Unknown during the kill is still waited for", id: "INV-T3", want: Violation,
			ev: evs(steady("u", specOf("Always", 10, "sidecar:proxy", "main:app")).
				at(6000).deleted(10).terminating("PodDeleted", 10).stop("app", 10, "PodDeleted").at(6100).unknown("app").stopExit("proxy", 10, "PodDeleted").at(6500).exited("app", 137))},
	}...)
}

func TestVocabularyInvariants(t *testing.T) { runCases(t, vocabCases()) }

func init() {
	extraVocab = append(extraVocab,
		// A main whose restart was cut (record left Created) while the
		// only sidecar is down: the API shows every main Waiting and the
		// kubelet publishes Initialized=False (HasAnyRegularContainerStarted
		// needs a Running or Terminated main).
		invCase{name: "INV-P2/Initialized False while every main waits in a cut restart", id: "INV-P2", clean: true,
			ev: evs(steady("w", specOf("Always", 10, "sidecar:proxy", "main:app")).at(3000).exited("app", 0).req("app").
				at(3100).k(history.ContainerStartFailed, "app").at(3200).exited("proxy", 1).started("proxy", false).cond("Initialized", false))},
		// A sidecar the runtime reports Unknown while the kubelet is down:
		// the new kubelet publishes it not Started and kills it
		// (UnknownState is its own reason).
		invCase{name: "INV-F1/a sidecar reported Unknown across a kubelet restart", id: "INV-F1", clean: true,
			ev: evs(steady("f", specOf("Always", 10, "sidecar:proxy", "main:app")).at(3000).nodeEv(history.KubeletDown).
				at(3500).unknown("proxy").at(4000).nodeEv(history.KubeletUp).started("proxy", false).stop("proxy", 10, "UnknownState"))},
		invCase{name: "INV-F1/a Started sidecar flaps to false across a kubelet restart", id: "INV-F1", want: Violation,
			ev: evs(steady("f", specOf("Always", 10, "sidecar:proxy", "main:app")).at(3000).nodeEv(history.KubeletDown).
				at(4000).nodeEv(history.KubeletUp).started("proxy", false))},
		// The same with a second main whose image was never pulled: it
		// never started, so it too is Waiting (a triple of
		// shutdown-refused, two-mains and short-lived).
		invCase{name: "INV-P2/Initialized False while one main waits in a cut restart and one never started", id: "INV-P2", clean: true,
			ev: evs(newPod("w", specOf("Always", 10, "sidecar:proxy", "main:worker", "main:app")).at(0).created().at(10).sandbox().at(20).up("proxy").
				at(100).cond("Initialized", true).at(110).k(history.ContainerStartFailed, "worker").at(120).up("app").
				at(3000).exited("app", 0).req("app").at(3100).k(history.ContainerStartFailed, "app").
				at(3200).exited("proxy", 1).started("proxy", false).cond("Initialized", false))},
		invCase{name: "INV-P2/Initialized False while a main runs", id: "INV-P2", want: Violation,
			ev: evs(steady("w", specOf("Always", 10, "sidecar:proxy", "main:app")).at(3200).exited("proxy", 1).started("proxy", false).cond("Initialized", false))},
	)
}

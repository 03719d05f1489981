package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// A sidecar start the runtime refused (runtime restart, kill-containers)
// never ran: the readiness result of the next attempt, after its startup
// probe passed, is not "before the startup probe succeeded". The sim
// wrote this shape in scenarios/debate-2019.yaml (trial 3 of 10, pod
// mesh-18); INV-P5 reported a violation on it.
func TestP5IgnoresAttemptsThatNeverRan(t *testing.T) {
	spec := specOf("Always", 30, "init:setup", "sidecar:proxy+startup+ready", "main:app")
	runCases(t, []invCase{
		{name: "INV-P5/a refused start, then a new sandbox", id: "INV-P5", clean: true,
			ev: evs(newPod("p5", spec).at(0).created().at(10).sandbox().at(20).done("setup").req("proxy").
				at(30).add(history.Event{Kind: history.ContainerStartFailed, Container: "proxy", Msg: "runtime restarted"}).sandboxLost().
				at(2000).sandbox().done("setup").req("proxy").at(2500).running("proxy").
				at(4500).probe("proxy", "startup", "success").started("proxy", true).probe("proxy", "readiness", "success").ready("proxy", true))},
		{name: "INV-P5/readiness of the running attempt before its startup probe passed", id: "INV-P5", want: Violation,
			ev: evs(newPod("p5", spec).at(0).created().at(10).sandbox().at(20).done("setup").req("proxy").
				at(30).add(history.Event{Kind: history.ContainerStartFailed, Container: "proxy", Msg: "runtime restarted"}).sandboxLost().
				at(2000).sandbox().done("setup").req("proxy").at(2500).running("proxy").
				at(3500).probe("proxy", "readiness", "success").at(4500).probe("proxy", "startup", "success"))},
	})
}

package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// realisticSpec: one init, two sidecars with startup probes and preStop
// hooks, one main container with readiness and preStop.
func realisticSpec() *history.PodSpec {
	return specOf("Always", 30, "init:setup", "sidecar:proxy+startup+ready+live+prestop", "sidecar:log+startup+prestop", "main:app+ready+prestop")
}

// realistic is a correct kep753 lifecycle: init, two sidecars started in
// order behind their startup probes (proxy's first probe fails), the main
// container, a kubelet restart in the middle that re-runs nothing, then a
// deletion with grace and reverse-order termination.
func realistic() *hb {
	h := newPod("web-0", realisticSpec())
	h.at(0).created().at(5).scheduled().at(7).phase("Pending").at(10).sandbox()
	h.at(12).done("setup")
	h.at(301).req("proxy").at(400).running("proxy").at(600).probe("proxy", "startup", "failure")
	h.at(800).probe("proxy", "startup", "success").started("proxy", true)
	h.at(801).req("log").at(900).running("log").ready("proxy", true)
	h.at(1100).probe("log", "startup", "success").started("log", true).ready("log", true).cond("Initialized", true)
	h.at(1101).req("app").at(1200).running("app").started("app", true).phase("Running")
	h.at(1500).ready("app", true).cond("ContainersReady", true).cond("Ready", true)
	// Kubelet restart: nothing is re-run, nothing flaps.
	h.at(10000).fault(history.FaultBegin, "kubelet-crash", 1).nodeEv(history.KubeletDown).fault(history.FaultEffect, "kubelet-crash", 1)
	h.at(12000).nodeEv(history.KubeletUp).fault(history.FaultEnd, "kubelet-crash", 1)
	h.at(13000).probe("proxy", "liveness", "success")
	// Deletion: preStops together, main first, then log, then proxy.
	h.at(20000).deleted(30).terminating("PodDeleted", 30).prestop("app", "PodDeleted").prestop("log", "PodDeleted").prestop("proxy", "PodDeleted")
	h.at(20100).ready("app", false).cond("Ready", false)
	h.at(20500).prestopEnd("log").prestopEnd("proxy")
	h.at(21000).prestopEnd("app").stop("app", 29, "PodDeleted")
	h.at(22000).exited("app", 0).stop("log", 28, "PodDeleted")
	h.at(22500).exited("log", 0).stop("proxy", 27, "PodDeleted")
	h.at(23000).exited("proxy", 0)
	h.at(23100).phase("Succeeded").at(23200).k(history.SandboxStopped, "").at(23500).removed()
	return h
}

func TestRealisticHistoryHasNoFindings(t *testing.T) {
	ev := realistic().events()
	if fs := checkAll(t, testMeta, ev); len(fs) != 0 {
		t.Fatalf("false positives on a correct history:%s", dump(fs))
	}
	rep := CheckEvents(withRun(ev))
	if rep.Pods != 1 || rep.Valid != Valid || len(rep.Findings) != 0 {
		t.Fatalf("report: pods=%d valid=%s findings:%s", rep.Pods, rep.Valid, dump(rep.Findings))
	}
}

// withRun frames pod events as a run (run.meta ... run.end).
func withRun(ev []history.Event) []history.Event {
	out := []history.Event{{Kind: history.RunMeta, Meta: testMeta}}
	out = append(out, ev...)
	return append(out, history.Event{T: ev[len(ev)-1].T, Kind: history.RunEnd, Msg: "complete"})
}

package check

import (
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// attributionPod is a pod with an init container, a sidecar and a main,
// all up by 0.3 s, deleted at 20 s. With sidecarsWithMains the deletion
// signals the sidecar together with the main (the sidecars-with-mains bug
// replica: INV-T3 at 20 s); otherwise in order. faults adds node or pod
// events before the deletion; reinit, if set, adds them and a
// re-initialization of its own.
func attributionPod(sidecarsWithMains bool, faults func(h *hb)) []history.Event {
	h := newPod("web-0", specOf("Always", 30, "init:setup", "sidecar:proxy", "main:app"))
	h.at(0).created().at(5).scheduled().at(10).sandbox()
	h.at(50).done("setup")
	h.at(100).up("proxy").cond("Initialized", true)
	h.at(300).up("app").cond("Ready", true)
	if faults != nil {
		faults(h)
	}
	h.at(20000).deleted(30).terminating("PodDeleted", 30)
	if sidecarsWithMains {
		h.stop("app", 30, "PodDeleted").stop("proxy", 30, "PodDeleted")
		h.at(20100).exited("proxy", 0).at(20500).exited("app", 0)
	} else {
		h.stop("app", 30, "PodDeleted").at(20500).exited("app", 0).stop("proxy", 30, "PodDeleted").at(20600).exited("proxy", 0)
	}
	h.at(21000).phase("Succeeded").k(history.SandboxStopped, "").removed()
	return h.events()
}

// kubeletCrash crashes the pod's node's kubelet from..to (ms).
func kubeletCrash(from, to int64) func(h *hb) {
	return func(h *hb) {
		h.at(from).fault(history.FaultBegin, "kubelet-crash", 1).nodeEv(history.KubeletDown).fault(history.FaultEffect, "kubelet-crash", 1)
		h.at(to).nodeEv(history.KubeletUp).fault(history.FaultEnd, "kubelet-crash", 1)
	}
}

// TestAttribution: a finding is attributed to a fault only when the fault
// can have caused it: the fault touched the pod, its node or the cluster,
// took effect, and its window contains the offending event. Otherwise it
// is unattributed, and still counts as a violation.
func TestAttribution(t *testing.T) {
	cases := []struct {
		name string
		ev   []history.Event
		id   string // the finding looked at
		at   int64  // its time, ms
		// fault is the attribution wanted, Unattributed for none.
		fault string
		class Class
	}{
		{
			// Issue 18: 30 INV-T3 findings of the deletion bug were put in
			// the kubelet-crash column because the crash was the nearest
			// preceding fault, though it was over 8 s before the deletion.
			name: "deletion bug after a kubelet crash long over",
			ev:   attributionPod(true, kubeletCrash(10000, 12000)),
			id:   "INV-T3", at: 20000, fault: Unattributed, class: Violation,
		},
		{
			name: "deletion bug without any fault",
			ev:   attributionPod(true, nil),
			id:   "INV-T3", at: 20000, fault: Unattributed, class: Violation,
		},
		{
			// The kubelet came back 0.5 s before the deletion and is still
			// resyncing (settle): the crash may have caused it.
			name: "deletion bug right after the kubelet came back",
			ev:   attributionPod(true, kubeletCrash(19000, 19500)),
			id:   "INV-T3", at: 20000, fault: "kubelet-crash", class: Violation,
		},
		{
			name: "a kubelet crash that did not take effect",
			ev: attributionPod(true, func(h *hb) {
				h.at(19000).fault(history.FaultBegin, "kubelet-crash", 2).fault(history.FaultNotApplied, "kubelet-crash", 2)
			}),
			id: "INV-T3", at: 20000, fault: Unattributed, class: Violation,
		},
		{
			// The GC removed this pod's init record: its effect lasts
			// (a removed record stays removed), but a deletion after it is
			// a cause of its own.
			name: "deletion bug after a container GC of the pod",
			ev: attributionPod(true, func(h *hb) {
				h.at(15000).fault(history.FaultBegin, "container-gc", 3).k(history.ContainerRemoved, "setup").fault(history.FaultEffect, "container-gc", 3).fault(history.FaultEnd, "container-gc", 3)
			}),
			id: "INV-T3", at: 20000, fault: Unattributed, class: Violation,
		},
		{
			// A runtime restart that killed the containers is over at
			// 13 s, but it forced the re-initialization that goes wrong
			// after the restart backoff, at 19 s: its finding is the
			// runtime restart's. The correct deletion after it adds none.
			name: "re-initialization a backoff after a runtime restart",
			ev: attributionPod(false, func(h *hb) {
				h.at(12000).fault(history.FaultBegin, "runtime-restart", 4).nodeEv(history.RuntimeDown).sandboxLost().fault(history.FaultEffect, "runtime-restart", 4)
				h.at(13000).nodeEv(history.RuntimeUp).fault(history.FaultEnd, "runtime-restart", 4)
				// The main starts before the sidecar.
				h.at(19000).sandbox().done("setup").up("app").up("proxy")
			}),
			id: "INV-F3", at: 19000, fault: "runtime-restart", class: Violation,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := CheckEvents(withRun(tc.ev))
			var f *Finding
			for i := range rep.Findings {
				if x := &rep.Findings[i]; x.ID == tc.id && x.T == tc.at*ms1 {
					f = x
				}
			}
			if f == nil {
				t.Fatalf("no %s finding at %d ms:%s", tc.id, tc.at, dump(rep.Findings))
			}
			if f.Class != tc.class || f.FaultName() != tc.fault {
				t.Errorf("%s: class %s, attributed to %s; want %s, %s", f, f.Class, f.FaultName(), tc.class, tc.fault)
			}
			if tc.fault == Unattributed && f.Fault != nil {
				t.Errorf("unattributed finding names a fault: %+v", f.Fault)
			}
			// The matrix counts it in its fault's column, and it counts as
			// a violation either way.
			found := false
			for _, c := range rep.Matrix {
				if c.ID == tc.id && c.Fault == tc.fault && c.Violations > 0 {
					found = true
				}
				if c.ID == tc.id && c.Fault != tc.fault {
					t.Errorf("matrix cell %+v, want only the %s column", c, tc.fault)
				}
			}
			if !found || rep.Row(tc.id).Violations == 0 || rep.Violations() == 0 {
				t.Errorf("not counted: matrix %+v, row %+v", rep.Matrix, rep.Row(tc.id))
			}
		})
	}
}

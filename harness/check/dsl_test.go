package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// A tiny DSL for pod histories: newPod(name, spec).at(ms).created()...
// Times are in milliseconds of virtual time; every call appends one event
// (or a few, for the composite helpers) at the current time.

const ms1 = int64(1e6) // one millisecond in ns

type hb struct {
	pod, node string
	now       int64
	spec      *history.PodSpec
	ev        []history.Event
}

// specOf builds a spec from "role:name+flag+flag" words, e.g.
// specOf("Always", 30, "init:setup", "sidecar:proxy+startup+prestop", "main:app").
// Flags: startup, ready, live, poststart, prestop, intent (a user sidecar
// run as a main by a workaround), waits (WaitsForSidecars).
func specOf(rp string, graceSec int64, ctrs ...string) *history.PodSpec {
	s := &history.PodSpec{RestartPolicy: rp, Grace: graceSec * 1e9}
	for _, w := range ctrs {
		role, rest, _ := strings.Cut(w, ":")
		parts := strings.Split(rest, "+")
		c := history.ContainerSpec{Name: parts[0], Role: role}
		for _, f := range parts[1:] {
			switch f {
			case "startup":
				c.Startup = true
			case "ready":
				c.Readiness = true
			case "live":
				c.Liveness = true
			case "poststart":
				c.PostStart = true
			case "prestop":
				c.PreStop = true
			case "intent": // a user sidecar a workaround runs as a main
				c.Intent = "sidecar"
			case "waits": // its entrypoint waits for the sidecars
				c.WaitsForSidecars = true
			default:
				panic("unknown flag " + f)
			}
		}
		if role == "main" {
			s.Main = append(s.Main, c)
		} else {
			s.Init = append(s.Init, c)
		}
	}
	return s
}

func newPod(name string, spec *history.PodSpec) *hb {
	return &hb{pod: "default/" + name, node: "node-1", spec: spec}
}

func (h *hb) at(msec int64) *hb { h.now = msec * ms1; return h }

func (h *hb) add(e history.Event) *hb {
	e.T = h.now
	if !e.Kind.IsNodeLevel() && e.Kind < history.FaultBegin {
		e.Pod = h.pod
	}
	if e.Kind != history.PodCreated {
		e.Node = h.node
	}
	h.ev = append(h.ev, e)
	return h
}

func (h *hb) k(kind history.Kind, c string) *hb {
	return h.add(history.Event{Kind: kind, Container: c})
}

func (h *hb) created() *hb   { return h.add(history.Event{Kind: history.PodCreated, Spec: h.spec}) }
func (h *hb) scheduled() *hb { return h.k(history.PodScheduled, "") }
func (h *hb) sandbox() *hb   { return h.k(history.SandboxCreated, "") }
func (h *hb) sandboxLost() *hb {
	return h.k(history.SandboxLost, "")
}
func (h *hb) req(c string) *hb     { return h.k(history.ContainerStartRequested, c) }
func (h *hb) running(c string) *hb { return h.k(history.ContainerRunning, c) }
func (h *hb) postStart(c string) *hb {
	return h.add(history.Event{Kind: history.ContainerPostStartDone, Container: c, Value: true})
}
func (h *hb) started(c string, v bool) *hb {
	return h.add(history.Event{Kind: history.ContainerStarted, Container: c, Value: v})
}
func (h *hb) ready(c string, v bool) *hb {
	return h.add(history.Event{Kind: history.ContainerReady, Container: c, Value: v})
}
func (h *hb) exited(c string, code int32) *hb {
	r := "Completed"
	if code != 0 {
		r = "Error"
	}
	return h.add(history.Event{Kind: history.ContainerExited, Container: c, Code: code, Reason: r})
}
func (h *hb) prestop(c, reason string) *hb {
	return h.add(history.Event{Kind: history.ContainerPreStopBegin, Container: c, Reason: reason})
}
func (h *hb) prestopEnd(c string) *hb { return h.k(history.ContainerPreStopEnd, c) }
func (h *hb) stop(c string, graceSec int64, reason string) *hb {
	return h.add(history.Event{Kind: history.ContainerStopRequested, Container: c, Grace: graceSec * 1e9, Reason: reason})
}
func (h *hb) killed(c string) *hb { return h.k(history.ContainerKilled, c) }

// failedHookKill: c's postStart hook failed and the kubelet sent the kill
// that follows (FailedPostStartHook, the pod's 20 s).
func (h *hb) failedHookKill(c string) *hb {
	return h.add(history.Event{Kind: history.ContainerPostStartDone, Container: c, Value: false, Msg: "FailedPostStartHook"}).
		stop(c, 20, "FailedPostStartHook")
}
func (h *hb) backoff(c string, sec int64) *hb {
	return h.add(history.Event{Kind: history.ContainerBackoff, Container: c, Grace: sec * 1e9})
}
func (h *hb) probe(c, kind, result string) *hb {
	return h.add(history.Event{Kind: history.ProbeResult, Container: c, Probe: kind, Result: result})
}
func (h *hb) image(c string) *hb { return h.k(history.ContainerImageChanged, c) }
func (h *hb) terminating(reason string, graceSec int64) *hb {
	return h.add(history.Event{Kind: history.PodTerminating, Reason: reason, Grace: graceSec * 1e9, Value: true})
}
func (h *hb) deleted(graceSec int64) *hb {
	return h.add(history.Event{Kind: history.PodDeleted, Grace: graceSec * 1e9})
}
func (h *hb) phase(ph string) *hb { return h.add(history.Event{Kind: history.PodPhase, Phase: ph}) }
func (h *hb) cond(c string, v bool) *hb {
	return h.add(history.Event{Kind: history.PodCondition, Cond: c, Value: v})
}
func (h *hb) removed() *hb              { return h.k(history.PodRemoved, "") }
func (h *hb) nodeEv(k history.Kind) *hb { return h.add(history.Event{Kind: k}) }
func (h *hb) fault(k history.Kind, name string, id uint32) *hb {
	return h.add(history.Event{Kind: k, Fault: name, FaultID: id})
}

// up starts container c and makes it started and ready at once (no probes).
func (h *hb) up(c string) *hb { return h.req(c).running(c).started(c, true).ready(c, true) }

// startupUp starts c whose startup probe succeeds.
func (h *hb) startupUp(c string) *hb {
	return h.req(c).running(c).probe(c, "startup", "success").started(c, true).ready(c, true)
}

// done runs regular init c to a successful exit.
func (h *hb) done(c string) *hb { return h.req(c).running(c).exited(c, 0) }

// stopExit signals c and lets it exit 0.
func (h *hb) stopExit(c string, graceSec int64, reason string) *hb {
	return h.stop(c, graceSec, reason).exited(c, 0)
}

func (h *hb) events() []history.Event {
	record(nil, h.ev) // for the gating's differential test (gating_test.go)
	return slices.Clone(h.ev)
}

// --- mutations, for "swap two events" style tests ---

// find returns the index of the nth (0-based) event of kind on container c.
func find(ev []history.Event, kind history.Kind, c string, nth int) int {
	for i := range ev {
		if ev[i].Kind == kind && ev[i].Container == c {
			if nth == 0 {
				return i
			}
			nth--
		}
	}
	panic(fmt.Sprintf("no %s %s", kind, c))
}

// moveBefore moves event i to just before event j, taking j's time: the
// event now happens earlier than it should.
func moveBefore(ev []history.Event, i, j int) []history.Event {
	e := ev[i]
	e.T = ev[j].T
	ev = slices.Delete(ev, i, i+1)
	if i < j {
		j--
	}
	return slices.Insert(ev, j, e)
}

// drop removes event i.
func drop(ev []history.Event, i int) []history.Event { return slices.Delete(ev, i, i+1) }

// checkOne builds ev as one pod and runs checker id on it.
func checkOne(t testing.TB, meta *history.Meta, ev []history.Event, id string) []Finding {
	t.Helper()
	record(meta, ev)
	p, err := BuildPod(meta, ev[0].Pod, ev)
	if err != nil {
		t.Fatalf("BuildPod: %v", err)
	}
	var out []Finding
	for _, ch := range registry {
		if ch.ID() != id {
			continue
		}
		for _, h := range ch.Check(p, nil) {
			f := p.classify(ch, &h)
			p.excerpt(&f, h.A, h.B)
			out = append(out, f)
		}
		return out
	}
	t.Fatalf("no checker %s", id)
	return nil
}

// checkAll runs every checker and returns the findings.
func checkAll(t testing.TB, meta *history.Meta, ev []history.Event) []Finding {
	t.Helper()
	record(meta, ev)
	p, err := BuildPod(meta, ev[0].Pod, ev)
	if err != nil {
		t.Fatalf("BuildPod: %v", err)
	}
	var out []Finding
	for _, ch := range registry {
		for _, h := range ch.Check(p, nil) {
			f := p.classify(ch, &h)
			out = append(out, f)
		}
	}
	return out
}

var testMeta = &history.Meta{Scenario: "unit", Policy: "kep753", Backend: "sim", ToleranceNanos: 1e6}

func dump(fs []Finding) string {
	var b strings.Builder
	for i := range fs {
		b.WriteString("\n  " + fs[i].String())
	}
	return b.String()
}

package history

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// randomEvent is an event of pb with random fields: its own pod or none,
// its node, none or another, the vocabulary, and now and then a field the
// compact form does not hold.
func randomEvent(r *rand.Rand, pb *podBuf) Event {
	pick := func(ss ...string) string { return ss[r.IntN(len(ss))] }
	e := Event{T: r.Int64N(1e12), Kind: Kind(1 + r.IntN(int(kindCount)-1)), Attempt: uint32(r.IntN(4)),
		Code: int32(r.IntN(3)) * 137, Grace: int64(r.IntN(3)) * 1e9, OOMScoreAdj: int32(r.IntN(3)) * -997, Value: r.IntN(2) == 0,
		Pod: pick("", pb.name, pb.name, "default/other"), Node: pick("", pb.node, pb.node, "node-9"),
		Container: pick("", "app", "proxy", "logs"), Reason: pick("", "PodDeleted", "Completed", "OOMKilled")}
	switch r.IntN(6) {
	case 0:
		e.Phase = pick("Pending", "Running")
	case 1:
		e.Cond = pick("Ready", "Initialized")
	case 2:
		e.Probe, e.Result = pick("startup", "liveness"), pick("success", "failure")
	case 3:
		e.Phase, e.Cond = "Running", "Ready" // two of the shared slot
	}
	switch r.IntN(12) {
	case 0:
		e.Fault, e.FaultID, e.Target = "gc", uint32(r.IntN(9)+1), "node node-1"
	case 1:
		e.Msg = "runtime down"
	case 2:
		e.CPU, e.Mem, e.CPULimit, e.MemLimit = 100, 1<<26, 200, 1<<27
	case 3:
		e.CritGrace, e.CPUs = 5e9, "2-3"
	case 4:
		e.Spec = &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}}
	case 5:
		e.Meta = &Meta{Seed: 7}
	}
	return e
}

// TestCompactRoundTrip: every event a pod's buffer takes expands back to
// itself, whether it fits the compact form or is kept whole.
func TestCompactRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	syms := newSymtab()
	pb := &podBuf{name: "default/web-7", node: "node-1"}
	p := &Partitioner{syms: syms}
	var want []Event
	compact := 0
	for i := 0; i < 20000; i++ {
		e := randomEvent(r, pb)
		want = append(want, e)
		p.addOwn(pb, &e)
		if pb.own[len(pb.own)-1].ext < 0 {
			compact++
		}
	}
	for i := range pb.own {
		var got Event
		p.syms.expand(&pb.own[i].rec, pb, &got)
		if got.String() != want[i].String() || got.Spec != want[i].Spec || got.Meta != want[i].Meta {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got.String(), want[i].String())
		}
	}
	if compact < len(want)/5 || compact == len(want) {
		t.Fatalf("%d of %d events compact: the test does not exercise both forms", compact, len(want))
	}
}

// TestSymtabFull: once the vocabulary is full, new strings are refused
// (their events are kept whole) and known ones still resolve.
func TestSymtabFull(t *testing.T) {
	s := newSymtab()
	for i := 1; i < maxSyms; i++ {
		if _, ok := s.id(strconv.Itoa(i)); !ok {
			t.Fatalf("refused string %d of %d", i, maxSyms)
		}
	}
	if _, ok := s.id("one more"); ok {
		t.Fatal("accepted a string past maxSyms")
	}
	if id, ok := s.id("1"); !ok || s.strs[id] != "1" {
		t.Fatal("a known string no longer resolves")
	}
}

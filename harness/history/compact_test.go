package history

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

var sharedSpec = &PodSpec{Main: []ContainerSpec{{Name: "web", Role: "main"}}}

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
	switch r.IntN(16) {
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
	case 6, 7:
		e.Spec = sharedSpec // the pod's one spec, as pod.created has it
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
	pb := &podBuf{recOwner: recOwner{name: "default/web-7", node: "node-1"}}
	p := &Partitioner{syms: syms}
	var want []Event
	var seqs []uint64
	compact := 0
	for i := 0; i < 20000; i++ {
		e := randomEvent(r, pb)
		if r.IntN(8) == 0 {
			e.T = -e.T // times and their deltas of either sign
		}
		want = append(want, e)
		p.seq += uint64(1 + r.IntN(3)*r.IntN(1<<20)) // gaps of any size
		seqs = append(seqs, p.seq)
		ext := len(pb.ext)
		p.addOwn(pb, &e)
		if len(pb.ext) == ext {
			compact++
		}
	}
	if pb.nown != len(want) {
		t.Fatalf("%d records for %d events", pb.nown, len(want))
	}
	rd := recReader{b: pb.own}
	for i := range pb.nown {
		var got Event
		var rc rec
		if seq := rd.next(&rc); seq != seqs[i] {
			t.Fatalf("event %d: seq %d, want %d", i, seq, seqs[i])
		}
		expand(p.syms.strs, &rc, &pb.recOwner, &got)
		if got.String() != want[i].String() || got.Spec != want[i].Spec || got.Meta != want[i].Meta {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got.String(), want[i].String())
		}
	}
	if len(rd.b) != 0 {
		t.Fatalf("%d bytes left after the last record", len(rd.b))
	}
	if perEvent := float64(len(pb.own)) / float64(pb.nown); perEvent > 16 {
		t.Errorf("%.1f bytes per record, want at most 16", perEvent)
	}
	specs := 0
	for i := range want {
		if want[i].Spec == sharedSpec {
			specs++
		}
	}
	if pb.spec == nil || specs == 0 {
		t.Fatal("no event with a spec was compacted")
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

package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

type delivery struct {
	seed   uint64
	hasRun bool
	pod    string
	events []Event
}

func collect(out *[]delivery) PodFunc {
	return func(run *Meta, pod string, events []Event) error {
		d := delivery{pod: pod, events: slices.Clone(events)}
		if run != nil {
			d.hasRun, d.seed = true, run.Seed
		}
		*out = append(*out, d)
		return nil
	}
}

func kindsOf(events []Event) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Kind.String())
	}
	return b.String()
}

func TestPartitionGolden(t *testing.T) {
	var got []delivery
	data := encodeAll(t, sampleRun())
	if err := ForEachPod(NewReader(bytes.NewReader(data)), collect(&got)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, d := range got {
		fmt.Fprintf(&b, "# seed=%d pod=%s events=%d\n", d.seed, d.pod, len(d.events))
		for _, e := range d.events {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
	}
	golden(t, "partition.golden", b.Bytes())

	// The golden file is long; pin the rules it illustrates explicitly.
	if len(got) != 3 {
		t.Fatalf("got %d pod histories, want 3", len(got))
	}
	web0, web1, web0run1 := got[0], got[1], got[2]
	if web0.pod != "default/web-0" || web0.seed != 42 || web1.pod != "default/web-1" || web0run1.seed != 43 {
		t.Fatalf("order: %+v %+v %+v", web0.pod, web1.pod, web0run1.pod)
	}
	for _, tt := range []struct {
		name           string
		d              delivery
		want, wantNone []Kind
		last           Kind
	}{
		// Finished by pod.removed: node-1 and cluster-wide events, nothing of node-2, no run.end.
		{"web-0", web0, []Kind{KubeletDown, KubeletUp, FaultNotApplied}, []Kind{RuntimeDown, NodeDown, RunEnd}, PodRemoved},
		// Cut by run.end: node-2 events and the cluster-wide fault, run.end last.
		{"web-1", web1, []Kind{RuntimeDown, RuntimeUp, NodeShutdown, NodeDown, NodeUp, FaultNotApplied}, []Kind{KubeletDown}, RunEnd},
		// Second run crashed: no run.end, but its node event.
		{"web-0 run 1", web0run1, []Kind{NodeDown}, []Kind{RunEnd, KubeletDown}, NodeDown},
	} {
		ks := map[Kind]bool{}
		for _, e := range tt.d.events {
			ks[e.Kind] = true
		}
		for _, k := range tt.want {
			if !ks[k] {
				t.Errorf("%s: missing %s in %s", tt.name, k, kindsOf(tt.d.events))
			}
		}
		for _, k := range tt.wantNone {
			if ks[k] {
				t.Errorf("%s: unexpected %s in %s", tt.name, k, kindsOf(tt.d.events))
			}
		}
		if last := tt.d.events[len(tt.d.events)-1].Kind; last != tt.last {
			t.Errorf("%s: last event %s, want %s", tt.name, last, tt.last)
		}
		if !slices.IsSortedFunc(tt.d.events, func(a, b Event) int { return int(a.T - b.T) }) {
			t.Errorf("%s: events out of time order", tt.name)
		}
	}
	// The pod-targeted fault (Pod set) goes to its pod only.
	for _, e := range web1.events {
		if e.Fault == "oom" {
			t.Errorf("web-1 received web-0's fault: %v", e)
		}
	}
}

func TestPartitionNodeEventsOnlyWhileBound(t *testing.T) {
	var got []delivery
	p := NewPartitioner(collect(&got))
	for _, e := range []Event{
		{T: 0, Kind: RunMeta, Meta: &Meta{Seed: 1}},
		{T: 1, Kind: PodCreated, Pod: "a"},
		{T: 2, Kind: KubeletDown, Node: "n"}, // before a is bound: not a's
		{T: 3, Kind: PodScheduled, Pod: "a", Node: "n"},
		{T: 4, Kind: KubeletUp, Node: "n"},
		{T: 5, Kind: FaultBegin, Node: "n", Fault: "power-off"},
		{T: 6, Kind: FaultBegin, Node: "other", Fault: "power-off"},
		{T: 7, Kind: PodRemoved, Pod: "a"},
		{T: 8, Kind: NodeDown, Node: "n"},                                   // after a is finished
		{T: 9, Kind: ContainerRemoved, Pod: "a", Node: "n", Container: "c"}, // breaks the contract: second history
		{T: 10, Kind: RunEnd, Msg: "complete"},
	} {
		if err := p.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d histories", len(got))
	}
	if k := kindsOf(got[0].events); k != "pod.created pod.scheduled kubelet.up fault.begin pod.removed" {
		t.Errorf("first history: %s", k)
	}
	if k := kindsOf(got[1].events); got[1].pod != "a" || k != "container.removed run.end" {
		t.Errorf("stray history: %s", k)
	}
}

func TestPartitionHeaderlessAndRunIndex(t *testing.T) {
	var got []delivery
	p := NewPartitioner(collect(&got))
	if p.Run() != -1 {
		t.Fatalf("Run before any meta = %d", p.Run())
	}
	p.Write(&Event{T: 1, Kind: PodCreated, Pod: "x"})
	p.Write(&Event{T: 0, Kind: RunMeta, Meta: &Meta{Seed: 7}}) // ends the headerless run
	p.Write(&Event{T: 1, Kind: PodCreated, Pod: "x"})
	if p.Run() != 0 || p.Live() != 1 {
		t.Fatalf("run %d live %d", p.Run(), p.Live())
	}
	p.Close()
	if len(got) != 2 || got[0].hasRun || !got[1].hasRun || got[1].seed != 7 {
		t.Fatalf("got %+v", got)
	}
}

func TestPartitionMemoryBoundedByLivePods(t *testing.T) {
	p := NewPartitioner(func(*Meta, string, []Event) error { return nil })
	p.Write(&Event{Kind: RunMeta, Meta: &Meta{}})
	for i := range 10000 {
		pod := fmt.Sprintf("ns/p%d", i)
		for _, k := range []Kind{PodCreated, PodScheduled, ContainerRunning, PodRemoved} {
			p.Write(&Event{T: int64(i), Kind: k, Pod: pod, Node: fmt.Sprintf("n%d", i%7)})
		}
		if i%3 == 0 {
			p.Write(&Event{T: int64(i), Kind: KubeletDown, Node: "n1"})
		}
	}
	if p.Live() != 0 || p.PeakLive() != 1 || len(p.nodes) != 0 {
		t.Errorf("live %d peak %d nodes %d: finished pods are retained", p.Live(), p.PeakLive(), len(p.nodes))
	}
}

func TestPartitionCallbackErrorStops(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	p := NewPartitioner(func(*Meta, string, []Event) error { calls++; return stop })
	p.Write(&Event{Kind: PodCreated, Pod: "a"})
	p.Write(&Event{Kind: PodCreated, Pod: "b"})
	if err := p.Write(&Event{Kind: RunEnd}); err != stop {
		t.Fatalf("Write returned %v", err)
	}
	if err := p.Close(); err != stop || calls != 1 {
		t.Fatalf("Close %v after %d calls", err, calls)
	}
}

func TestForEachPodTruncated(t *testing.T) {
	data := encodeAll(t, sampleRun())
	data = data[:len(data)-10] // crash in the middle of the last line
	var got []delivery
	err := ForEachPod(NewReader(bytes.NewReader(data)), collect(&got))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v", err)
	}
	// The last run's pod is still delivered, without the lost node.down.
	if len(got) != 3 || kindsOf(got[2].events) != "pod.created pod.scheduled" {
		t.Fatalf("got %d histories, last %s", len(got), kindsOf(got[len(got)-1].events))
	}
}

func TestForEachPodBadLine(t *testing.T) {
	in := "{\"t\":0,\"k\":\"run.meta\",\"meta\":{\"scenario\":\"s\",\"seed\":1,\"trial\":0,\"policy\":\"\",\"backend\":\"sim\",\"version\":\"\"}}\n{\"t\":1,\"k\":\"pod.bogus\"}\n"
	err := ForEachPod(NewReader(strings.NewReader(in)), func(*Meta, string, []Event) error { return nil })
	if err == nil || err.Error() != `history line 2: unknown kind "pod.bogus"` {
		t.Fatalf("got %v", err)
	}
}

func BenchmarkForEachPod(b *testing.B) {
	// 1000 pods on 50 nodes, each with a typical start-up and deletion.
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write(&Event{Kind: RunMeta, Meta: &Meta{Scenario: "bench"}})
	for i := range 1000 {
		pod, node := fmt.Sprintf("default/p-%d", i), fmt.Sprintf("node-%d", i%50)
		t := int64(i) * 1000
		for _, e := range []Event{
			{Kind: PodCreated, Pod: pod, Spec: &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}}},
			{Kind: PodScheduled, Pod: pod, Node: node},
			{Kind: ContainerStartRequested, Pod: pod, Node: node, Container: "app"},
			{Kind: ContainerRunning, Pod: pod, Node: node, Container: "app"},
			{Kind: ContainerStarted, Pod: pod, Node: node, Container: "app", Value: true},
			{Kind: ContainerReady, Pod: pod, Node: node, Container: "app", Value: true},
			{Kind: PodCondition, Pod: pod, Node: node, Cond: "Ready", Value: true},
			{Kind: PodDeleted, Pod: pod, Grace: 30e9},
			{Kind: ContainerStopRequested, Pod: pod, Node: node, Container: "app", Grace: 30e9},
			{Kind: ContainerExited, Pod: pod, Node: node, Container: "app", Code: 0, Reason: "Completed"},
			{Kind: PodRemoved, Pod: pod},
		} {
			t++
			e.T = t
			w.Write(&e)
		}
	}
	w.Flush()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := ForEachPod(NewReader(bytes.NewReader(data)), func(*Meta, string, []Event) error { return nil }); err != nil && err != io.EOF {
			b.Fatal(err)
		}
	}
}

// TestAsyncSinkPreservesOrder: an AsyncSink in front of a Partitioner
// delivers the same per-pod histories as the Partitioner fed directly.
func TestAsyncSinkPreservesOrder(t *testing.T) {
	data, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	collect := func(feed func(Sink) error) string {
		var b strings.Builder
		p := NewPartitioner(func(_ *Meta, pod string, events []Event) error {
			b.WriteString(pod + "\n")
			for i := range events {
				b.WriteString(events[i].String() + "\n")
			}
			return nil
		})
		if err := feed(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	direct := collect(func(s Sink) error {
		for i := range evs {
			if err := s.Write(&evs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	for _, batch := range []int{1, 3, 4096} {
		async := collect(func(s Sink) error {
			a := NewAsyncSink(s, batch)
			for i := range evs {
				e := evs[i] // the producer reuses one Event
				if err := a.Write(&e); err != nil {
					return err
				}
			}
			return a.Close()
		})
		if async != direct {
			t.Fatalf("batch %d: async delivery differs from direct", batch)
		}
	}
}

// recorder is a Sink that keeps the kinds and times it saw, and fails
// from the n-th event on (n > 0).
type recorder struct {
	seen   []string
	failAt int
	err    error
}

func (r *recorder) Write(e *Event) error {
	if r.failAt > 0 && len(r.seen)+1 >= r.failAt {
		return r.err
	}
	r.seen = append(r.seen, e.String())
	return nil
}

// TestPipelineStagesSeeEverything: every stage of a pipeline sees every
// event in order, whatever the batch size; Close reports the error of the
// first failing stage in stage order, whichever failed first in time.
func TestPipelineStagesSeeEverything(t *testing.T) {
	data, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range evs {
		want = append(want, evs[i].String())
	}
	for _, size := range []int{1, 3, 4096} {
		a, b, c := &recorder{}, &recorder{}, &recorder{}
		p := NewPipeline(size, a, b, c)
		for i := range evs {
			e := evs[i]
			if err := p.Write(&e); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		for i, r := range []*recorder{a, b, c} {
			if !slices.Equal(r.seen, want) {
				t.Fatalf("batch %d: stage %d saw %d events, want the %d in order", size, i, len(r.seen), len(want))
			}
		}
	}
	errEarly, errLate := errors.New("stage 2 failed"), errors.New("stage 1 failed")
	first := &recorder{failAt: len(evs), err: errLate}
	second := &recorder{failAt: 1, err: errEarly}
	p := NewPipeline(2, first, second)
	for i := range evs {
		if err := p.Write(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != errLate {
		t.Fatalf("Close = %v, want the first stage's %v", err, errLate)
	}
}

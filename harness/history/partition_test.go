package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
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

// heapAfterGC returns the live heap.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Node-level and cluster-wide events are stored once, not copied into
// every live pod (issue 15, item 6: 20k pods and 200k cluster-wide faults
// needed over 10 GB). Here 1000 live pods see 4000 shared events each: a
// copy per pod would hold 8M events (about 2 GB).
func TestPartitionSharedEventsStoredOnce(t *testing.T) {
	const pods, shared = 1000, 4000
	delivered := 0
	p := NewPartitioner(func(_ *Meta, pod string, evs []Event) error {
		delivered++
		// created + scheduled, then every shared event of its node and the
		// cluster.
		if len(evs) != 2+2*shared {
			t.Errorf("%s: %d events, want %d", pod, len(evs), 2+2*shared)
		}
		return nil
	})
	base := heapAfterGC()
	p.Write(&Event{Kind: RunMeta, Meta: &Meta{}})
	for i := range pods {
		pod := fmt.Sprintf("ns/p%d", i)
		p.Write(&Event{T: 1, Kind: PodCreated, Pod: pod})
		p.Write(&Event{T: 1, Kind: PodScheduled, Pod: pod, Node: "n"})
	}
	for i := range shared {
		p.Write(&Event{T: int64(2 + i), Kind: FaultBegin, Fault: "apiserver-outage", FaultID: uint32(i)})
		p.Write(&Event{T: int64(2 + i), Kind: KubeletDown, Node: "n"})
	}
	if grown := int64(heapAfterGC()) - int64(base); grown > 64<<20 {
		t.Errorf("%d live pods and %d shared events hold %d MB, want under 64 MB", pods, 2*shared, grown>>20)
	}
	if err := p.Close(); err != nil || delivered != pods {
		t.Fatalf("close: %v, %d delivered", err, delivered)
	}
}

// A node's log keeps only what live pods can still see: pods come and go
// on a node with kubelet restarts in between, and the log stays small.
func TestPartitionSharedLogCompacts(t *testing.T) {
	p := NewPartitioner(func(*Meta, string, []Event) error { return nil })
	p.Write(&Event{Kind: RunMeta, Meta: &Meta{}})
	maxLog := 0
	for i := range 100000 {
		pod := fmt.Sprintf("ns/p%d", i)
		p.Write(&Event{T: int64(i), Kind: PodScheduled, Pod: pod, Node: "n"})
		p.Write(&Event{T: int64(i), Kind: KubeletDown, Node: "n"})
		p.Write(&Event{T: int64(i), Kind: FaultBegin, Fault: "x"})
		if i > 0 {
			p.Write(&Event{T: int64(i), Kind: PodRemoved, Pod: fmt.Sprintf("ns/p%d", i-1)})
		}
		if l := p.nodes["n"]; l != nil {
			maxLog = max(maxLog, len(l.ev), len(p.cluster.ev))
		}
	}
	if maxLog > 4096 {
		t.Errorf("shared log reached %d entries with at most 2 live pods", maxLog)
	}
}

// Pods' own events beyond the memory budget go to a spill file and come
// back intact, in order, with the shared events interleaved as before
// (issue 15, item 6: 2M pods never removed needed 9.3 GB).
func TestPartitionSpillsAndRestores(t *testing.T) {
	var events []Event
	events = append(events, Event{Kind: RunMeta, Meta: &Meta{Seed: 3}})
	for i := range 3000 {
		pod := fmt.Sprintf("ns/p%d", i)
		node := fmt.Sprintf("n%d", i%5)
		events = append(events,
			Event{T: int64(i), Kind: PodCreated, Pod: pod, Spec: &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Always"}},
			Event{T: int64(i), Kind: PodScheduled, Pod: pod, Node: node},
			Event{T: int64(i), Kind: KubeletDown, Node: node},
			Event{T: int64(i), Kind: ContainerRunning, Pod: pod, Node: node, Container: "app", Msg: strings.Repeat("m", i%50)},
			Event{T: int64(i), Kind: FaultBegin, Fault: "outage"})
		if i%3 == 0 {
			events = append(events, Event{T: int64(i), Kind: PodRemoved, Pod: pod})
		}
	}
	events = append(events, Event{T: 5000, Kind: RunEnd, Msg: "complete"})
	run := func(opts ...PartitionOption) ([]delivery, *Partitioner) {
		var got []delivery
		p := NewPartitioner(collect(&got), opts...)
		for i := range events {
			if err := p.Write(&events[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return got, p
	}
	want, p0 := run(SpillAfter(0))
	dir := t.TempDir()
	got, p1 := run(SpillAfter(64<<10), SpillDir(dir))
	if p0.Spills() != 0 || p1.Spills() < 10 {
		t.Fatalf("spills: %d without budget, %d with a 64 KiB one", p0.Spills(), p1.Spills())
	}
	if len(got) != len(want) {
		t.Fatalf("%d histories, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].pod != want[i].pod || len(got[i].events) != len(want[i].events) {
			t.Fatalf("history %d: %s with %d events, want %s with %d", i, got[i].pod, len(got[i].events), want[i].pod, len(want[i].events))
		}
		for k := range want[i].events {
			g, w := got[i].events[k], want[i].events[k]
			if g.Spec != nil && w.Spec != nil && reflect.DeepEqual(*g.Spec, *w.Spec) {
				g.Spec = w.Spec // decoded back: equal, not the same pointer
			}
			if g != w {
				t.Fatalf("%s event %d: %+v, want %+v", want[i].pod, k, g, w)
			}
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spill files left behind: %v", left)
	}
}

// OnlyPods delivers the wanted pods' histories exactly as without it, and
// nothing of the others.
func TestPartitionOnlyPods(t *testing.T) {
	data := encodeAll(t, sampleRun())
	var all, some []delivery
	if err := ForEachPod(NewReader(bytes.NewReader(data)), collect(&all)); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	want := func(pod string) bool { asked[pod]++; return pod == "default/web-1" }
	if err := ForEachPod(NewReader(bytes.NewReader(data)), collect(&some), OnlyPods(want)); err != nil {
		t.Fatal(err)
	}
	var expect []delivery
	for _, d := range all {
		if d.pod == "default/web-1" {
			expect = append(expect, d)
		}
	}
	if len(expect) == 0 || !reflect.DeepEqual(some, expect) {
		t.Fatalf("got %d histories, want the %d of web-1", len(some), len(expect))
	}
	if asked["default/web-0"] != 2 { // once per run: web-0 is in both
		t.Errorf("want asked %v", asked)
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

// TestPartitionLivePodBytes: what the Partitioner holds for a live pod of
// the scale envelope (pod.created with its spec, scheduling, three
// containers starting, probes, conditions: 24 own events) is a few
// hundred bytes. With a 56-byte record per event in a doubling array, and
// pod.created kept as a whole 304-byte Event, it was 2.1 KB: 212 MB of
// the envelope's 150,000 live pods (docs/performance.md, "Memory budget").
func TestPartitionLivePodBytes(t *testing.T) {
	const pods = 1000
	spec := &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}}
	var want []delivery
	p := NewPartitioner(collect(&want), SpillAfter(0))
	p.Write(&Event{Kind: RunMeta, Meta: &Meta{}})
	var seq int64
	tick := func() int64 { seq += 1 + seq%7*1e6; return seq }
	for i := range pods {
		pod, node := fmt.Sprintf("default/fleet-%d", i), fmt.Sprintf("node-%d", i%50)
		evs := []Event{
			{Kind: PodCreated, Pod: pod, Spec: spec},
			{Kind: PodScheduled, Pod: pod, Node: node},
			{Kind: PodCondition, Pod: pod, Node: node, Cond: "PodScheduled", Value: true},
			{Kind: SandboxCreated, Pod: pod, Node: node},
		}
		for _, c := range []string{"proxy", "logs", "app"} {
			evs = append(evs,
				Event{Kind: ContainerStartRequested, Pod: pod, Node: node, Container: c, Attempt: 1},
				Event{Kind: ContainerRunning, Pod: pod, Node: node, Container: c, Attempt: 1},
				Event{Kind: ProbeResult, Pod: pod, Node: node, Container: c, Probe: "startup", Result: "success"},
				Event{Kind: ContainerStarted, Pod: pod, Node: node, Container: c, Value: true},
				Event{Kind: ContainerReady, Pod: pod, Node: node, Container: c, Value: true})
		}
		evs = append(evs,
			Event{Kind: PodCondition, Pod: pod, Node: node, Cond: "Initialized", Value: true},
			Event{Kind: PodCondition, Pod: pod, Node: node, Cond: "Ready", Value: true},
			Event{Kind: PodPhase, Pod: pod, Node: node, Phase: "Running"},
			Event{Kind: PodCondition, Pod: pod, Node: node, Cond: "ContainersReady", Value: true},
			Event{Kind: PodPhase, Pod: pod, Node: node, Phase: "Running", Reason: "Started"})
		for k := range evs {
			evs[k].T = tick()
			p.Write(&evs[k])
		}
	}
	perPod := p.buffered / pods
	t.Logf("%d bytes per live pod", perPod)
	if perPod > 320 {
		t.Errorf("%d bytes of own events held per live pod, want at most 320", perPod)
	}
	// And each comes back whole, spec included.
	p.Close()
	if len(want) != pods || len(want[0].events) != 24 || want[0].events[0].Spec != spec {
		t.Fatalf("%d pods delivered, the first with %d events", len(want), len(want[0].events))
	}
}

// TestPartitionSlotHints: slot hints (Event.Slot) only speed the lookup
// of a pod's buffer up. Right hints, stale ones (a slot reused by the
// next pod), hints that collide with a live pod's, out of range and
// random ones all give the histories a stream without hints gives, and
// no delivered event carries a hint. Prefetch with any hint is harmless.
func TestPartitionSlotHints(t *testing.T) {
	events, next := mixedStream()
	run := func(hint func(e *Event) int32) []delivery {
		var got []delivery
		p := NewPartitioner(collect(&got))
		for i := range events {
			e := events[i]
			e.Slot = hint(&e)
			p.Prefetch(hint(&e))
			if err := p.Write(&e); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := run(func(*Event) int32 { return 0 })
	for _, tc := range []struct {
		name string
		hint func(e *Event) int32
	}{
		{"right", func(e *Event) int32 { return e.Slot }},
		{"one slot for all", func(e *Event) int32 { return min(e.Slot, 1) }},
		{"shifted", func(e *Event) int32 { return e.Slot * 3 % 41 }},
		{"random", func(*Event) int32 { return int32(next(50)) - 5 }},
		{"huge", func(e *Event) int32 { return e.Slot<<20 | e.Slot }},
	} {
		got := run(tc.hint)
		if len(got) != len(want) {
			t.Fatalf("%s hints: %d histories, want %d", tc.name, len(got), len(want))
		}
		for i := range want {
			if got[i].pod != want[i].pod || !reflect.DeepEqual(got[i].events, want[i].events) {
				t.Fatalf("%s hints: history %d (%s) differs from the one without hints:\n%+v\nwant\n%+v", tc.name, i, got[i].pod, got[i].events, want[i].events)
			}
			for _, e := range got[i].events {
				if e.Slot != 0 {
					t.Fatalf("%s hints: a delivered event carries the hint %d", tc.name, e.Slot)
				}
			}
		}
	}
}

// mixedStream is a history of two runs with pods coming and going over
// 40 slots (a slot is reused once its pod is removed, as the sim does;
// Event.Slot holds it), pod names used more than once, node and cluster
// events, events kept whole (faults, messages); next is its random
// source, for more.
func mixedStream() (events []Event, next func(n int) int) {
	type live struct {
		name, node string
		slot       int32
	}
	rng := uint64(1)
	next = func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int(rng>>33) % n
	}
	for run := range 2 {
		events = append(events, Event{Kind: RunMeta, Meta: &Meta{Seed: uint64(run)}})
		var pods []live
		free := make([]int32, 40)
		for i := range free {
			free[i] = int32(i + 1)
		}
		for i := range 4000 {
			t := int64(i)
			switch k := next(10); {
			case k == 0 && len(free) > 0:
				s := free[len(free)-1]
				free = free[:len(free)-1]
				p := live{name: fmt.Sprintf("ns/p%d", i%700), node: fmt.Sprintf("n%d", next(4)), slot: s}
				pods = append(pods, p)
				events = append(events, Event{T: t, Kind: PodCreated, Pod: p.name, Slot: s, Spec: &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}}},
					Event{T: t, Kind: PodScheduled, Pod: p.name, Node: p.node, Slot: s})
			case k == 1 && len(pods) > 0:
				j := next(len(pods))
				p := pods[j]
				pods = append(pods[:j], pods[j+1:]...)
				free = append(free, p.slot)
				events = append(events, Event{T: t, Kind: PodRemoved, Pod: p.name, Node: p.node, Slot: p.slot})
			case k == 2:
				events = append(events, Event{T: t, Kind: KubeletDown, Node: fmt.Sprintf("n%d", next(4))})
			case k == 3:
				events = append(events, Event{T: t, Kind: FaultBegin, Fault: "outage", FaultID: uint32(i)})
			case len(pods) > 0:
				p := pods[next(len(pods))]
				e := Event{T: t, Kind: ContainerRunning, Pod: p.name, Node: p.node, Container: "app", Slot: p.slot}
				if k == 4 {
					e.Msg = "whole"
				}
				events = append(events, e)
			}
		}
		events = append(events, Event{T: 5000, Kind: RunEnd, Msg: "complete"})
	}
	return events, next
}

// TestDeferredPartitioner: histories handed over unassembled
// (NewDeferredPartitioner) and assembled later, on another goroutine,
// after the stream went on (shared logs compacted, buffers reused), and
// with every pod's events spilled to disk at times, are the histories
// NewPartitioner delivers at once. Run with -race: the consumer assembles
// and releases while the producer writes.
func TestDeferredPartitioner(t *testing.T) {
	events, _ := mixedStream()
	for _, spill := range []int64{0, 4 << 10} {
		var want []delivery
		p := NewPartitioner(collect(&want), SpillAfter(spill), SpillDir(t.TempDir()))
		for i := range events {
			if err := p.Write(&events[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		// A consumer goroutine assembles each history after a lag of a
		// few pods, as a checker goroutine behind a queue does.
		queue := make(chan *PodHistory, 16)
		var got []delivery
		done := make(chan struct{})
		go func() {
			defer close(done)
			var buf []Event
			for h := range queue {
				buf = h.Events(buf[:0])
				if len(buf) != h.Len() {
					t.Errorf("%s: Len %d, Events gave %d", h.Pod(), h.Len(), len(buf))
				}
				d := delivery{pod: h.Pod(), events: slices.Clone(buf)}
				if h.Run != nil {
					d.hasRun, d.seed = true, h.Run.Seed
				}
				got = append(got, d)
				h.Release()
			}
		}()
		dp := NewDeferredPartitioner(func(h *PodHistory) error { queue <- h; return nil }, SpillAfter(spill), SpillDir(t.TempDir()))
		for i := range events {
			if err := dp.Write(&events[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := dp.Close(); err != nil {
			t.Fatal(err)
		}
		close(queue)
		<-done
		if spill > 0 && (p.Spills() == 0 || dp.Spills() == 0) {
			t.Fatalf("spill budget %d: no spill (%d, %d): the test would not cover spilled pods", spill, p.Spills(), dp.Spills())
		}
		if len(got) != len(want) {
			t.Fatalf("spill %d: %d histories, want %d", spill, len(got), len(want))
		}
		for i := range want {
			if got[i].pod != want[i].pod || got[i].hasRun != want[i].hasRun || got[i].seed != want[i].seed {
				t.Fatalf("spill %d: history %d is %s, want %s", spill, i, got[i].pod, want[i].pod)
			}
			for k := range want[i].events {
				g, w := &got[i].events[k], &want[i].events[k]
				if g.Spec != nil && w.Spec != nil && reflect.DeepEqual(*g.Spec, *w.Spec) {
					g.Spec = w.Spec // decoded back from a spill: equal, not the same pointer
				}
			}
			if !reflect.DeepEqual(got[i].events, want[i].events) {
				t.Fatalf("spill %d: %s differs:\n%s\nwant\n%s", spill, want[i].pod, kindsOf(got[i].events), kindsOf(want[i].events))
			}
		}
	}
}

// TestPodWorker: pods handed to a PodWorker reach its function in order,
// whole (in batches, on another goroutine); the function's first error
// stops the partitioner and is what Close returns.
func TestPodWorker(t *testing.T) {
	events, _ := mixedStream()
	var want []delivery
	p := NewPartitioner(collect(&want))
	for i := range events {
		if err := p.Write(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) < (podBatches+3)*podBatch {
		// Fewer, and the error below could reach the worker after the
		// last Take, when only Close can report it.
		t.Fatalf("%d pods: too few to fill the worker's queue", len(want))
	}
	var got []delivery
	w := NewPodWorker(collect(&got))
	dp := NewDeferredPartitioner(w.Take)
	for i := range events {
		if err := dp.Write(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := dp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d histories through the worker differ from the %d delivered at once", len(got), len(want))
	}

	boom := errors.New("boom")
	calls := 0
	w = NewPodWorker(func(*Meta, string, []Event) error {
		if calls++; calls == 10 {
			return boom
		}
		return nil
	})
	dp = NewDeferredPartitioner(w.Take)
	var werr error
	for i := range events {
		if werr = dp.Write(&events[i]); werr != nil {
			break
		}
	}
	if werr == nil {
		werr = dp.Close()
	}
	if cerr := w.Close(); !errors.Is(werr, boom) || !errors.Is(cerr, boom) {
		t.Fatalf("partitioner error %v, worker error %v: want the function's", werr, cerr)
	}
	if calls != 10 {
		t.Fatalf("the function ran %d times: pods after its error must be dropped", calls)
	}
}

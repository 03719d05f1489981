package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/scenario"
)

func tinyScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	s, err := scenario.LoadBytes("tiny.yaml", []byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFramesReadBack: every committed part reads back through the typed
// readers, and each trial's byte range (between two journal lines' sizes)
// is a zstd frame that decompresses on its own.
func TestFramesReadBack(t *testing.T) {
	dir := newDir(t, 4)
	entries, _, err := ReadJournal(filepath.Join(dir, FileJournal))
	if err != nil || len(entries) != 4 {
		t.Fatalf("%d entries %v", len(entries), err)
	}
	var pods, finds, stats []int
	EachPod(dir, func(r *metrics.Record) error { pods = append(pods, r.Trial); return nil })
	EachFinding(dir, func(f *FindingRecord) error { finds = append(finds, f.Trial); return nil })
	EachTrialStats(dir, func(st *TrialStats) error {
		if st.Rows[0].Rule == "" {
			t.Error("rule text not restored")
		}
		stats = append(stats, int(st.Metrics.Latencies[0].Ms.At(0)))
		return nil
	})
	if len(pods) != 4 || len(finds) != 4 || len(stats) != 4 || stats[3] != 103 || pods[2] != 2 {
		t.Fatalf("pods %v findings %v stats %v", pods, finds, stats)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, FileHistory))
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	var prev int64
	for i, e := range entries {
		frame := raw[prev:e.History]
		out, err := dec.DecodeAll(frame, nil)
		if err != nil || !bytes.Contains(out, []byte(`"trial":`+string(rune('0'+i)))) {
			t.Errorf("trial %d: frame [%d,%d) alone: %q %v", i, prev, e.History, out, err)
		}
		prev = e.History
	}
	h, err := OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(h)
	h.Close()
	if bytes.Count(all, []byte("run.meta")) != 4 {
		t.Errorf("history: %s", all)
	}
}

// TestReadersSeeOnlyCommitted: bytes past the journal's sizes (a trial
// being committed, or torn by a crash) are invisible to readers, and Open
// cuts them off.
func TestReadersSeeOnlyCommitted(t *testing.T) {
	dir := newDir(t, 2)
	for _, name := range []string{FileHistory, FilePods, FileFindings, FileTrials} {
		f, _ := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		f.Write(Compress([]byte(`{"torn":1}` + "\n"))[:9]) // half a frame
		f.Close()
	}
	n := 0
	if err := EachPod(dir, func(*metrics.Record) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("%d pods, %v", n, err)
	}
	if err := EachTrialStats(dir, func(*TrialStats) error { n++; return nil }); err != nil || n != 4 {
		t.Fatalf("%d, %v", n, err)
	}
	d, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Commit(finished(t, d, tinyScenario(t).Hash, 2)); err != nil {
		t.Fatal(err)
	}
	n = 0
	if err := EachPod(dir, func(*metrics.Record) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("after resume: %d pods, %v", n, err)
	}
	// A history file with a torn frame read by hand: the whole frames,
	// then an error naming the tear.
	p := filepath.Join(dir, FileHistory)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(Compress([]byte(`{"t":5,"k":"run.end"}` + "\n"))[:7])
	f.Close()
	h, _ := OpenHistory(p)
	b, err := io.ReadAll(h)
	h.Close()
	if !errors.Is(err, ErrTornFrame) || bytes.Count(b, []byte("run.meta")) != 3 {
		t.Errorf("torn file: %v, %q", err, b)
	}
}

// TestGroupCommitSyncsOncePerFile: a commit of several trials fsyncs each
// file it wrote once, then the journal.
func TestGroupCommitSyncsOncePerFile(t *testing.T) {
	s := tinyScenario(t)
	var synced []string
	d, err := Create(filepath.Join(t.TempDir(), "r"), Info{Command: "run"}, []*scenario.Scenario{s},
		WithSync(func(f *os.File) error { synced = append(synced, filepath.Base(f.Name())); return f.Sync() }))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Commit(finished(t, d, s.Hash, 0), finished(t, d, s.Hash, 1), finished(t, d, s.Hash, 2)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(synced, " "); got != "history.jsonl.zst pods.jsonl.zst findings.jsonl.zst trials.jsonl.zst journal.jsonl" {
		t.Errorf("fsyncs: %s", got)
	}
}

// TestFailingFsyncCommitsNothing: an fsync error fails the commit before
// the journal names the trial, refuses later commits, and a resume cuts
// what was appended.
func TestFailingFsyncCommitsNothing(t *testing.T) {
	s := tinyScenario(t)
	dir := filepath.Join(t.TempDir(), "r")
	fail := false
	d, err := Create(dir, Info{Command: "soak"}, []*scenario.Scenario{s}, WithSync(func(f *os.File) error {
		if fail {
			return errors.New("injected EIO")
		}
		return f.Sync()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(finished(t, d, s.Hash, 0)); err != nil {
		t.Fatal(err)
	}
	fail = true
	if _, err := d.Commit(finished(t, d, s.Hash, 1)); err == nil || !strings.Contains(err.Error(), "fsync") || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("commit: %v", err)
	}
	fail = false
	if _, err := d.Commit(finished(t, d, s.Hash, 2)); err == nil || !strings.Contains(err.Error(), "earlier commit failed") {
		t.Fatalf("commit after a failure: %v", err)
	}
	d.Close()
	if n := len(mustJournal(t, dir)); n != 1 {
		t.Fatalf("%d trials committed, want 1", n)
	}
	d, _, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	n := 0
	EachPod(dir, func(*metrics.Record) error { n++; return nil })
	if fi, _ := os.Stat(filepath.Join(dir, FilePods)); n != 1 || fi.Size() != mustJournal(t, dir)[0].PodsBytes {
		t.Errorf("after resume: %d pods, %d bytes", n, fi.Size())
	}
}

func mustJournal(t *testing.T, dir string) []Entry {
	t.Helper()
	es, _, err := ReadJournal(filepath.Join(dir, FileJournal))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestCheckBudget: a commit that would take the directory past MaxDisk
// (with room for the reports) is refused with the sizes.
func TestCheckBudget(t *testing.T) {
	s := tinyScenario(t)
	d, err := Create(filepath.Join(t.TempDir(), "r"), Info{Command: "run", MaxDisk: 1<<20 + 4096}, []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CheckBudget(100); err != nil {
		t.Fatalf("small commit: %v", err)
	}
	var be *BudgetError
	if err := d.CheckBudget(8192); !errors.As(err, &be) || !strings.Contains(err.Error(), "stopped before exceeding --max-disk 1.0 MiB") {
		t.Fatalf("large commit: %v", err)
	}
	// The figures it quotes add up past the budget: the room kept for the
	// reports is one of them.
	if be.Used+be.Need+be.Reserve <= be.Max || !strings.Contains(be.Error(), "1.0 MiB stays free for rewriting the final reports") {
		t.Errorf("%+v: %v", *be, be)
	}
	d.Info.MaxDisk = 0
	if err := d.CheckBudget(1 << 40); err != nil {
		t.Fatalf("no budget: %v", err)
	}
}

// TestRetention: the sample is deterministic per (seed, pod), about P% of
// pods, and pods with findings are always kept.
func TestRetention(t *testing.T) {
	r, err := ParseRetention("sample:2")
	if err != nil || r.String() != "sample:2" {
		t.Fatalf("%v %v", r, err)
	}
	kept := 0
	for i := range 100000 {
		pod := "default/svc-" + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + string(rune(i))
		k := r.Keep(7, pod, false)
		if k != r.Keep(7, pod, false) {
			t.Fatal("not deterministic")
		}
		if k {
			kept++
		}
	}
	if kept < 1700 || kept > 2300 {
		t.Errorf("sample:2 kept %d of 100000", kept)
	}
	f, _ := ParseRetention("findings")
	if f.Keep(1, "p", false) || !f.Keep(1, "p", true) || !r.Keep(1, "p", true) {
		t.Error("findings retention")
	}
	for _, bad := range []string{"some", "sample:0", "sample:101", "sample:x"} {
		if _, err := ParseRetention(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestOpenRefusesOlderFormat: a format 1 directory is read, not resumed.
func TestOpenRefusesOlderFormat(t *testing.T) {
	dir := newDir(t, 1)
	b, _ := os.ReadFile(filepath.Join(dir, FileRun))
	os.WriteFile(filepath.Join(dir, FileRun), bytes.Replace(b, []byte(`"format": 2`), []byte(`"format": 1`), 1), 0o644)
	if _, _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not resumed") {
		t.Fatalf("err = %v", err)
	}
}

// TestSegmentSpills: a history in flight past the spill size moves to
// .segments/, commits the same bytes, and its file is gone afterwards.
func TestSegmentSpills(t *testing.T) {
	s := tinyScenario(t)
	dir := filepath.Join(t.TempDir(), "r")
	d, err := Create(dir, Info{Command: "run"}, []*scenario.Scenario{s}, WithSpillAt(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seg := d.NewSegment("tiny", "kep753", 0)
	fw := NewFrameWriter(seg)
	var want bytes.Buffer
	for i := range 20000 {
		line := []byte(`{"t":` + strings.Repeat("7", i%13+1) + `,"k":"pod.phase"}` + "\n")
		want.Write(line)
		fw.Write(line)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	spilled, _ := filepath.Glob(filepath.Join(dir, DirSegments, "*"))
	if len(spilled) != 1 || seg.Len() <= 4096 {
		t.Fatalf("spill files %v, segment %d bytes", spilled, seg.Len())
	}
	f, err := NewFinished(Entry{Scenario: "tiny", ScenarioHash: s.Hash, Policy: "kep753"}, seg, nil, nil, &TrialStats{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(f); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, DirSegments, "*")); len(left) != 0 {
		t.Errorf("spill file left: %v", left)
	}
	h, _ := OpenHistory(dir)
	got, _ := io.ReadAll(h)
	h.Close()
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("history: %d bytes, want %d", len(got), want.Len())
	}
}

// TestViewIsConsistent: a view taken while trials are still being
// committed (graduate or trend on a soak in progress) reads the trials
// committed when it was taken, in every file.
func TestViewIsConsistent(t *testing.T) {
	dir := newDir(t, 3)
	v, err := OpenView(dir)
	if err != nil || v.N != 3 {
		t.Fatalf("%+v %v", v, err)
	}
	d, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 5; i++ {
		if _, err := d.Commit(finished(t, d, tinyScenario(t).Hash, i)); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	count := func(each func(func() error) error) int {
		n := 0
		if err := each(func() error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	got := []int{
		count(func(f func() error) error { return v.EachEntry(func(*Entry) error { return f() }) }),
		count(func(f func() error) error { return v.EachTrialStats(func(*TrialStats) error { return f() }) }),
		count(func(f func() error) error { return v.EachPod(func(*metrics.Record) error { return f() }) }),
		count(func(f func() error) error { return v.EachFinding(func(*FindingRecord) error { return f() }) }),
	}
	for i, n := range got {
		if n != 3 {
			t.Errorf("reader %d saw %d trials, want the 3 of the view", i, n)
		}
	}
	if n := count(func(f func() error) error { return EachPod(dir, func(*metrics.Record) error { return f() }) }); n != 5 {
		t.Errorf("a new view sees %d pods, want 5", n)
	}
}

// TestEmptyDataFilesAreZstd: a data file no trial wrote to (a run without
// findings) is still a zstd stream: `zstdcat findings.jsonl.zst` failed
// with "unexpected end of file" on the zero-byte file it used to be. The
// empty frame that makes it one is past the committed sizes, so a resume
// cuts it, readers never see it, and the next close puts it back.
func TestEmptyDataFilesAreZstd(t *testing.T) {
	s := tinyScenario(t)
	dir := filepath.Join(t.TempDir(), "run")
	d, err := Create(dir, Info{Command: "run", Backend: "sim"}, []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	commitClean := func(d *Dir, trial int) {
		t.Helper()
		full := finished(t, d, s.Hash, trial)
		clean, err := NewFinished(full.Entry, full.History, nil, nil, &TrialStats{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(clean); err != nil {
			t.Fatal(err)
		}
	}
	commitClean(d, 0)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	decoded := func(name string) string {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(raw, zstdMagic) {
			t.Fatalf("%s: %d bytes, not a zstd frame", name, len(raw))
		}
		out, err := dec.DecodeAll(raw, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if zstdcat, err := exec.LookPath("zstd"); err == nil {
			if out, err := exec.Command(zstdcat, "-t", "-q", filepath.Join(dir, name)).CombinedOutput(); err != nil {
				t.Errorf("zstd -t %s: %v: %s", name, err, out)
			}
		}
		return string(out)
	}
	for _, name := range []string{FilePods, FileFindings} {
		if out := decoded(name); out != "" {
			t.Errorf("%s decodes to %q, want nothing", name, out)
		}
	}
	if out := decoded(FileHistory); !strings.Contains(out, "run.meta") {
		t.Errorf("history decodes to %q", out)
	}

	// A resume cuts the frame off (it is past the journal's sizes), commits
	// on, and the close puts it back; readers see no finding.
	d, _, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, FileFindings)); fi.Size() != 0 {
		t.Errorf("after resume findings.jsonl.zst has %d bytes, want the frame cut off", fi.Size())
	}
	commitClean(d, 1)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if out := decoded(FileFindings); out != "" {
		t.Errorf("findings decode to %q", out)
	}
	n := 0
	if err := EachFinding(dir, func(*FindingRecord) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("EachFinding: %d records, %v", n, err)
	}
	if entries, _, err := ReadJournal(filepath.Join(dir, FileJournal)); err != nil || len(entries) != 2 {
		t.Errorf("journal: %d entries, %v", len(entries), err)
	}
}

// TestFrameWriterToBuffer: a part compressed as it is written (the
// retained pods' records) is one frame that decodes to what was written,
// and an empty stream writes no frame (an empty part, like Compress(nil)).
func TestFrameWriterToBuffer(t *testing.T) {
	var lines bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&lines, `{"pod":"default/p-%d","latenciesMs":{"pod_startup":%d.5}}`+"\n", i, i%97)
	}
	var frame bytes.Buffer
	w := NewFrameWriter(&frame)
	for chunk := range slices.Chunk(lines.Bytes(), 4096) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if frame.Len() == 0 || frame.Len() >= lines.Len()/4 || !bytes.HasPrefix(frame.Bytes(), zstdMagic) {
		t.Fatalf("frame of %d bytes for %d bytes of records", frame.Len(), lines.Len())
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	out, err := dec.DecodeAll(frame.Bytes(), nil)
	if err != nil || !bytes.Equal(out, lines.Bytes()) {
		t.Fatalf("decoded %d bytes (want %d): %v", len(out), lines.Len(), err)
	}

	var empty bytes.Buffer
	if err := NewFrameWriter(&empty).Close(); err != nil || empty.Len() != 0 {
		t.Fatalf("empty stream wrote %d bytes, %v", empty.Len(), err)
	}
}

// TestOpenHistoryNamesWhatItGot: a directory that is not a run directory
// is called that, not "this run directory" (check printed "no history in
// this run directory" for any directory); a run directory without a
// history keeps that message.
func TestOpenHistoryNamesWhatItGot(t *testing.T) {
	plain := t.TempDir()
	var ue *UsageError
	if _, err := OpenHistory(plain); !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("a plain directory: %v", err)
	}
	run := newDir(t, 1)
	os.Remove(filepath.Join(run, FileHistory))
	if _, err := OpenHistory(run); !errors.As(err, &ue) || !strings.Contains(err.Error(), "no history in this run directory") {
		t.Errorf("a run directory without its history: %v", err)
	}
}

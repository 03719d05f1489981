package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// jsonRecord is what encoding/json writes for r (the encoder pods.jsonl
// used before AppendRecord): the reference AppendRecord must equal.
func jsonRecord(t testing.TB, r *Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	c := *r
	if c.LatenciesMs == nil {
		c.LatenciesMs = map[Metric]float64{}
	}
	if err := enc.Encode(&c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// awkward strings: escapes, HTML characters, invalid UTF-8, U+2028.
var awkward = []string{"", "default/web-0", `quo"te\back`, "<&>", "tab\there\nnew\r\b\f\x01\x1f", "bad\xffutf8", "line\u2028sep\u2029", "é漢字🙂"}

func randomRecord(r *rand.Rand) Record {
	pick := func() string { return awkward[r.IntN(len(awkward))] }
	rec := Record{Scenario: pick(), Policy: pick(), Seed: r.Uint64(), Trial: r.IntN(1000) - 10, Backend: pick(),
		Pod: pick(), Workload: pick(), Node: pick(), RestartPolicy: pick(), Job: r.IntN(2) == 0,
		Inits: r.IntN(3), Sidecars: r.IntN(3), Mains: r.IntN(3), Phase: pick(), Deleted: r.IntN(2) == 0,
		Removed: r.IntN(2) == 0, Faulted: r.IntN(2) == 0, Restarts: Restarts{r.IntN(5), r.IntN(5), r.IntN(5)}}
	for i := r.IntN(3); i > 0; i-- {
		rec.Faults = append(rec.Faults, pick())
	}
	for i := r.IntN(3); i > 0; i-- {
		rec.Notes = append(rec.Notes, pick())
	}
	for i := r.IntN(3); i > 0; i-- {
		rec.Unmet = append(rec.Unmet, pick())
	}
	if r.IntN(4) > 0 {
		rec.LatenciesMs = map[Metric]float64{}
		values := []float64{0, 1, 1.5, 2.523, 1e-7, 123456789.123456, 1e21, 1e20, 5e-324, -3.25, float64(r.Int64N(1e15)) / 1e6, math.MaxFloat64}
		for _, m := range Metrics {
			if r.IntN(2) == 0 {
				rec.LatenciesMs[m] = values[r.IntN(len(values))]
			}
		}
		if r.IntN(5) == 0 {
			rec.LatenciesMs["zz_unknown"] = 7
			rec.LatenciesMs["a_first"] = 0.25
		}
	}
	return rec
}

// TestAppendRecordEqualsEncodingJSON: the hand-written encoder writes the
// bytes encoding/json writes, for random records with awkward strings and
// numbers (so pods.jsonl files and goldens did not change).
func TestAppendRecordEqualsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	set := make([]bool, reflect.TypeFor[Record]().NumField())
	for i := 0; i < 5000; i++ {
		rec := randomRecord(r)
		for f := range set {
			set[f] = set[f] || !reflect.ValueOf(rec).Field(f).IsZero()
		}
		want := jsonRecord(t, &rec)
		got := AppendRecord(nil, &rec)
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
		var back Record
		if err := readBack(got, &back); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, got)
		}
	}
	// A field the random records never set would go untested: a field
	// added to Record must be added to randomRecord (and AppendRecord).
	for f, ok := range set {
		if !ok {
			t.Errorf("randomRecord never sets Record.%s", reflect.TypeFor[Record]().Field(f).Name)
		}
	}
}

// readBack reads one line back through RecordReader.
func readBack(b []byte, rec *Record) error {
	return NewRecordReader(strings.NewReader(string(b))).Read(rec)
}

// TestRecordWriterFlushes: records past the buffer size reach the writer
// in order, the rest on Flush.
func TestRecordWriterFlushes(t *testing.T) {
	var out bytes.Buffer
	w := NewRecordWriter(&out)
	var want bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		rec := randomRecord(r)
		want.Write(jsonRecord(t, &rec))
		if err := w.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() == 0 {
		t.Fatal("nothing written before Flush: the writer holds everything in memory")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatal("written lines differ from encoding/json's")
	}
}

// BenchmarkRecordEncode: one typical record through the hand-written
// encoder and through encoding/json (the encoder it replaced).
func BenchmarkRecordEncode(b *testing.B) {
	rec := Record{Scenario: "certify", Policy: "kep753", Seed: 42, Trial: 0, Backend: "sim", Pod: "default/web-123456",
		Workload: "web", Node: "node-17", RestartPolicy: "Always", Inits: 1, Sidecars: 2, Mains: 1, Phase: "Running",
		Deleted: true, Removed: true, Faulted: true, Faults: []string{"gc", "oom"},
		LatenciesMs: map[Metric]float64{PodStartup: 2300, CreateToInitialized: 1700.5, CreateToReady: 2300, SidecarGate: 1.25, DeletionToExited: 800}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendRecord(buf[:0], &rec)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(&rec)
		}
	})
}

package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func encodeAll(t testing.TB, events []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAll(&buf, events); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeAll(t testing.TB, data []byte) ([]Event, error) {
	t.Helper()
	return ReadAll(bytes.NewReader(data))
}

func TestGoldenSample(t *testing.T) {
	events := sampleRun()
	got := encodeAll(t, events)
	golden(t, "sample.jsonl", got)

	back, err := decodeAll(t, got)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(events) {
		t.Fatalf("decoded %d events, want %d", len(back), len(events))
	}
	for i := range events {
		if !reflect.DeepEqual(back[i], events[i]) {
			t.Errorf("event %d round trip:\n got %v\nwant %v", i, back[i], events[i])
		}
	}
}

// TestSampleCoversEverything keeps the golden file honest: it must use every
// kind and set every Event field, so the round trip above covers them all.
func TestSampleCoversEverything(t *testing.T) {
	kinds := map[Kind]bool{}
	fields := map[string]bool{}
	for _, e := range sampleRun() {
		kinds[e.Kind] = true
		v := reflect.ValueOf(e)
		for i := 0; i < v.NumField(); i++ {
			if !v.Field(i).IsZero() {
				fields[v.Type().Field(i).Name] = true
			}
		}
	}
	for _, k := range Kinds() {
		if !kinds[k] {
			t.Errorf("sample has no %s event", k)
		}
	}
	typ := reflect.TypeFor[Event]()
	for i := 0; i < typ.NumField(); i++ {
		if name := typ.Field(i).Name; !fields[name] && name != "Slot" { // Slot: in-process only, never encoded
			t.Errorf("sample never sets Event.%s", name)
		}
	}
}

// fullEvent sets every flat field, with strings that need escaping.
func fullEvent(k Kind, v bool) Event {
	return Event{
		T: -1 << 63, Kind: k, Pod: "ns/p\"q", Node: "n\\1", Container: "c\t1",
		Attempt: 1<<32 - 1, Code: -1 << 31, Reason: "r\n", Grace: 1<<63 - 1,
		Phase: "Running", Cond: "Ready", Value: v, Probe: "liveness", Result: "success",
		Fault: "f\u2028", FaultID: 7, Target: "日本", Msg: "a\x00b\x1fc/\u00e9</script>",
	}
}

func TestRoundTripEveryKindEveryField(t *testing.T) {
	for _, k := range Kinds() {
		for _, v := range []bool{false, true} {
			e := fullEvent(k, v)
			line, err := AppendEvent(nil, &e)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(line) {
				t.Fatalf("%s: invalid JSON %s", k, line)
			}
			var got Event
			if err := UnmarshalEvent(line, &got); err != nil {
				t.Fatalf("%s: %v\n%s", k, err, line)
			}
			if got != e {
				t.Errorf("%s round trip:\n got %v\nwant %v", k, got, e)
			}
		}
	}
}

func TestValueWrittenWhenFalse(t *testing.T) {
	for _, k := range Kinds() {
		e := Event{T: 1, Kind: k}
		line, _ := AppendEvent(nil, &e)
		has := bytes.Contains(line, []byte(`"v":false`))
		want := k == PodCondition || k == ContainerStarted || k == ContainerReady ||
			k == ContainerPostStartDone || k == PodTerminating || k == ContainerAppStarted || k == ContainerServing
		if has != want {
			t.Errorf("%s: writes v=false: %v, want %v (%s)", k, has, want, line)
		}
	}
}

func TestEncodeMinimalAndOrder(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{Event{Kind: KubeletDown, Node: "n1"}, `{"t":0,"k":"kubelet.down","node":"n1"}`},
		{Event{T: 5, Kind: ContainerExited, Pod: "a/b", Container: "c", Code: 0, Reason: "Completed"},
			`{"t":5,"k":"container.exited","pod":"a/b","c":"c","reason":"Completed"}`},
		{Event{T: 9, Kind: PodCondition, Pod: "a/b", Cond: "Ready"}, `{"t":9,"k":"pod.condition","pod":"a/b","cond":"Ready","v":false}`},
		{Event{T: 1, Kind: RunEnd, Msg: "partial"}, `{"t":1,"k":"run.end","msg":"partial"}`},
		{Event{T: 1, Kind: RunMeta, Meta: &Meta{Scenario: "s", Extra: map[string]string{"z": "1", "a": "2"}}},
			`{"t":1,"k":"run.meta","meta":{"scenario":"s","seed":0,"trial":0,"policy":"","backend":"","version":"","extra":{"a":"2","z":"1"}}}`},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestEncodeInvalidKind(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(&Event{T: 1}); err == nil {
		t.Fatal("invalid kind encoded without error")
	}
	if err := w.Write(&Event{T: 2, Kind: NodeUp, Node: "n"}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if got, want := buf.String(), "{\"t\":2,\"k\":\"node.up\",\"node\":\"n\"}\n"; got != want {
		t.Errorf("a failed Write left data behind: %q", got)
	}
}

// TestStringEscapingMatchesEncodingJSON pins the hand-written escaper to
// encoding/json (without HTML escaping).
func TestStringEscapingMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `q"uote`, `back\slash`, "nl\ncr\rtab\tbs\bff\f", "\x00\x01\x1f\x7f",
		"é日本🙂", "bad\xffutf8\xc3", "\u2028\u2029", "<&>", strings.Repeat("x", 300),
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		got := appendString(nil, s)
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: got %s want %s", s, got, want.String())
		}
		var d decoder
		back, _, err := d.str(got, 0)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var std string
		json.Unmarshal(got, &std)
		if string(back) != std {
			t.Errorf("%q: decoded %q, encoding/json decodes %q", s, back, std)
		}
	}
}

func TestDecodeEscapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"a\/b"`, "a/b"},
		{`"\u00e9\u65E5"`, "é日"},
		{`"\ud83d\ude42"`, "🙂"},
		{`"\ud83d"`, "\ufffd"},
		{`"\ud83dx"`, "\ufffdx"},
		{"\"a\xffb\"", "a\ufffdb"},
		{"\"\xc3\\n\"", "\ufffd\n"},
	}
	for _, tt := range tests {
		var d decoder
		got, _, err := d.str([]byte(tt.in), 0)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"t":1,"k":"x"}`, `unknown kind "x"`},
		{`{"t":1,"k":"node.up","color":"red"}`, `unknown field "color"`},
		{`{"t":1,"k":"node.up","t":2}`, `duplicate field "t"`},
		{`{"t":1}`, `missing field "k"`},
		{`{"k":"node.up"}`, `missing field "t"`},
		{`{}`, `missing field "k"`},
		{`[1]`, `expected a JSON object`},
		{`{"t":1.5,"k":"node.up"}`, `field "t": expected an integer, got a fraction`},
		{`{"t":"1","k":"node.up"}`, `field "t": expected an integer`},
		{`{"t":01,"k":"node.up"}`, `leading zero`},
		{`{"t":9223372036854775808,"k":"node.up"}`, `out of range for int64`},
		{`{"t":99999999999999999999,"k":"node.up"}`, `integer overflow`},
		{`{"t":1,"k":"node.up","attempt":-1}`, `field "attempt": expected an integer`},
		{`{"t":1,"k":"node.up","attempt":4294967296}`, `out of range for uint32`},
		{`{"t":1,"k":"node.up","code":2147483648}`, `out of range for int32`},
		{`{"t":1,"k":"node.up","v":1}`, `field "v": expected true or false`},
		{`{"t":1,"k":"node.up","node":"a` + "\x01" + `"}`, `control character`},
		{`{"t":1,"k":"node.up","node":"\q"}`, `bad escape \q`},
		{`{"t":1,"k":"node.up" "node":"a"}`, `expected ',' or '}'`},
		{`{"t":1,"k":"node.up"} x`, `unexpected data after the object`},
		{`{"t":1,"k":"pod.created","spec":{"main":[],"bogus":1}}`, `unknown field "bogus"`},
		{`{"t":1,"k":"pod.created","spec":null}`, `null is not allowed`},
		{`{"t":1,"k":"run.meta","meta":[]}`, `expected an object`},
		{`{"t":1,"k":"run.meta","meta":{"seed":"x"}}`, `cannot unmarshal string`},
		{`{"t":1,"k":"node.up",`, `field name: expected a string`},
	}
	for _, tt := range tests {
		var e Event
		err := UnmarshalEvent([]byte(tt.line), &e)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got error %v\nwant it to contain %q", tt.line, err, tt.want)
		}
	}
}

func TestReaderLineNumbersAndRecovery(t *testing.T) {
	in := "{\"t\":1,\"k\":\"node.up\",\"node\":\"a\"}\n" +
		"\n" + // blank lines are skipped but counted
		"{\"t\":2,\"k\":\"x\"}\n" +
		"{\"t\":3,\"k\":\"node.down\",\"node\":\"a\"}\r\n"
	r := NewReader(strings.NewReader(in))
	var e Event
	if err := r.Read(&e); err != nil || e.T != 1 {
		t.Fatalf("first: %v %v", err, e)
	}
	err := r.Read(&e)
	if err == nil || err.Error() != `history line 3: unknown kind "x"` {
		t.Fatalf("got %v", err)
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || errors.Is(err, ErrTruncated) {
		t.Fatalf("error %#v", err)
	}
	if err := r.Read(&e); err != nil || e.T != 3 || e.Kind != NodeDown || r.Line() != 4 {
		t.Fatalf("after error: %v %v line %d", err, e, r.Line())
	}
	if err := r.Read(&e); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

// TestTruncatedAtEveryByte cuts the golden history at every offset, as a
// crash could, and checks that every complete line is still read and the
// damage is reported as ErrTruncated, never as a plain error.
func TestTruncatedAtEveryByte(t *testing.T) {
	full := encodeAll(t, sampleRun())
	want, _ := decodeAll(t, full)
	for cut := 0; cut <= len(full); cut++ {
		data := full[:cut]
		got, err := decodeAll(t, data)
		complete := bytes.Count(data, []byte("\n"))
		partial := cut > 0 && data[cut-1] != '\n'
		switch {
		case err == nil:
			// Either the cut is at a line end, or the last line happens to
			// be a complete object (cut just before its newline).
			if partial && len(got) != complete+1 {
				t.Fatalf("cut %d: got %d events without error, want %d", cut, len(got), complete+1)
			}
			if !partial && len(got) != complete {
				t.Fatalf("cut %d: got %d events, want %d", cut, len(got), complete)
			}
		case errors.Is(err, ErrTruncated):
			if !partial || len(got) != complete {
				t.Fatalf("cut %d: ErrTruncated after %d events (partial %v, complete lines %d)", cut, len(got), partial, complete)
			}
			if !strings.HasPrefix(err.Error(), "history line ") {
				t.Fatalf("cut %d: error without line number: %v", cut, err)
			}
		default:
			t.Fatalf("cut %d: %v", cut, err)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("cut %d: event %d differs", cut, i)
			}
		}
	}
}

func TestTruncatedThenEOF(t *testing.T) {
	r := NewReader(strings.NewReader("{\"t\":1,\"k\":\"node.up\",\"node\":\"a\"}\n{\"t\":2,\"k\":\"no"))
	var e Event
	if err := r.Read(&e); err != nil {
		t.Fatal(err)
	}
	err := r.Read(&e)
	if !errors.Is(err, ErrTruncated) || !strings.HasPrefix(err.Error(), "history line 2: truncated last line") {
		t.Fatalf("got %v", err)
	}
	if err := r.Read(&e); err != io.EOF {
		t.Fatalf("after truncation: %v", err)
	}
}

func TestLongLine(t *testing.T) {
	e := Event{T: 1, Kind: FaultNotApplied, Msg: strings.Repeat("long message ", 40000)}
	data := encodeAll(t, []Event{e, e})
	got, err := decodeAll(t, data)
	if err != nil || len(got) != 2 || got[0] != e || got[1] != e {
		t.Fatalf("long lines: %v, %d events", err, len(got))
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterErrorIsSticky(t *testing.T) {
	fw := &failWriter{}
	w := NewWriter(fw)
	e := fullEvent(ContainerExited, false)
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = w.Write(&e)
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v", err)
	}
	if w.Write(&e) == nil || w.Flush() == nil || fw.n != 1 {
		t.Fatalf("error not sticky (underlying writes %d)", fw.n)
	}
}

func TestWriterSteadyStateAllocs(t *testing.T) {
	w := NewWriter(io.Discard)
	e := fullEvent(ContainerReady, true)
	if n := testing.AllocsPerRun(1000, func() { w.Write(&e) }); n != 0 {
		t.Errorf("Writer.Write allocates %v times per event", n)
	}
}

func TestReaderSteadyStateAllocs(t *testing.T) {
	e := Event{T: 123456789, Kind: ContainerReady, Pod: "default/web-0", Node: "node-1", Container: "proxy", Attempt: 2, Value: true}
	line, _ := AppendEvent(nil, &e)
	data := bytes.Repeat(line, 2000)
	r := NewReader(bytes.NewReader(data))
	var got Event
	r.Read(&got) // warm the intern table
	if n := testing.AllocsPerRun(1000, func() {
		if err := r.Read(&got); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Reader.Read allocates %v times per event", n)
	}
	if got != e {
		t.Errorf("got %v", got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, e := range sampleRun() {
		line, _ := AppendEvent(nil, &e)
		f.Add(line)
	}
	f.Add([]byte(`{"t":1,"k":"node.up","node":"\ud83d\ude42"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Event
		if UnmarshalEvent(line, &e) != nil {
			return
		}
		if !json.Valid(bytes.TrimRight(line, "\r\n")) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		// Whatever decodes must re-encode to something that decodes to
		// the same event.
		out, err := AppendEvent(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		var e2 Event
		if err := UnmarshalEvent(out, &e2); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("unstable: %v vs %v", e, e2)
		}
	})
}

func BenchmarkWriter(b *testing.B) {
	events := sampleRun()
	var flat []Event // the steady-state mix: no spec or meta
	for _, e := range events {
		if e.Spec == nil && e.Meta == nil {
			flat = append(flat, e)
		}
	}
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	n := 0
	for b.Loop() { // one op is one event
		w.Write(&flat[n%len(flat)])
		n++
	}
}

// BenchmarkReader reads the sample history, where one line in 13 carries a
// spec or meta (decoded by encoding/json): a pessimistic mix.
func BenchmarkReader(b *testing.B) {
	benchmarkReader(b, sampleRun())
}

// BenchmarkReaderFlat reads only flat events, the bulk of a real history.
func BenchmarkReaderFlat(b *testing.B) {
	var flat []Event
	for _, e := range sampleRun() {
		if e.Spec == nil && e.Meta == nil {
			flat = append(flat, e)
		}
	}
	benchmarkReader(b, flat)
}

func benchmarkReader(b *testing.B, events []Event) {
	data := bytes.Repeat(encodeAll(b, events), 200)
	lines := bytes.Count(data, []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var e Event
	for b.Loop() {
		r := NewReader(bytes.NewReader(data))
		for r.Read(&e) == nil {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/event")
}

func TestReaderSharesIdenticalSpecs(t *testing.T) {
	a := &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Always"}
	b := &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Never"}
	got, err := decodeAll(t, encodeAll(t, []Event{
		{Kind: PodCreated, Pod: "p1", Spec: a},
		{Kind: PodCreated, Pod: "p2", Spec: a},
		{Kind: PodCreated, Pod: "p3", Spec: b},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Spec != got[1].Spec || got[0].Spec == got[2].Spec {
		t.Error("identical specs are not shared, or different ones are")
	}
	if !reflect.DeepEqual(got[0].Spec, a) || !reflect.DeepEqual(got[2].Spec, b) {
		t.Errorf("specs decoded wrong: %+v %+v", got[0].Spec, got[2].Spec)
	}
}

// A run's lines are sorted by t (docs/history.md); a line whose t goes
// back is malformed, named by its line number (issue 15, item 16: such a
// history was checked as valid). Each run starts again at its run.meta.
func TestReaderRejectsDecreasingT(t *testing.T) {
	in := `{"t":0,"k":"run.meta","meta":{"scenario":"s","seed":1,"trial":0,"policy":"kep753","backend":"sim","version":"v"}}
{"t":5,"k":"node.up","node":"a"}
{"t":5,"k":"node.down","node":"a"}
{"t":0,"k":"run.meta","meta":{"scenario":"s","seed":1,"trial":1,"policy":"kep753","backend":"sim","version":"v"}}
{"t":1,"k":"node.up","node":"a"}
{"t":0,"k":"node.down","node":"a"}
{"t":2,"k":"node.up","node":"a"}
`
	r := NewReader(strings.NewReader(in))
	var e Event
	for i := 0; i < 5; i++ {
		if err := r.Read(&e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	err := r.Read(&e)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 6 || !errors.Is(err, ErrUnsorted) {
		t.Fatalf("got %v, want ErrUnsorted on line 6", err)
	}
	if want := "history line 6: t goes backwards: t=0 is before t=1 of line 5"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want prefix %q", err, want)
	}
	if err := r.Read(&e); err != nil || e.T != 2 {
		t.Fatalf("after the error: %v %+v", err, e)
	}
}

// repeatReader yields an endless run of one byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A line longer than MaxLineBytes is an error naming its line, skipped
// without being held: a 1.5 GB line without a newline ran `check` out of
// memory (issue 15, item 6). Reading goes on after it.
func TestReaderLineTooLong(t *testing.T) {
	for _, tail := range []string{"\"}\n{\"t\":2,\"k\":\"node.up\",\"node\":\"a\"}\n", ""} {
		in := io.MultiReader(
			strings.NewReader("{\"t\":1,\"k\":\"node.up\",\"node\":\"a\"}\n{\"t\":1,\"k\":\"fault.not-applied\",\"msg\":\""),
			io.LimitReader(repeatReader('x'), 256<<20),
			strings.NewReader(tail))
		r := NewReader(in)
		var e Event
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := r.Read(&e); err != nil {
			t.Fatal(err)
		}
		err := r.Read(&e)
		runtime.ReadMemStats(&after)
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrTruncated) {
			t.Fatalf("got %v, want ErrLineTooLong on line 2", err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*MaxLineBytes {
			t.Errorf("skipping a 256 MiB line allocated %d bytes, want at most %d", alloc, 8*MaxLineBytes)
		}
		err = r.Read(&e)
		if tail == "" {
			if err != io.EOF {
				t.Fatalf("after a long last line: %v, want EOF", err)
			}
			continue
		}
		if err != nil || e.T != 2 || r.Line() != 3 {
			t.Fatalf("after the long line: %v %+v line %d", err, e, r.Line())
		}
	}
}

// The Writer never writes a line the Reader would refuse.
func TestWriterRefusesOverlongLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	ok := Event{T: 1, Kind: NodeUp, Node: "a"}
	if err := w.Write(&Event{T: 1, Kind: FaultNotApplied, Msg: strings.Repeat("m", MaxLineBytes)}); err == nil {
		t.Fatal("wrote an over-long line")
	}
	if err := w.Write(&ok); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	got, err := ReadAll(&buf)
	if err != nil || len(got) != 1 || got[0] != ok {
		t.Fatalf("stream after the refused line: %v %v", got, err)
	}
}

// TestWriterSpecCacheEqualsAppendEvent: pod.created lines written with
// the Writer's spec cache (shared specs, a change of spec, a spec beside
// other fields) are the bytes AppendEvent gives.
func TestWriterSpecCacheEqualsAppendEvent(t *testing.T) {
	a := &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Always", Labels: map[string]string{"b": "2", "a": "1"}}
	b := &PodSpec{Init: []ContainerSpec{{Name: "proxy", Role: "sidecar", Startup: true}}, Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Never"}
	events := []Event{
		{T: 1, Kind: PodCreated, Pod: "ns/p1", Spec: a},
		{T: 2, Kind: PodCreated, Pod: "ns/p2", Spec: a},
		{T: 3, Kind: PodCreated, Pod: "ns/p3", Spec: b},
		{T: 4, Kind: PodCreated, Pod: "ns/p4", Spec: a, Msg: "note \"quoted\""},
		{T: 5, Kind: ContainerRunning, Pod: "ns/p4", Container: "app"},
		{T: 6, Kind: PodCreated, Pod: "ns/p5", Spec: a},
	}
	var got bytes.Buffer
	w := NewWriter(&got)
	var want []byte
	for i := range events {
		if err := w.Write(&events[i]); err != nil {
			t.Fatal(err)
		}
		var err error
		if want, err = AppendEvent(want, &events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("Writer:\n%s\nAppendEvent:\n%s", got.Bytes(), want)
	}
}

// TestSlotIsNotEncoded: Event.Slot is an in-process hint; the encoding
// of an event is the same with or without it, and it decodes to zero.
func TestSlotIsNotEncoded(t *testing.T) {
	e := fullEvent(ContainerRunning, true)
	var a, b bytes.Buffer
	if err := WriteAll(&a, []Event{e}); err != nil {
		t.Fatal(err)
	}
	e.Slot = 42
	if err := WriteAll(&b, []Event{e}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("a slot hint changed the encoding:\n%s%s", a.String(), b.String())
	}
	back, err := ReadAll(&b)
	if err != nil || len(back) != 1 || back[0].Slot != 0 {
		t.Fatalf("decoded %+v, %v: want one event without a slot", back, err)
	}
}

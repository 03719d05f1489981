package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/scenarios"
)

// MaxFileSize bounds a scenario file. Load reads at most this much (plus
// one byte to tell), so a huge file, a device such as /dev/zero or a FIFO
// that never ends costs no more than the limit.
const MaxFileSize = 4 << 20

// ShippedFS holds the shipped scenarios that `base:` refers to
// (scenarios/*.yaml, embedded). Tests may replace it.
var ShippedFS fs.FS = scenarios.FS

// resolver maps a field path to a file position.
type resolver interface {
	lookup(path string) pos
}

func (ix *posIndex) lookupPos(path string) pos { p, _ := ix.lookup(path); return p }

type ixResolver struct{ ix *posIndex }

func (r ixResolver) lookup(path string) pos { return r.ix.lookupPos(path) }

// positions resolves the field paths of a (possibly merged) scenario.
type positions struct {
	main resolver
	// prov maps merged paths to where their value came from (base merges).
	prov map[string]source
}

type source struct {
	res  resolver
	path string
}

func (p *positions) lookup(path string) pos {
	if len(p.prov) == 0 {
		return p.main.lookup(path)
	}
	q := path
	for {
		if s, ok := p.prov[q]; ok {
			return s.res.lookup(s.path + path[len(q):])
		}
		if q == "" {
			return p.main.lookup(path)
		}
		q = parentPath(q)
	}
}

// Pos returns "file:line" for a field path of a loaded scenario (for
// messages outside this package).
func (s *Scenario) Pos(path string) string {
	if s.pos == nil {
		return s.File
	}
	p := s.pos.lookup(path)
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Load reads, decodes and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := readBounded(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return LoadBytes(path, data)
}

// readBounded reads at most limit bytes of a file; a longer file is an
// ErrorList naming it, read no further.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(file string) error {
	return ErrorList{{File: file, Msg: fmt.Sprintf("file is larger than %d bytes (%d MiB), the limit for a scenario", MaxFileSize, MaxFileSize>>20)}}
}

// LoadShipped loads a shipped scenario by name (scenarios/NAME.yaml).
func LoadShipped(name string) (*Scenario, error) {
	data, err := fs.ReadFile(ShippedFS, name+".yaml")
	if err != nil {
		return nil, fmt.Errorf("no shipped scenario %q", name)
	}
	return LoadBytes("scenarios/"+name+".yaml", data)
}

// ShippedNames lists the shipped scenarios.
func ShippedNames() []string {
	ents, _ := fs.Glob(ShippedFS, "*.yaml")
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e, ".yaml"))
	}
	sort.Strings(out)
	return out
}

// LoadBytes decodes and validates a scenario. file is used in error
// messages. On failure the error is an ErrorList (every problem found, each
// with file, line, field path and what is allowed) or an I/O error.
func LoadBytes(file string, data []byte) (*Scenario, error) {
	obj, res, err := loadGeneric(file, data, 0, nil)
	if err != nil {
		return nil, err
	}
	e := &errs{res: res}
	// Identify the format before anything else: a wrong apiVersion makes
	// every other message noise.
	checkHeader(obj, e)
	if len(e.list) > 0 {
		return nil, e.err()
	}
	checkShape(obj, scenarioType, "", e, 0)
	if len(e.list) > 0 {
		return nil, e.err()
	}
	delete(obj, "base") // consumed by the merge
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, &FieldError{File: file, Msg: err.Error()}
	}
	s := &Scenario{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		// checkShape should have caught it; report without a line.
		return nil, ErrorList{{File: file, Msg: "decoding: " + err.Error()}}
	}
	if base, ok := rawBase(data); ok {
		s.Base = base
	}
	s.File = file
	sum := sha256.Sum256(data)
	s.Hash = hex.EncodeToString(sum[:])
	s.Source = data
	s.pos = res
	validate(s, e)
	if err := e.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// rawBase returns the file's own base: value (not the inherited one).
func rawBase(data []byte) (string, bool) {
	var top struct {
		Base string `json:"base"`
	}
	if err := yaml.Unmarshal(data, &top); err != nil || top.Base == "" {
		return "", false
	}
	return top.Base, true
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// loadGeneric parses data into a generic JSON object and applies its base
// chain. depth and chain guard against cycles.
func loadGeneric(file string, data []byte, depth int, chain []string) (map[string]any, *positions, error) {
	// The size check comes first: everything after it is linear in the
	// size, but only a bounded size keeps that cheap.
	if len(data) > MaxFileSize {
		return nil, nil, tooLarge(file)
	}
	ix := indexYAML(file, data)
	res := &positions{main: ixResolver{ix}}
	if bytes.Count(data, []byte("\n---")) > 0 && hasSecondDocument(data) {
		msg := "a scenario file holds exactly one YAML document (found a second document after ---)"
		if hint := manifestHint(map[string]any{"kind": ManifestKind(data)}, file); hint != "" {
			msg += "; " + hint // kubectl's output: a Deployment beside its Service, ConfigMap...
		}
		return nil, nil, ErrorList{{File: file, Msg: msg}}
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil, ErrorList{yamlError(ix, data, err)}
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, nil, ErrorList{{File: file, Msg: "invalid YAML: " + err.Error()}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		what := "empty"
		if v != nil {
			what = jsonKind(v)
		}
		return nil, nil, ErrorList{{File: file, Line: 1, Msg: fmt.Sprintf("a scenario is a YAML mapping with apiVersion: %s and kind: %s; got %s", APIVersion, Kind, what)}}
	}
	baseV, hasBase := obj["base"]
	if !hasBase || baseV == nil {
		return obj, res, nil
	}
	baseName, ok := baseV.(string)
	e := &errs{res: res}
	switch {
	case !ok:
		e.add("base", "must be the name of a shipped scenario (a string), got %s", jsonKind(baseV))
	case depth >= 8:
		e.add("base", "base chain is too deep (more than 8 levels)")
	case contains(chain, baseName):
		e.add("base", "base cycle: %s -> %s", strings.Join(chain, " -> "), baseName)
	}
	if len(e.list) > 0 {
		return nil, nil, e.err()
	}
	bdata, rerr := fs.ReadFile(ShippedFS, baseName+".yaml")
	if rerr != nil {
		e.add("base", "%s", unknownName("shipped scenario", baseName, ShippedNames()))
		return nil, nil, e.err()
	}
	bobj, bres, err := loadGeneric("scenarios/"+baseName+".yaml", bdata, depth+1, append(chain, baseName))
	if err != nil {
		return nil, nil, err
	}
	if md, ok := obj["metadata"].(map[string]any); !ok || md["name"] == nil {
		e.add("metadata", "a scenario with base: must set its own metadata.name")
		return nil, nil, e.err()
	}
	m := &merger{prov: map[string]source{}}
	delete(bobj, "base")
	merged := m.merge(bobj, obj, bres, res, "", "", "").(map[string]any)
	return merged, &positions{main: res, prov: m.prov}, nil
}

// yamlError turns a YAML parser error into a FieldError with the line,
// column and field path the parser does not give, where the index knows
// them: the second occurrence of a duplicate key, a NaN or infinity (which
// JSON cannot carry), the first alias of an alias bomb.
func yamlError(ix *posIndex, data []byte, err error) *FieldError {
	msg := err.Error()
	fe := &FieldError{File: ix.file, Msg: "invalid YAML: " + cleanYAMLErr(msg)}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
	}
	switch {
	case strings.Contains(msg, "already set in map"):
		for _, d := range ix.dups {
			if int(d.line) == fe.Line || fe.Line == 0 {
				first := ix.posOf(d.node)
				fe.Line, fe.Col, fe.Path = int(d.line), int(d.col), ix.path(d.node)
				fe.Msg = fmt.Sprintf("duplicate key %q (first set at line %d); a key may appear once in a mapping", ix.nodes[d.node].key, first.Line)
				break
			}
		}
	case strings.Contains(msg, "unsupported value: NaN") || strings.Contains(msg, "unsupported value: +Inf") || strings.Contains(msg, "unsupported value: -Inf"):
		fe.Msg = "invalid number: NaN and infinities are not allowed (write a finite number)"
		if len(ix.specials) > 0 {
			s := ix.specials[0]
			fe.Line, fe.Col, fe.Path = int(s.line), int(s.col), ix.path(s.node)
			fe.Msg = fmt.Sprintf("%s is not a finite number: NaN and infinities are not allowed (write a finite number)", s.text)
		} else if l, c, tok, ok := findSpecialFloat(data); ok {
			fe.Line, fe.Col = l, c
			fe.Msg = fmt.Sprintf("%s is not a finite number: NaN and infinities are not allowed (write a finite number)", tok)
			if id := ix.lastOnLine(l); id > 0 {
				fe.Path = ix.path(id) // the key holding the flow collection
			}
		}
	case strings.Contains(msg, "found character that cannot start any token") && fe.Line > 0:
		// The parser's words for a tab in the indentation, the usual
		// cause (an editor's tab key): name it and where it is.
		lines := strings.Split(string(data), "\n")
		if fe.Line <= len(lines) {
			l := lines[fe.Line-1]
			if i := strings.IndexByte(l, '\t'); i >= 0 && strings.TrimLeft(l[:i], " ") == "" {
				fe.Col = i + 1
				fe.Msg = "invalid YAML: a tab in the indentation; YAML indents with spaces only"
			}
		}
	case strings.Contains(msg, "excessive aliasing"):
		fe.Msg = "YAML aliases expand to too much data (document contains excessive aliasing); write the values out instead of nesting aliases"
		if len(ix.aliases) > 0 {
			a := ix.aliases[0]
			fe.Line, fe.Col, fe.Path = int(a.line), int(a.col), ix.path(a.node)
			fe.Msg += " (first alias here)"
		}
	}
	return fe
}

// specialInFlowRE finds a NaN or infinity inside a flow collection.
var specialInFlowRE = regexp.MustCompile(`(?:^|[\s\[{,:])([-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\s*(?:[,\]}]|$)`)

// findSpecialFloat returns the line and column of the first NaN or
// infinity the index did not see (inside a flow collection).
func findSpecialFloat(data []byte) (line, col int, tok string, ok bool) {
	for i, l := range strings.Split(string(data), "\n") {
		if c, _, _ := strings.Cut(l, " #"); c != "" {
			if m := specialInFlowRE.FindStringSubmatchIndex(c); m != nil {
				return i + 1, m[2] + 1, c[m[2]:m[3]], true
			}
		}
	}
	return 0, 0, "", false
}

func hasSecondDocument(data []byte) bool {
	seen := false
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimRight(l, " \r\t")
		if strings.HasPrefix(t, "---") && (len(t) == 3 || t[3] == ' ') {
			if seen {
				return true
			}
			seen = true
			continue
		}
		if !seen && strings.TrimSpace(t) != "" && !strings.HasPrefix(strings.TrimSpace(t), "#") {
			seen = true // content before the first marker counts as a document
		}
	}
	return false
}

func cleanYAMLErr(s string) string {
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	parts := strings.Split(s, "\n")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return strings.Join(parts, "; ")
}

// merger merges a base scenario (generic form) with an overlay.
//
// Rules (docs/scenarios.md "base"): mappings merge key by key, the overlay
// winning; a null in the overlay deletes the key; lists replace the base's
// list, except workloads and faults, which merge by name (an overlay entry
// whose name matches a base entry is merged into it, others are appended).
type merger struct {
	prov map[string]source
}

func (m *merger) merge(base, over any, bres, ores resolver, bp, op, mp string) any {
	bm, bok := base.(map[string]any)
	om, ook := over.(map[string]any)
	if bok && ook {
		m.prov[mp] = source{ores, op}
		out := make(map[string]any, len(bm)+len(om))
		for k, v := range bm {
			out[k] = v
			m.mark(v, bres, join(bp, k), join(mp, k))
		}
		for k, v := range om {
			if v == nil {
				delete(out, k)
				continue
			}
			if bv, ok := bm[k]; ok {
				out[k] = m.merge(bv, v, bres, ores, join(bp, k), join(op, k), join(mp, k))
			} else {
				out[k] = v
				m.mark(v, ores, join(op, k), join(mp, k))
			}
		}
		return out
	}
	bl, blok := base.([]any)
	ol, olok := over.([]any)
	if blok && olok && (mp == "workloads" || mp == "faults") {
		out := make([]any, 0, len(bl)+len(ol))
		index := map[string]int{}
		for i, v := range bl {
			out = append(out, v)
			m.mark(v, bres, idx(bp, i), idx(mp, i))
			if n := nameOf(v); n != "" {
				index[n] = i
			}
		}
		for j, v := range ol {
			if i, ok := index[nameOf(v)]; ok && nameOf(v) != "" {
				out[i] = m.merge(bl[i], v, bres, ores, idx(bp, i), idx(op, j), idx(mp, i))
				continue
			}
			m.mark(v, ores, idx(op, j), idx(mp, len(out)))
			out = append(out, v)
		}
		m.prov[mp] = source{ores, op}
		return out
	}
	m.mark(over, ores, op, mp)
	return over
}

// mark records that the value at merged path mp came from path p of res.
// Children inherit the provenance through positions.lookup.
func (m *merger) mark(_ any, res resolver, p, mp string) { m.prov[mp] = source{res, p} }

func nameOf(v any) string {
	if mm, ok := v.(map[string]any); ok {
		if s, ok := mm["name"].(string); ok {
			return s
		}
	}
	return ""
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func idx(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + x.String()
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	}
	return fmt.Sprintf("%T", v)
}

func checkHeader(obj map[string]any, e *errs) {
	if hint := manifestHint(obj, e.res.lookup("kind").File); hint != "" { // a pasted Pod, Deployment, Job...
		e.add("kind", "%s", hint)
		return
	}
	av, _ := obj["apiVersion"].(string)
	switch {
	case obj["apiVersion"] == nil:
		e.add("apiVersion", "required: apiVersion: %s", APIVersion)
	case av != APIVersion:
		msg := fmt.Sprintf("unsupported apiVersion %q (allowed: %s)", fmt.Sprint(obj["apiVersion"]), APIVersion)
		if strings.Contains(av, "sidebench") || Suggest(av, []string{APIVersion}) != "" {
			msg += fmt.Sprintf("; did you mean %q?", APIVersion)
		}
		e.add("apiVersion", "%s", msg)
	}
	k, _ := obj["kind"].(string)
	switch {
	case obj["kind"] == nil:
		e.add("kind", "required: kind: %s", Kind)
	case k != Kind:
		e.add("kind", "%s", unknownName("kind", fmt.Sprint(obj["kind"]), []string{Kind}))
	}
}

var (
	scenarioType    = reflect.TypeOf(Scenario{})
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	behaviorType    = reflect.TypeOf(Behavior{})
	containerType   = reflect.TypeOf(behavior.Container{})
	attemptType     = reflect.TypeOf(behavior.Attempt{})
)

type fieldInfo struct {
	name string
	typ  reflect.Type
}

var fieldCache sync.Map // reflect.Type → map[string]fieldInfo + sorted names

type structFields struct {
	byName map[string]fieldInfo
	names  []string
}

func fieldsOf(t reflect.Type) *structFields {
	if v, ok := fieldCache.Load(t); ok {
		return v.(*structFields)
	}
	sf := &structFields{byName: map[string]fieldInfo{}}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					walk(et)
					continue
				}
			}
			if strings.Contains(opts, "inline") && ft.Kind() == reflect.Struct {
				walk(ft)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := sf.byName[name]; !dup {
				sf.byName[name] = fieldInfo{name: name, typ: ft}
				sf.names = append(sf.names, name)
			}
		}
	}
	walk(t)
	sort.Strings(sf.names)
	fieldCache.Store(t, sf)
	return sf
}

// checkShape checks a generic value against a Go type the way strict JSON
// decoding would, but reports every problem with its field path: unknown
// fields (with the allowed names and the closest one), wrong types, and
// values that the field's own decoder rejects (durations, distributions,
// quantities). It converts numbers and booleans in string fields to
// strings, as sigs.k8s.io/yaml does for Kubernetes objects.
func checkShape(v any, t reflect.Type, path string, e *errs, depth int) any {
	if v == nil || depth > 64 {
		return v
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == behaviorType || t == attemptType {
		t = containerType // a Behavior entry or attempt overlay holds behavior.Container fields
	}
	if !reflect.PointerTo(t).Implements(jsonUnmarshaler) && reflect.PointerTo(t).Implements(textUnmarshaler) {
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case json.Number:
			text = x.String()
		default:
			e.add(path, "expected a string, got %s", jsonKind(v))
			return v
		}
		nv := reflect.New(t)
		if err := nv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			e.add(path, "%s", cleanLeafErr(err))
		}
		return text
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		b, _ := json.Marshal(v)
		nv := reflect.New(t)
		if err := nv.Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
			e.add(path, "%s", cleanLeafErr(err))
		}
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			e.add(path, "expected a mapping, got %s", jsonKind(v))
			return v
		}
		sf := fieldsOf(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fi, ok := sf.byName[k]
			if !ok {
				msg := fmt.Sprintf("unknown field %q", k)
				if s := Suggest(k, sf.names); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				if len(sf.names) <= 24 {
					msg += " (allowed: " + strings.Join(sf.names, ", ") + ")"
				}
				e.add(join(path, k), "%s", msg)
				continue
			}
			m[k] = checkShape(m[k], fi.typ, join(path, k), e, depth+1)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			e.add(path, "expected a mapping, got %s", jsonKind(v))
			return v
		}
		if t.Key().Kind() != reflect.String {
			return v
		}
		for k, x := range m {
			m[k] = checkShape(x, t.Elem(), join(path, k), e, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				e.add(path, "expected a base64 string, got %s", jsonKind(v))
			}
			return v
		}
		l, ok := v.([]any)
		if !ok {
			e.add(path, "expected a list, got %s", jsonKind(v))
			return v
		}
		for i, x := range l {
			l[i] = checkShape(x, t.Elem(), idx(path, i), e, depth+1)
		}
	case reflect.String:
		switch x := v.(type) {
		case string:
		case json.Number:
			return x.String()
		case bool:
			return strconv.FormatBool(x)
		default:
			e.add(path, "expected a string, got %s", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			e.add(path, "expected true or false, got %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			e.add(path, "expected an integer, got %s", jsonKind(v))
			return v
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			e.add(path, "expected an integer that fits in %d bits, got %s", t.Bits(), n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			e.add(path, "expected a non-negative integer, got %s", jsonKind(v))
			return v
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			e.add(path, "expected a non-negative integer that fits in %d bits, got %s", t.Bits(), n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			e.add(path, "expected a number, got %s", jsonKind(v))
			return v
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			e.add(path, "expected a number, got %s", n)
		}
	case reflect.Interface:
	}
	return v
}

var unknownFormRE = regexp.MustCompile(`unknown form "([^"]*)"`)

// DistForms are the distribution forms of harness/behavior (for typo
// suggestions).
var DistForms = []string{"fixed", "uniform", "normal", "lognormal", "exponential", "never"}

func cleanLeafErr(err error) string {
	var ue *json.UnmarshalTypeError
	if errors.As(err, &ue) {
		return fmt.Sprintf("expected %s, got a JSON %s", ue.Type, ue.Value)
	}
	msg := err.Error()
	if m := unknownFormRE.FindStringSubmatch(msg); m != nil {
		if s := Suggest(m[1], DistForms); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	return msg
}

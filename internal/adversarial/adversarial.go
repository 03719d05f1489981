// Package adversarial generates the inputs an adversarial user feeds
// sidebench (issue 15): scenario files and histories built to exhaust
// memory through what the code does with them, not through their size.
// The corpus test runs validate, run, check and explain on each under an
// address-space limit; hack/adversarial writes them to a directory for
// measuring by hand.
package adversarial

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxFile is the size every generated file stays under (the acceptance
// criterion: no input under 100 MB may exhaust memory).
const MaxFile = 100_000_000

// History is a generated history file.
type History struct {
	Name string
	// Pod is a pod the file holds, for explain.
	Pod string
	// Size is the approximate size; Write produces it.
	Write func(w io.Writer) error
}

const meta = `{"t":0,"k":"run.meta","meta":{"scenario":"adv","seed":1,"trial":0,"policy":"kep753","backend":"sim","version":"v"}}` + "\n"

// Histories returns the adversarial histories. scale (0 < scale <= 1)
// shrinks them for quick runs; 1 is issue 15's sizes (capped under
// MaxFile).
func Histories(scale float64) []History {
	n := func(x int) int { return max(int(float64(x)*scale), 1) }
	return []History{
		{Name: "cluster-faults", Pod: "default/p0", Write: func(w io.Writer) error {
			// 20k live pods, then 200k cluster-wide faults (no pod, no
			// node): copied into every live pod, this needed over 10 GB.
			return lines(w, meta, func(emit func(string, ...any)) {
				for i := range n(20000) {
					emit(`{"t":1,"k":"pod.scheduled","pod":"default/p%d","node":"n%d"}`, i, i%100)
				}
				for i := range n(200000) {
					emit(`{"t":%d,"k":"fault.begin","fault":"apiserver-outage","fid":%d}`, 2+i, i+1)
				}
			})
		}},
		{Name: "node-flaps", Pod: "default/p0", Write: func(w io.Writer) error {
			// 1000 pods on one node, then 100k kubelet restarts there.
			return lines(w, meta, func(emit func(string, ...any)) {
				for i := range n(1000) {
					emit(`{"t":1,"k":"pod.scheduled","pod":"default/p%d","node":"n"}`, i)
				}
				for i := range n(100000) {
					emit(`{"t":%d,"k":"kubelet.down","node":"n"}`, 2+2*i)
					emit(`{"t":%d,"k":"kubelet.up","node":"n"}`, 3+2*i)
				}
			})
		}},
		{Name: "pods-never-removed", Pod: "default/p0", Write: func(w io.Writer) error {
			// Pods that are never removed stay buffered to the end of the
			// run (2M of them, 125 MB, needed 9.3 GB).
			return lines(w, meta, func(emit func(string, ...any)) {
				for i := range n(1300000) {
					emit(`{"t":%d,"k":"pod.scheduled","pod":"default/p%d","node":"n%d"}`, i, i, i%1000)
				}
			})
		}},
		{Name: "long-line", Write: func(w io.Writer) error {
			// One line of 95 MB without a newline (1.5 GB ran out of memory).
			if _, err := io.WriteString(w, meta+`{"t":1,"k":"fault.not-applied","msg":"`); err != nil {
				return err
			}
			return repeat(w, 'x', n(95_000_000))
		}},
		{Name: "zeros", Write: func(w io.Writer) error { return repeat(w, 0, n(95_000_000)) }},
		{Name: "many-policies", Pod: "default/p0", Write: func(w io.Writer) error {
			// A run per line, each a new scenario × policy: one report each.
			return lines(w, "", func(emit func(string, ...any)) {
				for i := range n(400000) {
					emit(`{"t":0,"k":"run.meta","meta":{"scenario":"s%d","seed":1,"trial":0,"policy":"kep753","backend":"sim","version":"v"}}`, i)
					emit(`{"t":0,"k":"pod.scheduled","pod":"default/p0","node":"n"}`)
				}
			})
		}},
	}
}

// lines writes head, then the lines emit produces, buffered.
func lines(w io.Writer, head string, gen func(emit func(string, ...any))) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(head)
	gen(func(format string, args ...any) {
		fmt.Fprintf(bw, format, args...)
		bw.WriteByte('\n')
	})
	return bw.Flush()
}

func repeat(w io.Writer, b byte, n int) error {
	chunk := bytes.Repeat([]byte{b}, 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Scenario is a generated scenario file.
type Scenario struct {
	Name string
	Data []byte
}

// Scenarios returns the adversarial scenarios that are not fixtures of
// harness/scenario (those are read from testdata by the corpus test).
// scale shrinks the one whose cost is its number of entries.
func Scenarios(scale float64) []Scenario {
	var out []Scenario
	// Deep nesting with long keys: the old position index cost depth² ×
	// key length (3.4 MB: 1.7 GB).
	key := strings.Repeat("k", 200)
	var b strings.Builder
	for d := 0; b.Len() < 3400000; d++ {
		b.WriteString(strings.Repeat(" ", d) + key + ":\n")
	}
	out = append(out, Scenario{"deep-nesting", []byte(b.String())})
	// Deep flow nesting, within the size limit.
	out = append(out, Scenario{"deep-flow", []byte("apiVersion: sidebench.dev/v1alpha1\nkind: Scenario\nmetadata: " + strings.Repeat("[", 1<<20) + "\n")})
	// Many workloads and faults: 4 MB of small entries (validation was
	// quadratic in them).
	size := int(float64(4<<20) * scale)
	var m strings.Builder
	m.WriteString("apiVersion: sidebench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: many}\ncluster: {nodes: 2}\nworkloads:\n")
	for i := 0; m.Len() < size*3/4; i++ {
		fmt.Fprintf(&m, "- name: w%d\n  count: 1\n  template: {spec: {containers: [{name: app, image: a}]}}\n  behaviors: {default: {}}\n", i)
	}
	m.WriteString("faults:\n")
	for i := 0; m.Len() < size-200; i++ {
		fmt.Fprintf(&m, "- {name: f%d, type: oom-kill, schedule: {at: 1s}}\n", i)
	}
	out = append(out, Scenario{"many-entries", []byte(m.String())})
	// A "billion laughs" alias bomb.
	out = append(out, Scenario{"alias-bomb", []byte(`apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata:
  name: bomb
  labels:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`)})
	return out
}

// WriteAll writes every history and scenario into dir and returns their
// paths by name.
func WriteAll(dir string, scale float64) (map[string]string, error) {
	paths := map[string]string{}
	for _, h := range Histories(scale) {
		p := filepath.Join(dir, h.Name+".jsonl")
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		err = h.Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		paths[h.Name] = p
	}
	for _, s := range Scenarios(scale) {
		p := filepath.Join(dir, s.Name+".yaml")
		if err := os.WriteFile(p, s.Data, 0o644); err != nil {
			return nil, err
		}
		paths[s.Name] = p
	}
	return paths, nil
}

package check

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// Data-driven histories in the style of etcd-io/raft's testdata: each
// testdata/scripts/*.txt is one pod history written as commands, then a
// line "----", then the expected findings (all checkers). Run with
// -update to rewrite the expectations.
//
//	pod web-0 Always 30 init:setup sidecar:proxy+startup main:app
//	at 0 created
//	at 20 done setup          # composite: req, running, exited 0
//	at 100 startup-up proxy   # req, running, startup success, started, ready
//	at 300 up app             # req, running, started, ready
//	at 5000 stop proxy 30 PodDeleted
//	----
//	INV-T3 violation ...
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "scripts", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			script, want, _ := bytes.Cut(data, []byte("----\n"))
			h, meta, err := parseScript(string(script))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var got bytes.Buffer
			fs := checkAllExcerpts(t, meta, h.events())
			for i := range fs {
				writeFinding(&got, &fs[i], false)
			}
			if len(fs) == 0 {
				got.WriteString("no findings\n")
			}
			if *update {
				os.WriteFile(file, append(append(script, "----\n"...), got.Bytes()...), 0o644)
				return
			}
			if !bytes.Equal(bytes.TrimSpace(got.Bytes()), bytes.TrimSpace(want)) {
				t.Fatalf("%s: findings differ (-update rewrites)\n--- got:\n%s\n--- want:\n%s", file, got.String(), want)
			}
		})
	}
}

func checkAllExcerpts(t *testing.T, meta *history.Meta, ev []history.Event) []Finding {
	record(meta, ev)
	p, err := BuildPod(meta, ev[0].Pod, ev)
	if err != nil {
		t.Fatal(err)
	}
	var out []Finding
	for _, ch := range registry {
		for _, h := range ch.Check(p, nil) {
			f := p.classify(ch, &h)
			p.excerpt(&f, h.A, h.B)
			out = append(out, f)
		}
	}
	return out
}

func parseScript(s string) (*hb, *history.Meta, error) {
	var h *hb
	meta := &history.Meta{Policy: "kep753", ToleranceNanos: 1e6}
	sc := bufio.NewScanner(strings.NewReader(s))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			switch f[0] {
			case "policy":
				meta.Policy = f[1]
			case "pod":
				grace, _ := strconv.ParseInt(f[3], 10, 64)
				h = newPod(f[1], specOf(f[2], grace, f[4:]...))
			case "at":
				ms, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return err
				}
				return step(h.at(ms), f[2], f[3:])
			default:
				return fmt.Errorf("unknown command %q", f[0])
			}
			return nil
		}()
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", line, err)
		}
	}
	return h, meta, nil
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// step applies one verb with its arguments at the builder's current time.
func step(h *hb, verb string, a []string) error {
	node := map[string]history.Kind{"kubelet-down": history.KubeletDown, "kubelet-up": history.KubeletUp,
		"runtime-down": history.RuntimeDown, "runtime-up": history.RuntimeUp, "node-down": history.NodeDown, "node-up": history.NodeUp}
	switch verb {
	case "created":
		h.created()
	case "scheduled":
		h.scheduled()
	case "sandbox":
		h.sandbox()
	case "sandbox-lost":
		h.sandboxLost()
	case "req":
		h.req(a[0])
	case "running":
		h.running(a[0])
	case "poststart":
		h.postStart(a[0])
	case "started":
		h.started(a[0], a[1] == "true")
	case "ready":
		h.ready(a[0], a[1] == "true")
	case "exited":
		h.exited(a[0], int32(num(a[1])))
	case "prestop":
		h.prestop(a[0], a[1])
	case "prestop-end":
		h.prestopEnd(a[0])
	case "stop":
		h.stop(a[0], num(a[1]), a[2])
	case "killed":
		h.killed(a[0])
	case "backoff":
		h.backoff(a[0], num(a[1]))
	case "probe":
		h.probe(a[0], a[1], a[2])
	case "image":
		h.image(a[0])
	case "terminating":
		h.terminating(a[0], num(a[1]))
	case "deleted":
		h.deleted(num(a[0]))
	case "phase":
		h.phase(a[0])
	case "cond":
		h.cond(a[0], a[1] == "true")
	case "removed":
		h.removed()
	case "fault-begin", "fault-effect", "fault-end":
		k := map[string]history.Kind{"fault-begin": history.FaultBegin, "fault-effect": history.FaultEffect, "fault-end": history.FaultEnd}[verb]
		h.fault(k, a[0], uint32(num(a[1])))
	case "up":
		h.up(a[0])
	case "startup-up":
		h.startupUp(a[0])
	case "done":
		h.done(a[0])
	case "stop-exit":
		h.stopExit(a[0], num(a[1]), a[2])
	default:
		k, ok := node[verb]
		if !ok {
			return fmt.Errorf("unknown verb %q", verb)
		}
		h.nodeEv(k)
	}
	return nil
}

package scenario

import (
	"runtime"
	"strings"
	"testing"
)

func TestIndexYAML(t *testing.T) {
	src := `# comment
apiVersion: v1
metadata:
  name: x
  labels: {a: b}
workloads:
- name: web
  template:
    spec:
      initContainers:
      - name: proxy
        restartPolicy: Always
      - name: init
      containers:
        - name: app
          command: |
            echo hi
            name: not-a-key
          image: busybox
  count: 3
- name: job
faults:
  - type: oom-kill
    target: {container: app}
"quoted key": 1
`
	ix := indexYAML("f.yaml", []byte(src))
	want := map[string]int{
		"apiVersion": 2, "metadata.name": 4, "metadata.labels": 5, "metadata.labels.a": 5,
		"workloads[0]": 7, "workloads[0].name": 7, "workloads[0].template.spec.initContainers[1].name": 13,
		"workloads[0].template.spec.initContainers[0].restartPolicy": 12,
		"workloads[0].template.spec.containers[0].image":             19, "workloads[0].count": 20,
		"workloads[1].name": 21, "faults[0].type": 23, "faults[0].target.container": 24, "quoted key": 25,
	}
	for p, l := range want {
		got, _ := ix.lookup(p)
		if got.Line != l {
			t.Errorf("%s: line %d, want %d", p, got.Line, l)
		}
	}
	if _, full := ix.lookup("workloads[0].template.spec.containers[0].command.name"); full {
		t.Error("indexed a line inside a block scalar")
	}
}

// Label keys hold dots and slashes; a shorter sibling key must not hide
// the longer one.
func TestIndexYAMLDottedKeys(t *testing.T) {
	src := `metadata:
  labels:
    app: x
    app.kubernetes.io/name: web
    app.kubernetes.io/part-of: shop
`
	ix := indexYAML("f.yaml", []byte(src))
	for path, line := range map[string]int{
		"metadata.labels.app":                       3,
		"metadata.labels.app.kubernetes.io/name":    4,
		"metadata.labels.app.kubernetes.io/part-of": 5,
		"metadata.labels.missing":                   2, // closest ancestor
	} {
		if got, _ := ix.lookup(path); got.Line != line {
			t.Errorf("%s: line %d, want %d", path, got.Line, line)
		}
	}
}

// The index holds each key once, not its full path: its memory is linear
// in the file whatever the nesting (issue 15: a 3.4 MB file of nested
// 200-byte keys made the old index of full paths allocate over 1 GB).
func TestIndexYAMLLinearInDepth(t *testing.T) {
	key := strings.Repeat("k", 200)
	var b strings.Builder
	for d := 0; b.Len() < 3400000; d++ {
		b.WriteString(strings.Repeat(" ", d))
		b.WriteString(key)
		b.WriteString(":\n")
	}
	data := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := indexYAML("deep.yaml", data)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(8 * len(data)); alloc > limit {
		t.Errorf("indexing %d bytes allocated %d bytes, want at most %d (8x the file)", len(data), alloc, limit)
	}
	if got, full := ix.lookup(key + "." + key + "." + key); !full || got.Line != 3 {
		t.Errorf("lookup 3 levels deep: %+v %v", got, full)
	}
}

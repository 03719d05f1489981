package scenario

import "testing"

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
	if _, ok := ix.at["workloads[0].template.spec.containers[0].command.name"]; ok {
		t.Error("indexed a line inside a block scalar")
	}
}

package scenario

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// `sidebench init`: a scenario scaffolded around real manifests. A
// manifest says what runs (the pod template, pasted as is); a scenario adds
// what a manifest cannot say: how long each container takes to start,
// become ready and stop (behaviours), the faults, the policies to compare
// and the criteria. The scaffold fills the behaviours with sensible
// defaults and says, next to each, what to measure on a real cluster to
// replace it.

// workloadKinds maps the Kubernetes kinds init reads to the path of their
// pod template ("" for a Pod: its metadata and spec are the template).
var workloadKinds = map[string][]string{
	"Pod":                   nil,
	"PodTemplate":           {"template"},
	"Deployment":            {"spec", "template"},
	"StatefulSet":           {"spec", "template"},
	"DaemonSet":             {"spec", "template"},
	"ReplicaSet":            {"spec", "template"},
	"ReplicationController": {"spec", "template"},
	"Job":                   {"spec", "template"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template"},
}

// WorkloadKinds lists the kinds `sidebench init --from` reads.
func WorkloadKinds() []string {
	ks := make([]string, 0, len(workloadKinds))
	for k := range workloadKinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// ManifestKind is the kind of the first document of a multi-document
// file that init reads ("" if none, or if the file does not parse): a
// manifest of several documents gets the same hint as one of a single
// document, as README promises for a manifest given to run or validate,
// and init refuses to write its scenario over a manifest.
func ManifestKind(data []byte) string {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
		}
		if err := dec.Decode(&doc); err != nil {
			return ""
		}
		if _, ok := workloadKinds[doc.Kind]; ok {
			return doc.Kind
		}
	}
}

// manifestHint is the error for a Kubernetes manifest given where a
// scenario is expected ("" if obj does not look like one).
func manifestHint(obj map[string]any, file string) string {
	k, _ := obj["kind"].(string)
	if _, ok := workloadKinds[k]; !ok || k == Kind {
		return ""
	}
	name := "SCENARIO.yaml"
	if file != "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)) + "-scenario.yaml"
	}
	from := file
	if from == "" {
		from = "MANIFEST.yaml"
	}
	return fmt.Sprintf("this is a Kubernetes %s, not a sidebench scenario: wrap it with `sidebench init %s --from %s` (a scenario embeds the pod template and adds behaviours, faults, policies and criteria)", k, name, from)
}

// ScaffoldInput is what `sidebench init` scaffolds from.
type ScaffoldInput struct {
	// Name is the scenario's name (made a DNS label).
	Name string
	// Source names where Manifest came from (a file, "stdin"), for the
	// header comment.
	Source string
	// Manifest is one or more YAML documents (---); empty gives a
	// skeleton with an example pod.
	Manifest []byte
}

// manifestDoc is one workload found in the manifests.
type manifestDoc struct {
	kind, name string
	replicas   int
	template   *yaml3.Node // the PodTemplateSpec: metadata (labels only) and spec
	spec       corev1.PodTemplateSpec
}

// Scaffold returns a scenario file (YAML with comments) around the
// workloads of in.Manifest: one scenario workload per Pod, Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job or CronJob, its pod template
// pasted as is (labels kept, other metadata and status dropped). Other
// documents (Services, ConfigMaps...) are skipped and listed in the
// header. The result validates (LoadBytes) when the templates do.
func Scaffold(in ScaffoldInput) ([]byte, error) {
	name := toDNSLabel(in.Name)
	var docs []manifestDoc
	var skipped []string
	if len(bytes.TrimSpace(in.Manifest)) == 0 {
		d, err := parseTemplate("Pod", "app", []byte(examplePod))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	} else {
		dec := yaml3.NewDecoder(bytes.NewReader(in.Manifest))
		for i := 0; ; i++ {
			var n yaml3.Node
			if err := dec.Decode(&n); err != nil {
				if err.Error() == "EOF" {
					break
				}
				return nil, fmt.Errorf("%s: document %d: %v", in.Source, i+1, err)
			}
			found, skip, err := workloadsOf(&n)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %v", in.Source, i+1, err)
			}
			docs = append(docs, found...)
			skipped = append(skipped, skip...)
		}
		if len(docs) == 0 {
			what := "nothing"
			if len(skipped) > 0 {
				what = strings.Join(skipped, ", ")
			}
			return nil, fmt.Errorf("%s: no workload to scaffold from (found %s); init reads %s", in.Source, what, strings.Join(WorkloadKinds(), ", "))
		}
	}
	return renderScaffold(name, in.Source, docs, skipped)
}

// workloadsOf returns the workloads of one YAML document (a List holds
// several).
func workloadsOf(doc *yaml3.Node) (found []manifestDoc, skipped []string, err error) {
	n := doc
	if n.Kind == yaml3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml3.MappingNode {
		return nil, nil, nil // an empty document
	}
	kind := scalar(get(n, "kind"))
	name := scalar(get(get(n, "metadata"), "name"))
	if kind == "List" || strings.HasSuffix(kind, "List") {
		items := get(n, "items")
		if items == nil {
			return nil, nil, nil
		}
		for _, it := range items.Content {
			f, s, err := workloadsOf(it)
			if err != nil {
				return nil, nil, err
			}
			found, skipped = append(found, f...), append(skipped, s...)
		}
		return found, skipped, nil
	}
	path, ok := workloadKinds[kind]
	if !ok {
		if kind == "" {
			kind = "a document without kind"
		}
		return nil, []string{strings.TrimSpace(kind + " " + name)}, nil
	}
	tmpl := n
	for _, k := range path {
		if tmpl = get(tmpl, k); tmpl == nil {
			return nil, nil, fmt.Errorf("%s %s has no %s", kind, name, strings.Join(path, "."))
		}
	}
	// A clean template: labels (fault targets select on them) and the
	// spec, in the manifest's order.
	clean := &yaml3.Node{Kind: yaml3.MappingNode}
	if labels := get(get(tmpl, "metadata"), "labels"); labels != nil {
		md := &yaml3.Node{Kind: yaml3.MappingNode}
		md.Content = append(md.Content, key("labels"), labels)
		clean.Content = append(clean.Content, key("metadata"), md)
	}
	spec := get(tmpl, "spec")
	if spec == nil {
		return nil, nil, fmt.Errorf("%s %s has no pod spec", kind, name)
	}
	spec = without(spec, "nodeName", "ephemeralContainers")
	clean.Content = append(clean.Content, key("spec"), spec)
	var buf bytes.Buffer
	enc := yaml3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(clean); err != nil {
		return nil, nil, err
	}
	d, err := parseTemplate(kind, name, buf.Bytes())
	if err != nil {
		return nil, nil, err
	}
	d.template = clean
	if kind == "Pod" {
		// A pod of a Deployment is named reviews-v1-5b86f8d5c6-x7k2p: its
		// app label names the workload better.
		labels := get(get(tmpl, "metadata"), "labels")
		for _, l := range []string{"app.kubernetes.io/name", "app"} {
			if v := scalar(get(labels, l)); v != "" {
				d.name = v
				break
			}
		}
	}
	d.replicas = intValue(scalar(get(get(n, "spec"), "replicas")))
	if kind == "Job" {
		d.replicas = intValue(scalar(get(get(n, "spec"), "completions")))
	}
	return []manifestDoc{d}, nil, nil
}

func parseTemplate(kind, name string, data []byte) (manifestDoc, error) {
	d := manifestDoc{kind: kind, name: name}
	if err := yaml.Unmarshal(data, &d.spec); err != nil {
		return d, fmt.Errorf("%s %s: pod template: %v", kind, name, err)
	}
	if len(d.spec.Spec.Containers) == 0 {
		return d, fmt.Errorf("%s %s: the pod template has no containers", kind, name)
	}
	if d.template == nil {
		var n yaml3.Node
		if err := yaml3.Unmarshal(data, &n); err != nil {
			return d, err
		}
		d.template = n.Content[0]
	}
	return d, nil
}

func get(n *yaml3.Node, k string) *yaml3.Node {
	if n == nil || n.Kind != yaml3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return nil
}

func without(n *yaml3.Node, keys ...string) *yaml3.Node {
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !slices.Contains(keys, n.Content[i].Value) {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}

func key(s string) *yaml3.Node { return &yaml3.Node{Kind: yaml3.ScalarNode, Value: s} }

func scalar(n *yaml3.Node) string {
	if n == nil || n.Kind != yaml3.ScalarNode {
		return ""
	}
	return n.Value
}

func intValue(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// toDNSLabel makes s a DNS label (a scenario or workload name).
func toDNSLabel(s string) string {
	s = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
	s = strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if s == "" {
		s = "scenario"
	}
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

// role is how a container of the template runs.
type role int

const (
	roleInit role = iota
	roleSidecar
	roleMain
)

// knownImage is what the scaffold knows about a common sidecar image: a
// starting point for its behaviour and what to measure.
type knownImage struct {
	match        string
	what         string
	startupAfter string
	termHandling string
	measure      string
}

var knownImages = []knownImage{
	{"proxyv2", "the Istio proxy (envoy + pilot-agent)", "lognormal(median=1500ms, p99=8s)", "lognormal(median=1s, p99=5s)",
		"time from the container's start to /healthz/ready on :15021 (istio-proxy logs \"Envoy proxy is ready\"); termination: terminationDrainDuration"},
	{"envoy", "an Envoy proxy", "lognormal(median=800ms, p99=4s)", "lognormal(median=1s, p99=5s)",
		"time from the container's start to its first successful readiness/startup check (admin /ready); termination: the drain time"},
	{"linkerd", "the Linkerd proxy", "lognormal(median=500ms, p99=3s)", "lognormal(median=500ms, p99=3s)",
		"time to linkerd-proxy's /ready on :4191"},
	{"fluent-bit", "the Fluent Bit log shipper", "lognormal(median=300ms, p99=2s)", "lognormal(median=2s, p99=10s)",
		"time to the HTTP server's /api/v1/health; termination: Grace (flush) seconds of its [SERVICE] section"},
	{"fluentd", "the Fluentd log shipper", "lognormal(median=2s, p99=10s)", "lognormal(median=3s, p99=15s)",
		"time to its monitor agent answering; termination: the buffer flush"},
	{"vector", "the Vector log shipper", "lognormal(median=300ms, p99=2s)", "lognormal(median=1s, p99=8s)",
		"time to /health on its API; termination: the sinks' flush"},
	{"otel", "an OpenTelemetry collector", "lognormal(median=500ms, p99=3s)", "lognormal(median=1s, p99=5s)",
		"time to the health_check extension answering on :13133"},
	{"cloud-sql-proxy", "the Cloud SQL Auth Proxy", "lognormal(median=700ms, p99=4s)", "lognormal(median=500ms, p99=30s)",
		"time to /startup on its --http-port (with --health-check); termination: --max-sigterm-delay"},
	{"vault", "the Vault agent", "lognormal(median=1s, p99=5s)", "lognormal(median=200ms, p99=1s)",
		"time until the agent has rendered its templates"},
}

func knownFor(image string) *knownImage {
	for i := range knownImages {
		if strings.Contains(image, knownImages[i].match) {
			return &knownImages[i]
		}
	}
	return nil
}

const examplePod = `metadata:
  labels:
    app: app
spec:
  terminationGracePeriodSeconds: 30
  initContainers:
  - name: proxy
    image: envoyproxy/envoy:v1.31
    restartPolicy: Always
    startupProbe:
      httpGet: {path: /ready, port: 9901}
      periodSeconds: 1
      failureThreshold: 30
  containers:
  - name: app
    image: registry.example/app:1
    readinessProbe:
      httpGet: {path: /healthz, port: 8080}
`

// renderScaffold writes the scenario file.
func renderScaffold(name, source string, docs []manifestDoc, skipped []string) ([]byte, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	var kinds []string
	sidecars := 0
	for _, d := range docs {
		kinds = append(kinds, strings.TrimSpace(d.kind+" "+d.name))
		for _, c := range d.spec.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars++
			}
		}
	}
	if source == "" {
		p("# %s: scaffolded by `sidebench init` (an example pod: replace the template with yours,\n# or run `sidebench init FILE --from MANIFEST`).\n", name)
	} else {
		p("# %s: scaffolded by `sidebench init` from %s (%s).\n", name, source, strings.Join(kinds, ", "))
	}
	if len(skipped) > 0 {
		p("# Skipped (not workloads): %s.\n", strings.Join(skipped, ", "))
	}
	p(`#
# The pod templates are pasted from the manifest as they are. What a
# manifest cannot say is how long each container takes to start, pass its
# probes and stop: the behaviours below are defaults, each with what to
# measure on a real cluster to replace it (kubectl get events, the
# containers' logs and status timestamps). Then:
#
#   sidebench validate FILE      # strict checks, file:line:col errors
#   sidebench run FILE           # result table; report.html in the run directory
#
# Reference: docs/scenarios.md (every field), docs/behavior.md, docs/faults.md.
apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata:
  name: %s
  description: %s with %d native sidecar(s), under kubelet crashes; kep753 against no sidecar support.
seed: 1
policies:
- kep753      # native sidecars as Kubernetes ships them (KEP-753, GA in 1.33): judged by the criteria
- none        # no sidecar support: the baseline that shows what the ordering guarantees buy
trials: 3     # trials per policy; more trials, tighter bounds (--trials overrides)
backend:
  horizon: 10m
cluster:
  nodes: 3
  podsPerNode: 30
  shutdownGracePeriod: 30s               # the kubelet's graceful node shutdown settings,
  shutdownGracePeriodCriticalPods: 10s   #   used by node-shutdown faults
workloads:
`, name, strings.Join(kinds, ", "), sidecars)
	used := map[string]bool{}
	for _, d := range docs {
		wname := toDNSLabel(d.name)
		if wname == "scenario" || d.name == "" {
			wname = "app"
		}
		for base, i := wname, 2; used[wname]; i++ {
			wname = fmt.Sprintf("%s-%d", base, i)
		}
		used[wname] = true
		if err := renderWorkload(&b, wname, d); err != nil {
			return nil, err
		}
	}
	p(`faults:
# A kubelet crash every 30 s on one node: the fault every sidecar
# guarantee must survive (INV-F1, F2, F6). Other faults, see docs/faults.md:
# - {type: runtime-restart, schedule: {type: every, at: 15s, interval: 45s}, downtime: 3s}
# - {type: oom-kill, schedule: {type: poisson, at: 10s, rate: 0.05}, target: {role: sidecar}}
# - {type: node-shutdown, schedule: {type: once, at: 40s}}
- name: kubelet-crashes
  type: kubelet-crash
  schedule: {type: every, at: 10s, interval: 30s}
  downtime: 5s
criteria:
  maxViolations: 0          # HARD ordering guarantees broken with no fault to excuse them
  # podStartupP99: 30s      # the SIG Scalability SLI: set it to your SLO
  # graduation: beta        # judge a graduation stage too (alpha | beta | ga)
`)
	return []byte(b.String()), nil
}

func renderWorkload(b *strings.Builder, wname string, d manifestDoc) error {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	spec := &d.spec.Spec
	job := spec.RestartPolicy == corev1.RestartPolicyNever || spec.RestartPolicy == corev1.RestartPolicyOnFailure
	count := d.replicas
	if count <= 0 || count > 200 {
		count = 20
	}
	p("- name: %s\n", wname)
	p("  count: %d                 # pods created per trial (from %s)\n", count, map[bool]string{true: "the manifest", false: "a default"}[d.replicas > 0 && d.replicas <= 200])
	p("  arrival: {type: poisson, rate: 2}   # pods per second\n")
	if job {
		p(`  completion:
    # Job-style (restartPolicy %s): the main containers exit 0 after this.
    # Measure: the Job's pods' run time (status.startTime → completionTime).
    runTime: lognormal(median=10s, p99=60s)
`, spec.RestartPolicy)
	} else {
		p("  lifetime: uniform(min=20s, max=60s)   # creation → deletion: pods are deleted to check termination ordering too\n")
	}
	var buf bytes.Buffer
	enc := yaml3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d.template); err != nil {
		return err
	}
	p("  template:                 # pasted from %s %s\n", d.kind, d.name)
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		p("    %s\n", line)
	}
	p(`  behaviors:
    default:
      # Measure: CRI StartContainer → process running, image pull excluded
      # (kubectl get events: Created → Started, or the first log line).
      startLatency: lognormal(median=300ms, p99=2s)
      # Measure: SIGTERM → exit (the container's shutdown logs); "never"
      # models a process that ignores SIGTERM and is SIGKILLed at the grace.
      termHandling: lognormal(median=300ms, p99=3s)
`)
	for _, c := range spec.InitContainers {
		r := roleInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			r = roleSidecar
		}
		renderBehavior(b, c, r)
	}
	for _, c := range spec.Containers {
		renderBehavior(b, c, roleMain)
	}
	return nil
}

func renderBehavior(b *strings.Builder, c corev1.Container, r role) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var lines []string
	add := func(comment, field, value string) {
		for _, l := range strings.Split(comment, "\n") {
			lines = append(lines, "      # "+l)
		}
		lines = append(lines, fmt.Sprintf("      %s: %s", field, value))
	}
	k := knownFor(c.Image)
	switch r {
	case roleInit:
		add("a regular init container: runs to completion before the next one.\nMeasure: its run time (Started → Completed in its status).", "runTime", "lognormal(median=1s, p99=5s)")
	case roleSidecar:
		what := "a native sidecar"
		if k != nil {
			what = k.what + ", a native sidecar"
		}
		if c.StartupProbe != nil {
			v, m := "lognormal(median=1s, p99=5s)", "time from the container's start to its startup probe passing"
			if k != nil {
				v, m = k.startupAfter, k.measure
			}
			add(fmt.Sprintf("%s: the next container waits for its startup probe.\nMeasure: %s.", what, m), "startupAfter", v)
		} else {
			add(what+" without a startup probe: the next container starts as soon as it runs.\nAdd a startupProbe to the template if the app needs it ready first.", "startLatency", "lognormal(median=300ms, p99=2s)")
		}
		if k != nil {
			add("Measure: SIGTERM → exit (it drains or flushes before exiting).", "termHandling", k.termHandling)
		}
	case roleMain:
		if c.ReadinessProbe == nil && c.Lifecycle == nil {
			return // the default fits
		}
	}
	if c.ReadinessProbe != nil {
		add("Measure: Started → Ready (the readiness probe's first success).", "readyAfter", "lognormal(median=500ms, p99=3s)")
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		add("Measure: how long the postStart hook runs (the next container waits for it).", "postStart", "200ms")
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		add("Measure: how long the preStop hook runs (it counts against the grace period).", "preStop", "1s")
	}
	if len(lines) == 0 {
		return
	}
	p("    %s:\n%s\n", c.Name, strings.Join(lines, "\n"))
}

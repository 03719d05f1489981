// Package local is sidebench's local backend: scenario trials run on real
// kubelets (harness/localcluster) against sidebench's CRI server
// (harness/cri), on a real etcd + kube-apiserver on loopback.
//
// A trial creates the scenario's pods through the apiserver (spec.nodeName
// round-robin over the kubelets), watches them with a client-go informer,
// and writes one history: the pod-level events it observes (pod.created,
// pod.scheduled, pod.phase, pod.condition, container.started/ready,
// pod.deleted, pod.removed), stamped on receipt with the harness clock,
// merged with the CRI servers' events and the faults it injects.
package local

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/backend/drive"
	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
	trialplan "github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Label keys the backend sets on every pod.
const (
	LabelTrial    = "sidebench.dev/trial"
	LabelWorkload = "sidebench.dev/workload"
)

// DefaultTolerance is the timing tolerance written into run.meta: events
// are stamped on receipt (watch latency, status-update batching), so the
// checker allows this much slack.
const DefaultTolerance = 500 * time.Millisecond

// Options configure New.
type Options struct {
	// Nodes is the number of kubelets (default 3).
	Nodes int
	// Version of Kubernetes (default localcluster.DefaultVersion).
	Version string
	// CacheDir of the binaries (default localcluster.DefaultCacheDir).
	CacheDir string
	// Log receives progress lines (default discarded).
	Log io.Writer
	// Horizon caps a trial's duration on this backend (default: the
	// scenario's horizon, at most 10m).
	Horizon time.Duration
	// KeepOnExit: the cluster's processes survive this process.
	KeepOnExit bool
	// KubeletVerbosity is the kubelet's --v (default 2).
	KubeletVerbosity int
	// FeatureGates is passed as --feature-gates to kube-apiserver and the
	// kubelets (see FeatureGates).
	FeatureGates string
	// ReapOrphans tears down the clusters that killed runs left behind
	// (localcluster.ReapOrphans) before starting this one: the CLI sets
	// it; tests that SIGKILL an owner on purpose and inspect what it left
	// must not have another package's cluster remove it under them.
	ReapOrphans bool
	// OnUp is called once the cluster is up (for a state pointer file).
	OnUp func(c *localcluster.Cluster)
	// Clock drives pod arrivals, lifetimes and fault firings (default:
	// the real clock; tests use a fake one).
	Clock clock.Clock
}

// Backend runs trials on one local cluster, one trial at a time.
type Backend struct {
	opts Options
	cl   *localcluster.Cluster
	cs   kubernetes.Interface
	sw   *switchSink
	run  sync.Mutex // one trial at a time
	node []*nodeState
	seq  int
	clk  clock.Clock
	// shutdownErr: why graceful node shutdown could not be enabled.
	shutdownErr error
}

type nodeState struct {
	mu          sync.Mutex
	kubeletDown bool
	runtimeDown bool
	// shutdown is the node-shutdown fault in progress (faults.go).
	shutdown *faults.Spec
}

// New builds (or reuses) the binaries and brings a cluster up.
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Version == "" {
		o.Version = localcluster.DefaultVersion
	}
	if o.CacheDir == "" {
		o.CacheDir = localcluster.DefaultCacheDir(o.Version)
	}
	b := &Backend{opts: o, clk: o.Clock, sw: &switchSink{}}
	bins, err := localcluster.Build(ctx, o.Version, o.CacheDir, o.Log)
	if err != nil {
		return nil, err
	}
	cl, err := localcluster.Up(ctx, localcluster.Config{
		Nodes: o.Nodes, Version: o.Version, CacheDir: o.CacheDir, Binaries: &bins,
		Sink: b.sw, KeepOnExit: o.KeepOnExit, KubeletVerbosity: o.KubeletVerbosity,
		FeatureGates: o.FeatureGates,
	})
	if err != nil {
		return nil, err
	}
	b.cl = cl
	if o.OnUp != nil {
		o.OnUp(cl)
	}
	cs, err := cl.Client()
	if err != nil {
		cl.Down()
		return nil, err
	}
	b.cs = cs
	for range cl.Nodes {
		b.node = append(b.node, &nodeState{})
	}
	return b, nil
}

// Cluster returns the running cluster.
func (b *Backend) Cluster() *localcluster.Cluster { return b.cl }

// Close takes the cluster down. Idempotent.
func (b *Backend) Close() error {
	if b.cl == nil {
		return nil
	}
	return b.cl.Down()
}

// Supports reports whether the real kubelet implements a policy: the final
// KEP-753 design, alone or with the Kubernetes gates ContainerRestartRules
// and RestartAllContainersOnContainerExits (beta, on by default in
// v1.37.2; FeatureGates names them explicitly), and the workaround
// policies (their pods have no native sidecar; the CRI server executes
// their wiring). The 2019 proposal, none,
// SidecarsRestartableDuringPodTermination (not in Kubernetes) and the bug
// replicas are the reference implementation's only.
func Supports(policy string) bool {
	g, err := api.ParseGates(policy)
	if err != nil {
		return false
	}
	if g.RestartAllContainersOnContainerExits && !g.ContainerRestartRules {
		return false // the apiserver drops the rules without ContainerRestartRules
	}
	return g.Policy == api.PolicyKEP753 && g.Bug == api.BugNone && !g.SidecarsRestartableDuringPodTermination
}

// FeatureGates returns the --feature-gates value for kube-apiserver and
// the kubelets that runs every given policy ("" when none needs a gate).
// Only gates are turned on; a policy without them runs on the same
// cluster because its pods use no restart rules.
func FeatureGates(policies ...string) string {
	var rules, all bool
	for _, p := range policies {
		g, err := api.ParseGates(p)
		if err != nil || !Supports(p) {
			continue
		}
		rules = rules || g.ContainerRestartRules
		all = all || g.RestartAllContainersOnContainerExits
	}
	var out []string
	if rules {
		out = append(out, "ContainerRestartRules=true")
	}
	if all {
		out = append(out, "RestartAllContainersOnContainerExits=true")
	}
	return strings.Join(out, ",")
}

// Stats is what a trial reports beyond its history.
type Stats struct {
	Partial          bool
	Pods             int
	FaultsApplied    int
	FaultsNotApplied int
	Elapsed          time.Duration
}

type sinkFunc func(e *history.Event) error

func (f sinkFunc) Write(e *history.Event) error { return f(e) }

// switchSink forwards the CRI servers' events to the current trial.
type switchSink struct {
	mu   sync.Mutex
	next history.Sink
}

func (s *switchSink) set(n history.Sink) {
	s.mu.Lock()
	s.next = n
	s.mu.Unlock()
}

// WriteSandbox forwards an event with its sandbox's UID and labels to the
// current trial when it takes them (trial.onSandboxEvent).
func (s *switchSink) WriteSandbox(e *history.Event, uid string, labels map[string]string) error {
	s.mu.Lock()
	n := s.next
	s.mu.Unlock()
	if ss, ok := n.(cri.SandboxSink); ok {
		return ss.WriteSandbox(e, uid, labels)
	}
	if n == nil {
		return nil
	}
	return n.Write(e)
}

func (s *switchSink) Write(e *history.Event) error {
	s.mu.Lock()
	n := s.next
	s.mu.Unlock()
	if n == nil {
		return nil
	}
	return n.Write(e)
}

// trialSink is the trial's one history: a mutex serialises the writers
// (watcher, CRI servers, pod drivers, faults); T never goes backwards;
// events of pods the trial does not know, or of pods after their
// pod.removed, are dropped (the kubelet garbage-collects records of a
// deleted pod later; the contract makes pod.removed a pod's last event).
type trialSink struct {
	mu      sync.Mutex
	next    history.Sink
	last    int64
	known   map[string]bool
	removed map[string]bool
	closed  bool
	err     error
	dropped int
	// after sees each event written (set once, before the trial's pods
	// exist; called with the sink's lock held: it must not block).
	after func(e *history.Event)
}

func (s *trialSink) setAfter(f func(e *history.Event)) {
	s.mu.Lock()
	s.after = f
	s.mu.Unlock()
}

func (s *trialSink) register(pod string) {
	s.mu.Lock()
	s.known[pod] = true
	s.mu.Unlock()
}

func (s *trialSink) Write(e *history.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return nil
	}
	if e.Pod != "" && !e.Kind.IsFault() {
		if !s.known[e.Pod] || s.removed[e.Pod] {
			s.dropped++
			return nil
		}
		if e.Kind == history.PodRemoved {
			s.removed[e.Pod] = true
		}
	}
	if e.T < s.last {
		e.T = s.last
	}
	s.last = e.T
	if err := s.next.Write(e); err != nil {
		s.err = err
	}
	if s.after != nil {
		s.after(e)
	}
	return nil
}

func now() int64 { return time.Now().UnixNano() }

// workload is one compiled workload of the trial.
type workload struct {
	w      *trialplan.Workload
	idx    int // in the plan
	ns     string
	spec   api.PodSpec
	hspec  *history.PodSpec
	world  faults.Workload
	ann    map[string]string
	job    bool
	tmpl   corev1.PodSpec // rewritten probes and hooks
	labels map[string]string
}

// podState is what the watcher last saw of one pod.
type podState struct {
	name    string // namespace/name
	wl      *workload
	node    string
	created bool
	phase   corev1.PodPhase
	conds   map[corev1.PodConditionType]bool
	started map[string]bool
	ready   map[string]bool
	// gates of the running attempt still to pass before the kubelet
	// considers it started: its postStart hook, its startup probe.
	hookDone, probeOK map[string]bool
	deleting          bool
	delGrace          int64
	removed           bool
	// CRI-side view: mains running, whole-pod kill seen in this sandbox.
	running     map[string]bool
	attempt     map[string]uint32
	terminating bool
	// resetPending: AllContainersRestarting=True was written from the CRI
	// wire (a RestartAllContainers rule matched an exit) and the API has
	// not published True yet; a False observed meanwhile is stale.
	resetPending bool
	// phaseReason is the reason of a terminal phase (OutOfcpu: the
	// kubelet's admission rejected the pod).
	phaseReason string
	// resize: the kubelet's resize conditions last published; resizes:
	// the resize faults waiting for what the kubelet makes of them.
	resize   map[corev1.PodConditionType]resizeCond
	resizes  []*resizeWait
	done     chan struct{} // closed at pod.removed
	terminal chan struct{} // closed at a terminal phase
	termOnce sync.Once
}

type trial struct {
	b      *Backend
	p      *trialplan.Plan
	sink   *trialSink
	start  time.Time
	wls    []*workload
	id     string
	mu     sync.Mutex
	pods   map[string]*podState
	order  []*podState
	flog   drive.FaultLog
	stats  Stats
	podsWG sync.WaitGroup
	faulWG sync.WaitGroup
	// uids are the pod UIDs the apiserver gave this trial's pods, by
	// name; otherTrial counts CRI events of other trials' pods dropped.
	uids       map[string]string
	otherTrial int
	// resources are the resources of containers resized in place, by
	// "pod/container"; trig fires the on-container faults.
	resources map[string]api.Resources
	resizing  map[string]bool // "pod/container" whose resize the kubelet has not acted on
	trig      *drive.Triggers
}

func (tr *trial) emit(e history.Event) {
	if e.T == 0 {
		e.T = now()
	}
	tr.sink.Write(&e)
}

// RunTrial runs one trial and writes its history to sink (run.meta first,
// run.end last).
func (b *Backend) RunTrial(ctx context.Context, p *trialplan.Plan, sink history.Sink) (Stats, error) {
	b.run.Lock()
	defer b.run.Unlock()
	if !Supports(p.Policy) {
		return Stats{}, fmt.Errorf("local backend: policy %q is not what a real kubelet implements (only kep753)", p.Policy)
	}
	b.prepareNodeShutdown(ctx, p)
	b.seq++
	tr := &trial{b: b, p: p, id: fmt.Sprintf("t%d-%d", b.seq, p.Number), pods: map[string]*podState{}, uids: map[string]string{},
		resources: map[string]api.Resources{}, resizing: map[string]bool{}, trig: drive.NewTriggers(p),
		sink: &trialSink{next: sink, known: map[string]bool{}, removed: map[string]bool{}}}
	tr.flog.Emit = tr.emit
	if err := tr.compile(); err != nil {
		return Stats{}, err
	}
	for _, w := range tr.wls {
		if w.ns != "default" {
			if err := ensureNamespace(ctx, b.cs, w.ns); err != nil {
				return Stats{}, err
			}
		}
	}
	// Informer on the trial's pods, synced before the first pod exists.
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	synced, err := tr.watch(wctx)
	if err != nil {
		return Stats{}, err
	}
	select {
	case <-synced:
	case <-ctx.Done():
		return Stats{Partial: true}, ctx.Err()
	}

	tr.start = time.Now()
	b.sw.set(criSink{tr})
	defer b.sw.set(nil)
	tr.emit(history.Event{T: tr.start.UnixNano(), Kind: history.RunMeta, Meta: &history.Meta{
		Scenario: p.Scenario, ScenarioHash: p.ScenarioHash, Seed: p.Seed, Trial: p.Number,
		Policy: p.Policy, Backend: "local", Version: localcluster.DefaultVersion,
		StartUnixNano: tr.start.UnixNano(), ToleranceNanos: int64(DefaultTolerance),
		Extra: map[string]string{"nodes": strconv.Itoa(len(b.cl.Nodes)), "kubelet": b.opts.Version, "runtime": "sidebench-cri " + cri.Version},
	}})

	horizon := p.Horizon
	if b.opts.Horizon > 0 && b.opts.Horizon < horizon {
		horizon = b.opts.Horizon
	}
	if horizon > 10*time.Minute && b.opts.Horizon == 0 {
		horizon = 10 * time.Minute
	}
	tctx, cancel := context.WithDeadline(ctx, tr.start.Add(horizon))
	defer cancel()

	fctx, stopFaults := context.WithCancel(tctx)
	if tr.trig.Any() {
		// On-container faults fire from what the trial records.
		tr.sink.setAfter(func(e *history.Event) {
			if e.Container != "" && !e.Kind.IsFault() {
				go tr.trigger(fctx, *e)
			}
		})
	}
	tr.watchKubelets(wctx)
	tr.arrive(tctx)
	tr.scheduleFaults(fctx)

	// Wait for every pod to be created and removed, or the horizon.
	allDone := make(chan struct{})
	go func() {
		tr.podsWG.Wait()
		close(allDone)
	}()
	select {
	case <-allDone:
	case <-tctx.Done():
	}
	stopFaults()
	tr.faulWG.Wait()
	tr.stats.FaultsApplied, tr.stats.FaultsNotApplied = tr.flog.Counts()
	msg := "complete"
	if ctx.Err() != nil {
		msg = "partial"
		tr.stats.Partial = true
	}
	tr.emit(history.Event{Kind: history.RunEnd, Msg: msg})
	tr.sink.mu.Lock()
	tr.sink.closed = true
	serr := tr.sink.err
	tr.sink.mu.Unlock()
	b.sw.set(nil)
	// Clean up what is left (horizon reached or interrupted): nothing of
	// this trial may survive into the next one (pod names repeat).
	tr.cleanup()
	tr.stats.Elapsed = time.Since(tr.start)
	return tr.stats, serr
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return localcluster.EnsureServiceAccount(ctx, cs, ns)
}

// compile converts the scenario's workloads: history spec, fault world,
// behaviour annotations and the pod spec with probes and hooks rewritten
// to the CRI server's exec commands.
func (tr *trial) compile() error {
	for i := range tr.p.Workloads {
		w := &tr.p.Workloads[i]
		cw := &workload{w: w, idx: i, ns: w.Namespace, spec: w.Spec, hspec: w.History,
			world: faults.WorldOf(w.Name, w.Labels, &w.Spec), ann: map[string]string{},
			job: w.Job, labels: map[string]string{}}
		for k, v := range w.Labels {
			cw.labels[k] = v
		}
		cw.labels[LabelTrial] = tr.id
		cw.labels[LabelWorkload] = w.Name
		for k, v := range w.Template.Annotations {
			cw.ann[k] = v
		}
		for _, b := range w.Behaviors {
			k, v, err := cri.BehaviorAnnotation(b.Container, b.Behavior)
			if err != nil {
				return err
			}
			cw.ann[k] = v
			if !b.Wiring.IsZero() {
				// A workaround's wrapper, hooks and quit signal, and the
				// user sidecars' container.serving: the CRI server
				// executes them (docs/workarounds.md).
				k, v, err := cri.WiringAnnotation(b.Container, b.Wiring)
				if err != nil {
					return err
				}
				cw.ann[k] = v
			}
		}
		cw.ann[cri.AnnotationSeed] = strconv.FormatUint(tr.p.Seed, 10)
		cw.tmpl = *RewriteSpec(&w.Template.Spec)
		tr.wls = append(tr.wls, cw)
	}
	return nil
}

// RewriteSpec returns a copy of ps fit for the local cluster: no service
// account token, no service links, every probe and hook an exec of the
// CRI server's commands (timings kept), so that they follow the behaviour.
func RewriteSpec(ps *corev1.PodSpec) *corev1.PodSpec {
	out := ps.DeepCopy()
	f := false
	out.AutomountServiceAccountToken = &f
	out.EnableServiceLinks = &f
	fix := func(c *corev1.Container) {
		probe := func(p *corev1.Probe, kind string) {
			if p == nil {
				return
			}
			p.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cri.ProbeCommand(kind)}}
		}
		probe(c.StartupProbe, cri.ProbeStartup)
		probe(c.ReadinessProbe, cri.ProbeReadiness)
		probe(c.LivenessProbe, cri.ProbeLiveness)
		if l := c.Lifecycle; l != nil {
			if l.PostStart != nil {
				l.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cri.HookCommand(cri.HookPostStart)}}
			}
			if l.PreStop != nil {
				l.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cri.HookCommand(cri.HookPreStop)}}
			}
		}
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	for i := range out.InitContainers {
		fix(&out.InitContainers[i])
	}
	for i := range out.Containers {
		fix(&out.Containers[i])
	}
	return out
}

// arrive starts one driver goroutine per pod: create at its arrival time,
// delete after its lifetime (Job-style pods also once terminal), then
// wait for its removal.
func (tr *trial) arrive(ctx context.Context) {
	nodes := len(tr.b.cl.Nodes)
	for k, a := range tr.p.AllArrivals() {
		full := a.Pod
		_, name := history.SplitPodName(full)
		ps := &podState{name: full, wl: tr.wls[a.Workload], conds: map[corev1.PodConditionType]bool{},
			started: map[string]bool{}, ready: map[string]bool{}, running: map[string]bool{}, attempt: map[string]uint32{}, done: make(chan struct{}), terminal: make(chan struct{}),
			hookDone: map[string]bool{}, probeOK: map[string]bool{}}
		tr.mu.Lock()
		tr.pods[full] = ps
		tr.order = append(tr.order, ps)
		tr.mu.Unlock()
		node := tr.b.cl.Nodes[k%nodes].Name
		tr.podsWG.Add(1)
		go func() {
			defer tr.podsWG.Done()
			tr.drive(ctx, ps, name, node, a.At)
		}()
	}
}

func (tr *trial) drive(ctx context.Context, ps *podState, name, node string, at time.Duration) {
	if !drive.SleepUntil(ctx, tr.b.clock(), tr.start.Add(at)) {
		tr.markDone(ps)
		return
	}
	w := ps.wl
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: w.labels, Annotations: w.ann},
		Spec:       *w.tmpl.DeepCopy(),
	}
	pod.Spec.NodeName = node
	tr.sink.register(ps.name)
	// Bound at creation: pod.created and pod.scheduled precede anything the
	// kubelet can do with the pod.
	t := now()
	tr.mu.Lock()
	ps.created, ps.node = true, node
	tr.mu.Unlock()
	tr.emit(history.Event{T: t, Kind: history.PodCreated, Pod: ps.name, Spec: w.hspec})
	tr.emit(history.Event{T: t, Kind: history.PodScheduled, Pod: ps.name, Node: node})
	tr.mu.Lock()
	tr.stats.Pods++
	tr.mu.Unlock()
	created, err := tr.b.cs.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		tr.emit(history.Event{Kind: history.PodRemoved, Pod: ps.name, Msg: "create failed: " + err.Error()})
		tr.markDone(ps)
		return
	}
	tr.mu.Lock()
	tr.uids[ps.name] = string(created.UID)
	tr.mu.Unlock()
	drive.AwaitEnd(ctx, tr.b.clock(), tr.p, w.idx, ps.name, ps.terminal, ps.done)
	if ctx.Err() == nil {
		tr.delete(ctx, ps, drive.DeleteGrace(w.w))
	}
	select {
	case <-ps.done:
	case <-ctx.Done():
	}
}

func (tr *trial) markDone(ps *podState) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !ps.removed {
		ps.removed = true
		close(ps.done)
	}
}

// delete deletes a pod with grace (nil: the pod's own), writing pod.deleted
// first.
func (tr *trial) delete(ctx context.Context, ps *podState, grace *int64) {
	tr.mu.Lock()
	if ps.deleting || ps.removed {
		tr.mu.Unlock()
		return
	}
	g := ps.wl.spec.TerminationGracePeriod
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	ps.deleting, ps.delGrace = true, int64(g)
	tr.mu.Unlock()
	tr.emit(history.Event{Kind: history.PodDeleted, Pod: ps.name, Grace: int64(g)})
	ns, name := history.SplitPodName(ps.name)
	err := tr.b.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(tr.b.opts.Log, "local: delete %s: %v\n", ps.name, err)
	}
}

// AllContainersRestarting is published by the kubelet when
// RestartAllContainersOnContainerExits is on: true from the moment a
// RestartAllContainers rule matched until every container was removed
// (the reset), which the checker reads as the start of a new
// initialization in the same sandbox (INV-RA*).
var watchedConds = []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.AllContainersRestarting}

// observe turns one informer notification into history events (diffs
// against what was last seen).
func (tr *trial) observe(pod *corev1.Pod, deleted bool) {
	t := now()
	full := pod.Namespace + "/" + pod.Name
	tr.mu.Lock()
	ps := tr.pods[full]
	if ps == nil || !ps.created || ps.removed {
		tr.mu.Unlock()
		return
	}
	var evs []history.Event
	ev := func(e history.Event) {
		e.T = t
		e.Pod = full
		if e.Node == "" && e.Kind != history.PodDeleted && e.Kind != history.PodRemoved {
			e.Node = ps.node
		}
		evs = append(evs, e)
	}
	if ps.node == "" && pod.Spec.NodeName != "" {
		ps.node = pod.Spec.NodeName
		ev(history.Event{Kind: history.PodScheduled, Node: ps.node})
	}
	// Container flags first (a container turning ready precedes the
	// condition it causes).
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	stale := staleSnapshot(ps, statuses)
	if stale {
		// The status describes an attempt as running that the CRI wire
		// has already seen exit: the kubelet computed it before, and its
		// status manager published it late (seconds, with the CPU
		// saturated: issue 21's density runs). Its flags, conditions and
		// phase are the past: not written; the kubelet's next status
		// supersedes it. Deletion and removal (metadata) still count.
		statuses = nil
		pod = pod.DeepCopy()
		pod.Status = corev1.PodStatus{}
	}
	for _, cs := range statuses {
		// Started comes from the CRI wire (onCRI), the kubelet's own view,
		// unless the kubelet publishes Started for the running attempt
		// without the runtime having seen a reason (no startup probe
		// success): that is the kubelet's claim, recorded when observed.
		if cs.Started != nil && *cs.Started && !ps.started[cs.Name] && ps.running[cs.Name] && uint32(cs.RestartCount) == ps.attempt[cs.Name] {
			ps.started[cs.Name] = true
			ev(history.Event{Kind: history.ContainerStarted, Container: cs.Name, Attempt: uint32(cs.RestartCount), Value: true, Msg: "published without a startup probe success"})
		}
		if cs.Ready != ps.ready[cs.Name] {
			ps.ready[cs.Name] = cs.Ready
			ev(history.Event{Kind: history.ContainerReady, Container: cs.Name, Attempt: uint32(cs.RestartCount), Value: cs.Ready})
		}
	}
	for _, ct := range watchedConds {
		for _, c := range pod.Status.Conditions {
			if c.Type != ct {
				continue
			}
			// Conditions start false (as on sim): only changes are
			// written. Under load the first status reaches the apiserver
			// seconds late; writing its stale Initialized=False then
			// would read as a flap after the mains started.
			v := c.Status == corev1.ConditionTrue
			if ct == corev1.AllContainersRestarting && ps.resetPending {
				if !v {
					continue // published before the kubelet saw the exit
				}
				ps.resetPending = false
			}
			if old := ps.conds[ct]; old != v {
				ps.conds[ct] = v
				ev(history.Event{Kind: history.PodCondition, Cond: string(ct), Value: v})
			}
		}
	}
	if !stale {
		for _, e := range observeResizeConds(ps, pod.Status.Conditions) {
			ev(e)
		}
	}
	// A first Pending that arrives after a container already ran (per the
	// CRI) is a stale status from before: not written.
	stalePending := pod.Status.Phase == corev1.PodPending && ps.phase == "" && len(ps.attempt) > 0
	if stalePending {
		ps.phase = corev1.PodPending
	}
	if pod.Status.Phase != "" && pod.Status.Phase != ps.phase {
		ps.phase = pod.Status.Phase
		e := history.Event{Kind: history.PodPhase, Phase: string(ps.phase)}
		if ps.phase == corev1.PodSucceeded || ps.phase == corev1.PodFailed {
			e.Reason = pod.Status.Reason
			ps.phaseReason = pod.Status.Reason
			ps.termOnce.Do(func() { close(ps.terminal) })
		}
		ev(e)
	}
	if pod.DeletionTimestamp != nil && !ps.deleting {
		ps.deleting = true
		var g int64
		if pod.DeletionGracePeriodSeconds != nil {
			g = *pod.DeletionGracePeriodSeconds * int64(time.Second)
		}
		ps.delGrace = g
		ev(history.Event{Kind: history.PodDeleted, Grace: g})
	}
	if deleted {
		ps.removed = true
		ev(history.Event{Kind: history.PodRemoved})
	}
	tr.mu.Unlock()
	for i := range evs {
		tr.sink.Write(&evs[i])
	}
	if deleted {
		close(ps.done)
	}
}

// staleSnapshot reports whether a published status shows a container
// attempt running that the CRI wire has already seen exit, or an attempt
// older than the last one the wire saw start. The CRI server writes a
// container's start before it answers the kubelet, so anything the
// kubelet publishes as running was seen running on the wire first.
func staleSnapshot(ps *podState, statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running == nil {
			continue
		}
		a, seen := ps.attempt[cs.Name]
		if !seen {
			continue
		}
		if r := uint32(cs.RestartCount); r < a || (r == a && !ps.running[cs.Name]) {
			return true
		}
	}
	return false
}

// criSink is the CRI servers' way into a trial: events that carry their
// sandbox go through the trial's attribution (onSandboxEvent).
type criSink struct{ tr *trial }

func (s criSink) Write(e *history.Event) error { return s.tr.onCRI(e) }
func (s criSink) WriteSandbox(e *history.Event, uid string, labels map[string]string) error {
	return s.tr.onSandboxEvent(e, uid, labels)
}

// onSandboxEvent attributes a CRI event to the trial by its sandbox, not
// by the pod name alone: pod names repeat across trials (default/web-0),
// and the previous trial's pod may still be being killed when this one
// starts, so its events would land in this history (issue 16 A9: six
// spurious INV-P3 in one run). A sandbox labelled with another trial's
// LabelTrial is dropped; so is one whose pod UID differs from the UID the
// apiserver gave this trial's pod of that name, once known.
func (tr *trial) onSandboxEvent(e *history.Event, uid string, labels map[string]string) error {
	if id, ok := labels[LabelTrial]; ok && id != tr.id {
		tr.dropOther()
		return nil
	}
	if uid != "" && e.Pod != "" {
		tr.mu.Lock()
		want := tr.uids[e.Pod]
		tr.mu.Unlock()
		if want != "" && want != uid {
			tr.dropOther()
			return nil
		}
	}
	return tr.onCRI(e)
}

// dropOther counts an event of another trial's pod.
func (tr *trial) dropOther() {
	tr.mu.Lock()
	tr.otherTrial++
	tr.mu.Unlock()
}

// onCRI receives the CRI servers' events (with the server's lock held).
// It writes them, then the Started flag the kubelet derives from them:
// the kubelet marks a container Started when its startup probe succeeds
// (or, without a startup probe, when it runs), and acts on it at once
// (starting the next init container); the published
// containerStatuses[].started reaches a watcher only after the status
// manager's update and the watch, tens of milliseconds later, so ordering
// checks against it would see the kubelet start the next container
// "before" the previous one was Started. Started is false again when the
// attempt exits.
//
// It also infers pod.terminating, the start of a whole-pod kill, which the
// kubelet does not publish: the first preStop or stop request of a sandbox
// once the pod is being deleted (reason PodDeleted, the deletion grace) or,
// for a Job-style pod, once no main container runs (PodCompleted, the
// pod's grace). Ordered (v) is true for pods with sidecars: the real
// kubelet (>= 1.29) terminates them in reverse order.
func (tr *trial) onCRI(e *history.Event) error {
	if e.Pod == "" || e.Container == "" {
		if e.Kind == history.SandboxCreated && e.Pod != "" {
			tr.mu.Lock()
			if ps := tr.pods[e.Pod]; ps != nil {
				ps.terminating = false
			}
			tr.mu.Unlock()
		}
		return tr.sink.Write(e)
	}
	tr.mu.Lock()
	ps := tr.pods[e.Pod]
	if ps == nil || ps.removed {
		tr.mu.Unlock()
		return tr.sink.Write(e)
	}
	// A stop request during a RestartAllContainers reset (condition True,
	// pod not being deleted) is the reset's kill: the CRI does not say why
	// a container is stopped, the reset is the only reason left (the
	// reference writes the same reason, api.KillRestartAll).
	if e.Kind == history.ContainerStopRequested && e.Reason == "" && ps.conds[corev1.AllContainersRestarting] && !ps.deleting {
		c := *e
		c.Reason = "RestartAllContainers"
		e = &c
	}
	// Likewise a stop of a container whose in-place resize is pending,
	// outside a deletion, is the kubelet's restart for its resizePolicy
	// (computePodResizeAction; the reference writes ResizeRestart).
	key := e.Pod + "/" + e.Container
	if e.Kind == history.ContainerStopRequested && e.Reason == "" && tr.resizing[key] && !ps.deleting {
		c := *e
		c.Reason = "ResizeRestart"
		e = &c
	}
	if e.Kind == history.ContainerRunning || e.Kind == history.ContainerResized || e.Kind == history.ContainerExited {
		delete(tr.resizing, key)
	}
	onResizeCRI(ps, e)
	var term *history.Event
	if (e.Kind == history.ContainerPreStopBegin || e.Kind == history.ContainerStopRequested) && !ps.terminating {
		// Completion needs every main to have run (an attempt seen
		// running) and none to run now: a SIGTERM during initialization (a
		// sidecar's startup probe, an image change) is that container's
		// own kill, not the Job's end.
		anyMain, allRan := false, true
		for i := range ps.wl.spec.Main {
			name := ps.wl.spec.Main[i].Name
			_, seen := ps.attempt[name]
			anyMain = anyMain || ps.running[name]
			allRan = allRan && seen
		}
		ordered := ps.wl.spec.HasSidecars()
		switch {
		case ps.deleting:
			term = &history.Event{T: e.T, Kind: history.PodTerminating, Pod: e.Pod, Node: e.Node, Reason: "PodDeleted", Grace: ps.delGrace, Value: ordered}
		default:
			// The node's graceful shutdown kills its pods (faults.go).
			term = tr.shutdownKill(ps, e, ordered)
			if term == nil && ps.wl.job && !anyMain && allRan {
				term = &history.Event{T: e.T, Kind: history.PodTerminating, Pod: e.Pod, Node: e.Node, Reason: "PodCompleted", Grace: int64(ps.wl.spec.TerminationGracePeriod), Value: ordered}
			}
		}
		if term != nil {
			ps.terminating = true
		}
	}
	switch e.Kind {
	case history.ContainerRunning:
		ps.running[e.Container] = true
		ps.attempt[e.Container] = e.Attempt
	case history.ContainerExited:
		ps.running[e.Container] = false
	}
	reset := tr.resetStart(ps, e)
	tr.mu.Unlock()
	if term != nil {
		tr.sink.Write(term)
	}
	if err := tr.sink.Write(e); err != nil {
		return err
	}
	if reset != nil {
		tr.sink.Write(reset)
	}
	var v, set bool
	tr.mu.Lock()
	hasStartup, hasHook := false, false
	for j := 0; j < ps.wl.spec.Len(); j++ {
		if c := ps.wl.spec.At(j); c.Name == e.Container {
			hasStartup, hasHook = c.StartupProbe != nil, c.PostStart
		}
	}
	// Started once the attempt runs, its postStart returned (the kubelet
	// starts the next container only then) and its startup probe passed.
	if ps.hookDone == nil {
		ps.hookDone, ps.probeOK = map[string]bool{}, map[string]bool{}
	}
	switch {
	case e.Kind == history.ContainerRunning:
		ps.hookDone[e.Container], ps.probeOK[e.Container] = !hasHook, !hasStartup
	case e.Kind == history.ContainerPostStartDone && e.Value:
		ps.hookDone[e.Container] = true
	case e.Kind == history.ProbeResult && e.Probe == "startup" && e.Result == "success":
		ps.probeOK[e.Container] = true
	}
	switch {
	case (e.Kind == history.ContainerRunning || e.Kind == history.ContainerPostStartDone || e.Kind == history.ProbeResult) &&
		ps.running[e.Container] && ps.hookDone[e.Container] && ps.probeOK[e.Container]:
		v, set = true, !ps.started[e.Container]
	case e.Kind == history.ContainerExited:
		v, set = false, ps.started[e.Container]
	}
	if set {
		ps.started[e.Container] = v
	}
	tr.mu.Unlock()
	if set {
		tr.sink.Write(&history.Event{T: e.T, Kind: history.ContainerStarted, Pod: e.Pod, Node: e.Node, Container: e.Container, Attempt: e.Attempt, Value: v})
	}
	return nil
}

// resetStart returns pod.condition AllContainersRestarting=True when e is
// the exit of a container whose first matching restart rule is
// RestartAllContainers (gate on, pod not being deleted), or nil. The
// kubelet computes the condition in the sync that sees the exit and starts
// the reset (stops and RemoveContainer-s) in that same sync; the published
// condition reaches the watch tens of milliseconds after the first
// removals, and the checker reads the True event as the start of the new
// initialization (INV-RA*), so it is taken from the CRI wire, as Started
// is. The API's own True is then not written again. Called with tr.mu held.
func (tr *trial) resetStart(ps *podState, e *history.Event) *history.Event {
	if e.Kind != history.ContainerExited || !tr.p.Gates.RestartAllContainersOnContainerExits || ps.deleting || ps.conds[corev1.AllContainersRestarting] {
		return nil
	}
	spec := &ps.wl.spec
	for j := 0; j < spec.Len(); j++ {
		c := spec.At(j)
		if c.Name != e.Container {
			continue
		}
		if r := c.MatchRule(e.Code); r != nil && r.Action == api.RuleRestartAllContainers {
			ps.conds[corev1.AllContainersRestarting] = true
			ps.resetPending = true
			return &history.Event{T: e.T, Kind: history.PodCondition, Pod: e.Pod, Node: e.Node, Cond: string(corev1.AllContainersRestarting), Value: true,
				Msg: "from the CRI wire: exit " + strconv.Itoa(int(e.Code)) + " of " + e.Container + " matched a RestartAllContainers rule"}
		}
	}
	return nil
}

// cleanup force-deletes whatever is left of the trial's pods and waits
// until the apiserver has none (bounded).
func (tr *trial) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: LabelTrial + "=" + tr.id}
	nss := map[string]bool{}
	for _, w := range tr.wls {
		nss[w.ns] = true
	}
	zero := int64(0)
	for ns := range nss {
		_ = tr.b.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
	}
	for ctx.Err() == nil {
		left := 0
		for ns := range nss {
			l, err := tr.b.cs.CoreV1().Pods(ns).List(ctx, sel)
			if err == nil {
				left += len(l.Items)
			}
		}
		if left == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The API objects are gone, but a kubelet may still be killing what
	// ran (a Job a workaround kept running to the horizon): wait until
	// no CRI server runs anything of the trial's pods, so that their
	// teardown does not land in the next trial's pods of the same names.
	tr.mu.Lock()
	mine := make(map[string]bool, len(tr.pods))
	for name := range tr.pods {
		mine[name] = true
	}
	tr.mu.Unlock()
	match := func(pod string) bool { return mine[pod] }
	for ctx.Err() == nil {
		live := 0
		for _, n := range tr.b.cl.Nodes {
			if n.Runtime != nil {
				live += n.Runtime.Live(match)
			}
		}
		if live == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// watch lists and then watches the trial's pods until ctx ends (see
// drive.WatchPods); synced is closed once the initial list is handled.
func (tr *trial) watch(ctx context.Context) (<-chan struct{}, error) {
	return drive.WatchPods(ctx, tr.b.cs.CoreV1().Pods(metav1.NamespaceAll), LabelTrial+"="+tr.id, tr.observe)
}

// clock is the backend's clock (real unless Options.Clock set one).
func (b *Backend) clock() clock.Clock {
	if b.clk == nil {
		return clock.RealClock{}
	}
	return b.clk
}

// tmplImage is the image of container i (spec order) of the workload's
// pod template.
func (w *workload) tmplImage(i int) string {
	if i < len(w.tmpl.InitContainers) {
		return w.tmpl.InitContainers[i].Image
	}
	return w.tmpl.Containers[i-len(w.tmpl.InitContainers)].Image
}

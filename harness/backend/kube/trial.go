package kube

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidebench/sidebench/harness/agentlog"
	"github.com/sidebench/sidebench/harness/backend/drive"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	trialplan "github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Supports reports whether the backend runs a policy: a real cluster runs
// what its kubelets implement, the final KEP-753 design. Policies naming
// Kubernetes gates are refused: the backend cannot turn them on, nor see
// whether the cluster has them. Workaround policies are refused too:
// sidebench-agent does not execute their wiring (a wrapper's wait, a quit
// signal, hooks that poll; docs/workarounds.md).
func Supports(policy string) bool {
	g, err := api.ParseGates(policy)
	return err == nil && g.Policy == api.PolicyKEP753 && g.Bug == api.BugNone && !g.SidecarsRestartableDuringPodTermination &&
		!g.ContainerRestartRules && !g.RestartAllContainersOnContainerExits && !g.IsWorkaround()
}

// Stats is what a trial reports beyond its history.
type Stats struct {
	Partial          bool
	Pods             int
	FaultsApplied    int
	FaultsNotApplied int
	// LinesLost counts container attempts whose agent log never reached
	// the backend (no exec line collected).
	LinesLost int
	// StatusLagMax is the longest time between a pod condition's
	// lastTransitionTime and the watch receiving it; LateStatus counts the
	// changes that took over lateStatus (any over a second is placed at
	// its decision time, decidedAt).
	StatusLagMax time.Duration
	LateStatus   int
	Namespace    string
	Elapsed      time.Duration
}

func now() int64 { return time.Now().UnixNano() }

// workload is one compiled workload of the trial.
type workload struct {
	w      *trialplan.Workload
	idx    int    // in the plan
	keyNS  string // the scenario's namespace: history pod names and behaviour keys
	spec   api.PodSpec
	hspec  *history.PodSpec
	world  faults.Workload
	tmpl   *corev1.PodSpec
	labels map[string]string
	job    bool
}

// podState is what the backend knows of one pod while the trial runs.
type podState struct {
	name string // the pod's name (in the trial namespace)
	wl   *workload
	rec  podRecord
	uid  string

	created, deleting, removed bool
	phase                      corev1.PodPhase
	conds                      map[corev1.PodConditionType]bool
	ready                      map[string]bool
	exits                      map[string]bool   // container IDs whose exit is recorded
	streamed                   map[string]bool   // container IDs whose log is being read
	running                    []string          // containers running at the last update
	images                     map[string]string // container → image after image-change faults
	lineKeys                   map[agentlog.Key]bool

	streams  sync.WaitGroup
	done     chan struct{} // closed at pod.removed
	terminal chan struct{} // closed at a terminal phase
	termOnce sync.Once
}

type trial struct {
	b     *Backend
	p     *trialplan.Plan
	id    string
	ns    string
	start time.Time
	wls   []*workload
	nodes []string // node names at the start, sorted (fault targets)

	mu     sync.Mutex
	pods   map[string]*podState
	order  []*podState
	global []history.Event // faults and node events
	flog   drive.FaultLog
	stats  Stats
	// ctx of the trial's API calls (log streams, execs); cancelled last.
	ioCtx context.Context
	// closing: the trial is collecting its last streams; no new ones.
	closing bool

	podsWG, faultWG sync.WaitGroup
}

// RunTrial runs one trial and writes its history to sink (run.meta first,
// run.end last). The history is written when the trial ends, because the
// agent logs of a pod arrive after the watch's events and the history is
// ordered by time; an interrupted trial (ctx cancelled) still writes what
// was recorded, as partial, and deletes everything it created.
func (b *Backend) RunTrial(ctx context.Context, p *trialplan.Plan, sink history.Sink) (Stats, error) {
	b.run.Lock()
	defer b.run.Unlock()
	if !Supports(p.Policy) {
		return Stats{}, fmt.Errorf("kube backend: policy %q is not what a real kubelet implements (only kep753)", p.Policy)
	}
	b.seq++
	tr := &trial{b: b, p: p, id: fmt.Sprintf("%s-t%d", b.runID, b.seq), pods: map[string]*podState{}}
	tr.ns = "sb-" + tr.id
	tr.flog.Emit = tr.event
	tr.stats.Namespace = tr.ns
	if err := tr.compile(); err != nil {
		return Stats{}, err
	}
	nodes, err := b.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Stats{}, fmt.Errorf("kube backend: listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		tr.nodes = append(tr.nodes, n.Name)
	}
	sort.Strings(tr.nodes)

	// Everything from here on is deleted at the end, whatever happens.
	ioCtx, stopIO := context.WithCancel(context.Background())
	defer stopIO()
	tr.ioCtx = ioCtx
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if derr := b.deleteNamespace(cctx, tr.ns); derr != nil {
			fmt.Fprintf(b.opts.Log, "kube: cleanup of %s: %v\n", tr.ns, derr)
		}
	}()
	if err := b.createNamespace(ctx, tr.ns, tr.id); err != nil {
		return Stats{}, err
	}
	synced, err := drive.WatchPods(ioCtx, b.cs.CoreV1().Pods(tr.ns), LabelTrial+"="+tr.id, tr.observe)
	if err != nil {
		return Stats{}, err
	}
	select {
	case <-synced:
	case <-ctx.Done():
		return Stats{Partial: true}, ctx.Err()
	}

	tr.start = time.Now()
	horizon := p.Horizon
	if b.opts.Horizon > 0 && b.opts.Horizon < horizon {
		horizon = b.opts.Horizon
	}
	if horizon > 10*time.Minute && b.opts.Horizon == 0 {
		horizon = 10 * time.Minute
	}
	tctx, cancel := context.WithDeadline(ctx, tr.start.Add(horizon))
	defer cancel()
	tr.arrive(tctx)
	fctx, stopFaults := context.WithCancel(tctx)
	tr.scheduleFaults(fctx)

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
	tr.faultWG.Wait()
	tr.stats.FaultsApplied, tr.stats.FaultsNotApplied = tr.flog.Counts()
	partial := ctx.Err() != nil
	// Pods still there (horizon, interrupt): delete them gracefully so
	// that their termination is recorded too, bounded.
	tr.drain()
	tr.stats.Partial = partial
	tr.stats.Elapsed = time.Since(tr.start)
	return tr.stats, tr.write(sink, partial)
}

// compile converts the scenario's workloads.
func (tr *trial) compile() error {
	for i := range tr.p.Workloads {
		w := &tr.p.Workloads[i]
		bhs := map[string]behavior.Container{}
		for _, b := range w.Behaviors {
			bhs[b.Container] = b.Behavior
		}
		tmpl, err := agentPodSpec(PodTemplate{Spec: &w.Template.Spec, Behaviors: bhs, Seed: tr.p.Seed, KeyNamespace: w.Namespace, Image: tr.b.opts.Image})
		if err != nil {
			return fmt.Errorf("workloads[%d] %q: %w", i, w.Name, err)
		}
		cw := &workload{w: w, idx: i, keyNS: w.Namespace, spec: w.Spec, hspec: w.History,
			world: faults.WorldOf(w.Name, w.Labels, &w.Spec), tmpl: tmpl,
			job: w.Job, labels: map[string]string{}}
		for k, v := range w.Labels {
			cw.labels[k] = v
		}
		cw.labels[LabelRun] = tr.b.runID
		cw.labels[LabelTrial] = tr.id
		cw.labels[LabelWorkload] = w.Name
		tr.wls = append(tr.wls, cw)
	}
	return nil
}

// arrive starts one driver goroutine per pod.
func (tr *trial) arrive(ctx context.Context) {
	for _, a := range tr.p.AllArrivals() {
		w := tr.wls[a.Workload]
		_, name := history.SplitPodName(a.Pod)
		ps := &podState{name: name, wl: w, conds: map[corev1.PodConditionType]bool{}, ready: map[string]bool{},
			exits: map[string]bool{}, streamed: map[string]bool{}, lineKeys: map[agentlog.Key]bool{},
			done: make(chan struct{}), terminal: make(chan struct{})}
		ps.rec = podRecord{Name: a.Pod, Spec: &w.spec}
		tr.mu.Lock()
		tr.pods[name] = ps
		tr.order = append(tr.order, ps)
		tr.mu.Unlock()
		tr.podsWG.Add(1)
		go func() {
			defer tr.podsWG.Done()
			tr.drive(ctx, ps, a.At)
		}()
	}
}

// observed appends a watch-side event to the pod's record (tr.mu held).
func (ps *podState) observed(e history.Event) {
	e.Pod = ps.rec.Name
	if e.Node == "" && e.Kind != history.PodDeleted && e.Kind != history.PodRemoved {
		e.Node = ps.rec.Node
	}
	ps.rec.Observed = append(ps.rec.Observed, e)
}

func (tr *trial) drive(ctx context.Context, ps *podState, at time.Duration) {
	if !drive.SleepUntil(ctx, tr.b.clock(), tr.start.Add(at)) {
		tr.markDone(ps)
		return
	}
	w := ps.wl
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ps.name, Namespace: tr.ns, Labels: w.labels}, Spec: *w.tmpl.DeepCopy()}
	tr.mu.Lock()
	ps.created = true
	ps.observed(history.Event{T: now(), Kind: history.PodCreated, Spec: w.hspec})
	tr.stats.Pods++
	tr.mu.Unlock()
	if _, err := tr.b.cs.CoreV1().Pods(tr.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		tr.mu.Lock()
		ps.observed(history.Event{T: now(), Kind: history.PodRemoved, Msg: "create failed: " + err.Error()})
		tr.mu.Unlock()
		fmt.Fprintf(tr.b.opts.Log, "kube: create %s/%s: %v\n", tr.ns, ps.name, err)
		tr.markDone(ps)
		return
	}
	drive.AwaitEnd(ctx, tr.b.clock(), tr.p, w.idx, ps.rec.Name, ps.terminal, ps.done)
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

// delete snapshots the pod's shared log (everything so far, whichever
// container wrote it), then deletes the pod with grace (nil: its own),
// writing pod.deleted at the call: the kubelet acts on the deletion after
// the call, and the watch's receive time may come after its first SIGTERM.
func (tr *trial) delete(ctx context.Context, ps *podState, grace *int64) {
	tr.mu.Lock()
	if ps.deleting || ps.removed {
		tr.mu.Unlock()
		return
	}
	tr.mu.Unlock()
	tr.collectFile(ctx, ps)
	tr.mu.Lock()
	if ps.deleting || ps.removed {
		tr.mu.Unlock()
		return
	}
	g := ps.wl.spec.TerminationGracePeriod
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	ps.deleting = true
	ps.observed(history.Event{T: now(), Kind: history.PodDeleted, Grace: int64(g)})
	tr.mu.Unlock()
	err := tr.b.cs.CoreV1().Pods(tr.ns).Delete(ctx, ps.name, metav1.DeleteOptions{GracePeriodSeconds: grace})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(tr.b.opts.Log, "kube: delete %s/%s: %v\n", tr.ns, ps.name, err)
	}
}

// drain deletes the pods still there at the end of a trial (horizon or
// interrupt) and waits a bounded time for them and their log streams.
func (tr *trial) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr.mu.Lock()
	var left []*podState
	for _, ps := range tr.order {
		if ps.created && !ps.removed {
			left = append(left, ps)
		}
	}
	tr.mu.Unlock()
	var wg sync.WaitGroup
	for _, ps := range left {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.delete(ctx, ps, nil)
			select {
			case <-ps.done:
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
	// No new stream from here on: a WaitGroup must not grow while waited.
	tr.mu.Lock()
	tr.closing = true
	tr.mu.Unlock()
	for _, ps := range tr.order {
		waitTimeout(&ps.streams, 10*time.Second)
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	c := make(chan struct{})
	go func() {
		wg.Wait()
		close(c)
	}()
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

// watchedConds are the pod conditions written to the history.
var watchedConds = []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady}

// observe turns one watch notification into the pod's record: pod-level
// events, readiness flags, exits from the status, and log streams for
// container instances not seen before.
func (tr *trial) observe(pod *corev1.Pod, deleted bool) {
	t := now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ps := tr.pods[pod.Name]
	if ps == nil || !ps.created || ps.removed {
		return
	}
	if ps.uid == "" {
		ps.uid = string(pod.UID)
	}
	if ps.rec.Node == "" && pod.Spec.NodeName != "" {
		ps.rec.Node = pod.Spec.NodeName
		ps.observed(history.Event{T: t, Kind: history.PodScheduled, Node: ps.rec.Node})
	}
	// Condition changes first: their times also place the readiness
	// flags that flipped with them. Conditions start false (as on sim):
	// only changes are written.
	condT := map[corev1.PodConditionType]condChange{}
	for _, ct := range watchedConds {
		for _, c := range pod.Status.Conditions {
			if v := c.Status == corev1.ConditionTrue; c.Type == ct && ps.conds[ct] != v {
				at, lag := decidedAt(t, c.LastTransitionTime.UnixNano())
				condT[ct] = condChange{v: v, t: at}
				tr.statusLag(lag)
			}
		}
	}
	ps.running = ps.running[:0]
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for i := range statuses {
		cs := &statuses[i]
		attempt := uint32(cs.RestartCount)
		if cs.Ready != ps.ready[cs.Name] {
			ps.ready[cs.Name] = cs.Ready
			// A flag that flipped with ContainersReady in this update was
			// decided with it (the condition's own time, below).
			rt := t
			if ct, ok := condT[corev1.ContainersReady]; ok && ct.v == cs.Ready {
				rt = ct.t
			}
			ps.observed(history.Event{T: rt, Kind: history.ContainerReady, Container: cs.Name, Attempt: attempt, Value: cs.Ready})
		}
		if term := cs.LastTerminationState.Terminated; term != nil && term.ContainerID != "" && attempt > 0 {
			tr.exitSeen(ps, cs.Name, term, attempt-1, t)
			if !ps.streamed[term.ContainerID] {
				// An instance that came and went between two updates: its
				// stdout is the previous log; the shared file has it too.
				ps.streamed[term.ContainerID] = true
				tr.stream(ps, cs.Name, true, false)
				go tr.collectFile(tr.ioCtx, ps)
			}
		}
		switch {
		case cs.State.Running != nil && cs.ContainerID != "":
			ps.running = append(ps.running, cs.Name)
			if !ps.streamed[cs.ContainerID] {
				ps.streamed[cs.ContainerID] = true
				tr.stream(ps, cs.Name, false, true)
			}
		case cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
			tr.exitSeen(ps, cs.Name, cs.State.Terminated, attempt, t)
			if id := cs.State.Terminated.ContainerID; !ps.streamed[id] {
				ps.streamed[id] = true
				tr.stream(ps, cs.Name, false, false)
			}
		}
	}
	for _, ct := range watchedConds {
		if c, ok := condT[ct]; ok {
			ps.conds[ct] = c.v
			ps.observed(history.Event{T: c.t, Kind: history.PodCondition, Cond: string(ct), Value: c.v})
		}
	}
	if pod.Status.Phase != "" && pod.Status.Phase != ps.phase {
		ps.phase = pod.Status.Phase
		e := history.Event{T: t, Kind: history.PodPhase, Phase: string(ps.phase)}
		if ps.phase == corev1.PodSucceeded || ps.phase == corev1.PodFailed {
			e.Reason = pod.Status.Reason
			ps.termOnce.Do(func() { close(ps.terminal) })
		}
		ps.observed(e)
	}
	if pod.DeletionTimestamp != nil && !ps.deleting {
		// Deleted by someone else (an eviction, a user): the grace is the
		// API's.
		ps.deleting = true
		var g int64
		if pod.DeletionGracePeriodSeconds != nil {
			g = *pod.DeletionGracePeriodSeconds * int64(time.Second)
		}
		ps.observed(history.Event{T: t, Kind: history.PodDeleted, Grace: g})
	}
	if deleted {
		ps.removed = true
		ps.observed(history.Event{T: t, Kind: history.PodRemoved})
		close(ps.done)
	}
}

// condChange is a pod condition's new value and the time it is placed at.
type condChange struct {
	v bool
	t int64
}

// decidedAt places a status change received at recv whose
// lastTransitionTime is ltt (one-second resolution; 0 if unset): at recv,
// unless the kubelet published it more than a second after it decided
// it, which happens when the kubelet or the apiserver is overloaded and
// would put an old decision after events that followed it on the node
// (a Ready=True published after the pod's containers exited). Then it is
// placed at the latest time the decision can have had, ltt + 1s. lag is
// recv - ltt (0 when unknown, or when ltt is ahead of the harness clock:
// another machine's clock).
func decidedAt(recv, ltt int64) (at, lag int64) {
	if ltt <= 0 || ltt > recv {
		return recv, 0
	}
	lag = recv - ltt
	if lag > int64(time.Second) {
		return ltt + int64(time.Second) - 1, lag
	}
	return recv, lag
}

// lateStatus is the lag from which a status change counts as late: a
// second of lastTransitionTime resolution plus a second of propagation.
const lateStatus = 2 * time.Second

// statusLag records one status-change lag (tr.mu held).
func (tr *trial) statusLag(lag int64) {
	if lag > int64(lateStatus) {
		tr.stats.LateStatus++
	}
	tr.stats.StatusLagMax = max(tr.stats.StatusLagMax, time.Duration(lag))
}

// exitSeen records a terminated container instance once (tr.mu held).
func (tr *trial) exitSeen(ps *podState, c string, term *corev1.ContainerStateTerminated, attempt uint32, t int64) {
	if ps.exits[term.ContainerID] {
		return
	}
	ps.exits[term.ContainerID] = true
	ps.rec.Exits = append(ps.rec.Exits, statusExit{Container: c, Attempt: attempt, Code: term.ExitCode, Reason: term.Reason, T: t})
}

// addLines adds agent lines of this pod (by UID), once each.
func (tr *trial) addLines(ps *podState, ls []agentlog.Line) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, l := range ls {
		if ps.uid != "" && l.UID != "" && l.UID != ps.uid {
			continue
		}
		k := l.Key()
		if ps.lineKeys[k] {
			continue
		}
		ps.lineKeys[k] = true
		ps.rec.Lines = append(ps.rec.Lines, l)
	}
}

// stream reads one container instance's log (the agent mirrors its lines
// to stdout): following the running instance until it exits, or the
// current/previous terminated one at once. Called with tr.mu held.
func (tr *trial) stream(ps *podState, c string, previous, follow bool) {
	if tr.closing {
		return
	}
	ps.streams.Add(1)
	go func() {
		defer ps.streams.Done()
		opts := &corev1.PodLogOptions{Container: c, Previous: previous, Follow: follow}
		// A loaded kubelet can refuse the first requests for a container
		// it has just started: retry for a while (the shared file's copy
		// at deletion is the other way in).
		for try := 0; try < 20; try++ {
			rc, err := tr.b.cs.CoreV1().Pods(tr.ns).GetLogs(ps.name, opts).Stream(tr.ioCtx)
			if err != nil {
				if tr.ioCtx.Err() != nil {
					return
				}
				time.Sleep(500 * time.Millisecond)
				continue
			}
			var ls []agentlog.Line
			_, _ = agentlog.Parse(rc, func(l agentlog.Line) {
				if follow {
					tr.addLines(ps, []agentlog.Line{l})
				} else {
					ls = append(ls, l)
				}
			})
			rc.Close()
			tr.addLines(ps, ls)
			return
		}
	}()
}

// collectFile copies the pod's shared log through an exec of the agent's
// cat in a running container (the image has no shell). It holds every
// attempt of every container, including instances whose stdout the
// streams missed.
func (tr *trial) collectFile(ctx context.Context, ps *podState) {
	tr.mu.Lock()
	running := slices.Clone(ps.running)
	tr.mu.Unlock()
	if len(running) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	if err := tr.b.exec(cctx, tr.ns, ps.name, running[0], []string{agentBinary, "cat"}, &out, &errb); err != nil {
		fmt.Fprintf(tr.b.opts.Log, "kube: collecting %s/%s's log: %v %s\n", tr.ns, ps.name, err, errb.String())
		return
	}
	var ls []agentlog.Line
	_, _ = agentlog.Parse(&out, func(l agentlog.Line) { ls = append(ls, l) })
	tr.addLines(ps, ls)
}

// write merges every pod's record with the trial's fault and node events
// and writes the history in time order.
func (tr *trial) write(sink history.Sink, partial bool) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var evs []history.Event
	lost := 0
	for _, ps := range tr.order {
		if !ps.created {
			continue
		}
		lost += lostAttempts(&ps.rec)
		evs = append(evs, ps.rec.merge()...)
	}
	tr.stats.LinesLost = lost
	evs = append(evs, tr.global...)
	slices.SortStableFunc(evs, func(a, b history.Event) int { return cmp.Compare(a.T, b.T) })
	meta := history.Event{T: tr.start.UnixNano(), Kind: history.RunMeta, Meta: &history.Meta{
		Scenario: tr.p.Scenario, ScenarioHash: tr.p.ScenarioHash, Seed: tr.p.Seed, Trial: tr.p.Number,
		Policy: tr.p.Policy, Backend: "kube", StartUnixNano: tr.start.UnixNano(), ToleranceNanos: int64(DefaultTolerance),
		Extra: map[string]string{"cluster": tr.b.cl.Name, "namespace": tr.ns, "run": tr.b.runID, "image": tr.b.opts.Image,
			"nodes": strconv.Itoa(len(tr.nodes)), "chaosMesh": strconv.FormatBool(tr.b.chaos != nil),
			"statusLagMaxMs": strconv.FormatInt(tr.stats.StatusLagMax.Milliseconds(), 10), "lateStatusChanges": strconv.Itoa(tr.stats.LateStatus),
			"agentAttemptsLost": strconv.Itoa(lost)},
	}}
	if err := sink.Write(&meta); err != nil {
		return err
	}
	last := meta.T
	for i := range evs {
		if evs[i].T < last {
			evs[i].T = last // events before the trial's start (clock skew)
		}
		last = evs[i].T
		if err := sink.Write(&evs[i]); err != nil {
			return err
		}
	}
	msg := "complete"
	if partial {
		msg = "partial"
	}
	end := history.Event{T: max(last, now()), Kind: history.RunEnd, Msg: msg}
	return sink.Write(&end)
}

// lostAttempts counts container attempts the status shows (exits) for
// which no agent line arrived.
func lostAttempts(r *podRecord) int {
	have := map[attemptKey]bool{}
	for _, l := range r.Lines {
		have[attemptKey{l.Container, l.Attempt}] = true
	}
	n := 0
	for _, x := range r.Exits {
		if !have[attemptKey{x.Container, x.Attempt}] {
			n++
		}
	}
	return n
}

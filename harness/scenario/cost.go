package scenario

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
	"github.com/sidebench/sidebench/reference-impl/kubelet"
)

// Cost is what a scenario needs, estimated from its fields before anything
// runs: how many pods are alive at once, how many history events a trial
// writes and how fast, how long the longest pod history is, and the memory
// all that takes in sidebench's pipeline (simulator, partitioner, checker,
// reports). Validation refuses a scenario whose estimate exceeds the
// memory budget, naming the field that drives it (CheckBudget).
//
// What does not cost memory is not limited: fault schedules and arrivals
// are generated lazily (one pending firing per fault, one pending arrival
// per workload), and a pod's own events beyond a budget are spilled to disk
// (history.Partitioner), so a scenario is refused only for what must be in
// memory at once: live pods, nodes, the events of the longest pod history
// (which the checker needs whole), and what a run keeps per trial.
type Cost struct {
	Nodes int
	// PodsPerTrial is the pods one trial creates; LivePods the peak alive at
	// once (Little's law over arrivals and lifetimes).
	PodsPerTrial int
	LivePods     float64
	// TrialLength is the estimated virtual length of one trial.
	TrialLength time.Duration
	// EventsPerSecond is the history events one trial writes per second of
	// trial time; TotalEvents over the trial.
	EventsPerSecond float64
	TotalEvents     float64
	// PodEvents is the largest pod history: the pod's own events plus those
	// of its node and the cluster while it lived. The checker holds it
	// whole.
	PodEvents float64
	// Trials is policies × trials.
	Trials int
	// Terms are the memory estimate's parts, largest first.
	Terms []CostTerm
}

// CostTerm is one part of a memory estimate.
type CostTerm struct {
	// Path is the field that drives the term ("cluster.nodes").
	Path string
	// What explains the figure ("1000000000 nodes × 160 B of simulator
	// state").
	What  string
	Bytes float64
	// PerTrial terms are paid by every trial running at once.
	PerTrial bool
	// Floor terms are resident memory a soft memory limit cannot lower
	// (the binary and the Go runtime); the others are heap.
	Floor bool
}

// Measured costs of sidebench's pipeline (docs/performance.md, "Memory
// model", has the commands). They are resident bytes, garbage collector
// headroom included.
const (
	// bytesPerNode: simulator state of one node (1M nodes: 125 MB RSS).
	bytesPerNode = 160
	// bytesPerLivePod: simulator pod, partitioner record, checker and
	// metrics state of a live pod, and its events until they are spilled
	// (300k live pods: 1.24 GB RSS besides the run's records).
	bytesPerLivePod = 4 << 10
	// bytesPerPodEvent: one event of the longest pod history, held by the
	// partitioner's shared log, the assembled history, the checker's copy
	// and indexes (1.3M events in one pod: 1.7 GB RSS).
	bytesPerPodEvent = 1536
	// bytesPerSharedEvent: a node or cluster event retained while a live
	// pod may still see it.
	bytesPerSharedEvent = 512
	// processFloorBytes: the resident memory of a sidebench process
	// running a tiny scenario, the binary's text and data and the Go
	// runtime: 58-66 MiB peak RSS for the small shipped scenarios, and
	// still 68 MiB with GOMEMLIMIT=8MiB, so no soft limit lowers it.
	processFloorBytes = 64 << 20
	// trialPipelineBytes: what a running trial holds besides the parts
	// the other terms count: its data files' zstd encoders, the event
	// queues between the sim, the partitioner and the writers, the
	// retained pods' compressed records, the metrics. Peak RSS minus the
	// floor and the other terms: 54 MiB for certify (183 MiB peak),
	// 66 MiB for rules-graduation (195 MiB), rounded up to leave a
	// margin. (It was 576 MiB for the process, counting the partitioner's
	// spill budget and the checker's in-flight budget in full: caps that
	// only a scenario whose other terms are already large approaches.)
	trialPipelineBytes = 96 << 20
	// eventsPerFiring: history events of one fault firing on one target
	// (fault.begin, the component down, fault.effect, up, fault.end, and
	// the status updates of the pods it touches: a kubelet crash every
	// second wrote 12 events per firing into a pod's history).
	eventsPerFiring = 12
	// eventsPerRestart: events of one container restart (stop or exit,
	// backoff, start-requested, running, started, ready, and the status
	// flips they cause).
	eventsPerRestart = 12
	// podBaseEvents and ctrBaseEvents: events of a pod's life without
	// restarts (creation, scheduling, sandbox, conditions, phases,
	// deletion) and per container (start to stop).
	podBaseEvents = 12
	ctrBaseEvents = 10
)

// DefaultRetainedPerPod is what `run` keeps in memory for each pod of the
// whole run, and retainedPerTrial for each trial: the aggregation streams
// (issue 15, item 7: each trial folds into counts and histograms as it
// commits), so what grows with a run's length is the trials expanded up
// front, their journal entries and aggregate rows. Measured as the
// growth of peak RSS (`/usr/bin/time sidebench run --trials N`) from 200
// to 2,000 trials of fault-oom-kill (40 pods a trial: +7.9 MiB) and from
// 167 to 1,667 of soak-profile (600 pods a trial: +18 MiB): about
// 3.9 KiB a trial and 14 bytes a pod, rounded up. (It was 3.7 KB a pod
// before the aggregation streamed.)
const (
	DefaultRetainedPerPod = 16
	retainedPerTrial      = 4 << 10
)

// Budget is the memory a run may use and how it runs trials.
type Budget struct {
	// Bytes is the memory budget; <= 0 means no limit.
	Bytes int64
	// Source says where Bytes came from, for messages ("machine memory",
	// "--max-memory").
	Source string
	// Parallel is the number of trials run at once (at least 1).
	Parallel int
	// RetainedPerPod is what the run keeps per pod of the whole run (see
	// DefaultRetainedPerPod).
	RetainedPerPod int64
	// ExpandsTrials: the run materialises every trial (policies × trials)
	// up front, as scenario.Expand does.
	ExpandsTrials bool
	// SoftLimit: the Go runtime's soft memory limit is at most Bytes
	// (`run` sets it from --max-memory or the cgroup's limit), so the
	// collector holds the heap nearer the live heap than GOGC=100 does:
	// the heap terms of the estimate are divided by gcHeadroom, the
	// process floor is not (Cost.SoftBytes).
	SoftLimit bool
}

// gcHeadroom is how much a soft memory limit lowers a measured heap
// cost. GOGC=100 lets the heap reach twice the live heap, but the peaks
// measured at GOGC=100 are live data plus far less than that: under a
// soft limit the scale envelope peaked at 547 MiB against 588 MiB without
// one, certify at 162-166 MiB against 183 MiB (hack/memory-model.sh).
// (It was 2, which let a budget admit the envelope at 583 MiB.)
const gcHeadroom = 1.1

// DefaultBudget is the budget of a run today: the machine's memory (see
// MachineMemory), one trial at a time, the run's per-pod records and the
// expansion of every trial up front.
func DefaultBudget() Budget {
	b, src := MachineMemory()
	return Budget{Bytes: b, Source: src, Parallel: 1, RetainedPerPod: DefaultRetainedPerPod, ExpandsTrials: true}
}

// EstimateCost estimates what one trial of s costs, and what the run of
// all trials keeps, under budget b's assumptions (Parallel,
// RetainedPerPod, ExpandsTrials). s must have passed validation.
func (s *Scenario) EstimateCost(b Budget) Cost {
	c := Cost{Nodes: s.Cluster.Nodes, PodsPerTrial: s.TotalPods(), Trials: len(s.Policies) * s.TrialCount()}
	horizon := s.Horizon()

	// Trial length: until the last pod is gone, or the horizon.
	var length time.Duration
	wls := make([]wlCost, len(s.Workloads))
	for i := range s.Workloads {
		wls[i] = s.workloadCost(i, horizon)
		length = max(length, wls[i].end)
	}
	length = min(length, horizon)
	c.TrialLength = length

	// Faults: events per second on the worst node (shared by the pods on
	// it), events per second on one pod (its own), and in the trial.
	type faultRate struct {
		path        string
		perNode     float64 // events/s on the most hit node
		perPod      float64 // own events/s of the most hit pod
		total       float64 // events in the trial
		nodeFirings float64 // events over the trial on the most hit node
	}
	var frs []faultRate
	specs, _ := s.FaultSpecs()
	for i := range specs {
		sp := &specs[i]
		fr := faultRate{path: idx("faults", i) + ".schedule"}
		switch sp.When.Kind {
		case faults.Every:
			fr.path += ".interval"
		case faults.Poisson:
			fr.path += ".rate"
		}
		firings := sp.When.Firings(length)
		rate := sp.When.FiringRate()
		if sp.When.Kind == faults.OnPhase {
			// At most one firing per matching pod entering the phase.
			firings = float64(c.PodsPerTrial)
			if sp.When.Max > 0 {
				firings = math.Min(firings, float64(sp.When.Max))
			}
			rate = firings / math.Max(length.Seconds(), 1)
		}
		if sp.Kind.NodeLevel() {
			hit := float64(sp.Where.NodesHit(s.Cluster.Nodes))
			share := 1.0 // explicit nodes: each is hit by every firing
			if len(sp.Where.Nodes) == 0 {
				share = hit / float64(max(s.Cluster.Nodes, 1))
			}
			fr.perNode = rate * eventsPerFiring * share
			fr.nodeFirings = firings * eventsPerFiring * share
			fr.total = firings * eventsPerFiring * hit
			if sp.RecoveryCrash {
				fr.perNode, fr.nodeFirings, fr.total = 2*fr.perNode, 2*fr.nodeFirings, 2*fr.total
			}
		} else {
			live := math.Max(totalLive(wls), 1)
			hit := float64(sp.Where.PickCount(int(math.Ceil(live))))
			perHit := float64(eventsPerFiring + eventsPerRestart) // a hit container restarts
			fr.perPod = rate * perHit * math.Min(hit/live, 1)
			fr.total = firings * perHit * hit
		}
		frs = append(frs, fr)
	}

	// The largest pod history, and what drives it.
	type part struct {
		path   string
		events float64
	}
	var best []part
	bestTotal := 0.0
	for i := range wls {
		w := &wls[i]
		parts := []part{{idx("workloads", i), w.base}}
		if w.restarts > 0 {
			parts = append(parts, part{w.restartPath, w.restarts})
		}
		for _, fr := range frs {
			n := math.Min(fr.perNode*w.life.Seconds(), fr.nodeFirings) + fr.perPod*w.life.Seconds()
			if n > 0 {
				parts = append(parts, part{fr.path, n})
			}
		}
		total := 0.0
		for _, p := range parts {
			total += p.events
		}
		if total > bestTotal {
			best, bestTotal = parts, total
		}
	}
	c.PodEvents = bestTotal

	// Events of the trial.
	for i := range wls {
		c.TotalEvents += float64(s.Workloads[i].Count) * (wls[i].base + wls[i].restarts)
	}
	shared := 0.0 // node-level events per second over all nodes
	for _, fr := range frs {
		c.TotalEvents += fr.total
	}
	for i := range specs {
		if specs[i].Kind.NodeLevel() {
			shared += frs[i].total / math.Max(length.Seconds(), 1e-9)
		}
	}
	if length > 0 {
		c.EventsPerSecond = c.TotalEvents / length.Seconds()
	}
	c.LivePods = totalLive(wls)

	// Memory terms.
	add := func(path string, perTrial bool, bytes float64, format string, args ...any) {
		if bytes > 0 {
			c.Terms = append(c.Terms, CostTerm{Path: path, What: fmt.Sprintf(format, args...), Bytes: bytes, PerTrial: perTrial})
		}
	}
	add("cluster.nodes", true, float64(s.Cluster.Nodes)*bytesPerNode,
		"%d nodes × %d B of simulator state", s.Cluster.Nodes, bytesPerNode)
	for i := range wls {
		w := &wls[i]
		add(w.livePath, true, w.live*bytesPerLivePod, "%s live pods at once × %s (%s)", count(w.live), fmtBytes(bytesPerLivePod), w.liveWhy)
	}
	if len(best) > 0 {
		sort.SliceStable(best, func(i, j int) bool { return best[i].events > best[j].events })
		var why []string
		for _, p := range best {
			why = append(why, fmt.Sprintf("%s from %s", count(p.events), p.path))
		}
		add(best[0].path, true, bestTotal*bytesPerPodEvent, "the longest pod history holds %s events (%s), which the checker needs whole, × %s",
			count(bestTotal), strings.Join(why, ", "), fmtBytes(bytesPerPodEvent))
	}
	if shared > 0 {
		window := 0.0
		for i := range wls {
			window = math.Max(window, wls[i].life.Seconds())
		}
		path := ""
		for _, fr := range frs {
			if fr.nodeFirings > 0 && (path == "" || fr.total > 0) {
				path = fr.path
				break
			}
		}
		add(path, true, math.Min(shared*window, c.TotalEvents)*bytesPerSharedEvent, "%s node events per second kept while a pod that saw them lives (%s) × %s",
			count(shared), fmtSeconds(window), fmtBytes(bytesPerSharedEvent))
	}
	// The floor is resident whatever the soft limit (CostTerm.Floor).
	c.Terms = append(c.Terms, CostTerm{What: "sidebench itself: the binary and the Go runtime", Bytes: processFloorBytes, Floor: true})
	add("", true, trialPipelineBytes, "a running trial's pipeline: data file encoders, event queues, metrics")
	if b.ExpandsTrials {
		add("trials", false, float64(c.Trials)*float64(unsafe.Sizeof(Trial{})+retainedPerTrial),
			"%d policies × %d trials expanded up front and kept for the reports × %s", len(s.Policies), s.TrialCount(),
			fmtBytes(float64(unsafe.Sizeof(Trial{})+retainedPerTrial)))
	}
	if b.RetainedPerPod > 0 {
		path := "trials" // blame the larger factor
		if c.PodsPerTrial > c.Trials {
			big := 0
			for i := range s.Workloads {
				if s.Workloads[i].Count > s.Workloads[big].Count {
					big = i
				}
			}
			path = idx("workloads", big) + ".count"
		}
		add(path, false, float64(c.Trials)*float64(c.PodsPerTrial)*float64(b.RetainedPerPod),
			"%d trials × %d pods, each kept for the reports × %s", c.Trials, c.PodsPerTrial, fmtBytes(float64(b.RetainedPerPod)))
	}
	sort.SliceStable(c.Terms, func(i, j int) bool { return c.Terms[i].Bytes > c.Terms[j].Bytes })
	return c
}

// Bytes is the estimated peak memory with parallel trials at once.
func (c *Cost) Bytes(parallel int) float64 { return c.bytes(parallel, 1) }

// SoftBytes is Bytes under a Go soft memory limit: the heap terms without
// the collector's headroom (gcHeadroom), the floor whole.
func (c *Cost) SoftBytes(parallel int) float64 { return c.bytes(parallel, gcHeadroom) }

func (c *Cost) bytes(parallel int, headroom float64) float64 {
	total := 0.0
	for _, t := range c.Terms {
		b := t.Bytes
		if t.PerTrial {
			b *= float64(max(parallel, 1))
		}
		if !t.Floor {
			b /= headroom
		}
		total += b
	}
	return total
}

// CheckBudget refuses a scenario whose estimated memory exceeds b. The
// error is an ErrorList naming the field of the largest term, its figure
// and the total.
func (s *Scenario) CheckBudget(b Budget) error {
	if b.Bytes <= 0 {
		return nil
	}
	c := s.EstimateCost(b)
	full := c.Bytes(b.Parallel)
	total, limited := full, ""
	if b.SoftLimit {
		// The terms count the collector's headroom; under a soft limit
		// the total drops it. Both totals are quoted, so that the largest
		// term (with headroom) is read against the total it is part of.
		total = c.SoftBytes(b.Parallel)
		limited = fmt.Sprintf(", %s with the garbage collector held to the soft memory limit", fmtBytes(total))
	}
	if total <= float64(b.Bytes) {
		return nil
	}
	e := &errs{res: s.resolver()}
	top := c.Terms[0]
	src := b.Source
	if src == "" {
		src = "the memory budget"
	}
	par := ""
	if b.Parallel > 1 && top.PerTrial {
		par = fmt.Sprintf(", for each of %d trials at once", b.Parallel)
	}
	remedy := "lower this value, or set another budget with --max-memory"
	if top.Path == "" {
		// sidebench's own part names no field: there is no value to
		// lower (the message used to say "lower this value" anyway).
		remedy = "no scenario field sets this part; set another budget with --max-memory"
	}
	e.add(top.Path, "needs about %s of memory: %s%s; the scenario needs about %s in all%s, more than the %s of %s (%s)",
		fmtBytes(top.Bytes), top.What, par, fmtBytes(full), limited, fmtBytes(float64(b.Bytes)), src, remedy)
	return e.err()
}

func (s *Scenario) resolver() resolver {
	if s.pos != nil {
		return s.pos
	}
	return &positions{main: ixResolver{newPosIndex(s.File)}}
}

// wlCost is one workload's share of a trial's cost.
type wlCost struct {
	live     float64 // peak live pods
	livePath string
	liveWhy  string
	life     time.Duration // how long one pod lives (a high quantile)
	end      time.Duration // when its last pod is gone
	base     float64       // events of one pod without restarts or faults
	restarts float64       // restart events of one pod over its life
	// restartPath is the behaviour field that drives restarts.
	restartPath string
}

func (s *Scenario) workloadCost(i int, horizon time.Duration) wlCost {
	w := &s.Workloads[i]
	p := idx("workloads", i)
	a := &w.Arrival
	var wc wlCost
	spec, err := convert.PodSpecFromV1(&w.Template.Spec)
	if err != nil {
		return wc
	}
	grace := spec.TerminationGracePeriod

	// How long a pod lives: its lifetime, or its Job's run time, else to
	// the horizon.
	life := horizon
	meanLife := horizon
	switch {
	case w.Lifetime != nil && !w.Lifetime.IsNever():
		life = quantile(*w.Lifetime, 0.99) + grace
		meanLife = w.Lifetime.Mean() + grace
	case spec.RestartPolicy != api.RestartAlways:
		life, meanLife = 0, 0
		for j := range spec.Main {
			b, err := w.BehaviorOf(spec.Main[j].Name)
			if err != nil || b.RunTime.IsNever() {
				life, meanLife = horizon, horizon
				break
			}
			life = max(life, quantile(b.RunTime, 0.99)+grace)
			meanLife = max(meanLife, b.RunTime.Mean()+grace)
		}
	}
	life, meanLife = min(life, horizon), min(meanLife, horizon)
	wc.life = life

	// Arrivals: how long they take, hence how many pods live at once.
	var span time.Duration
	switch a.Type {
	case "constant", "poisson":
		if a.Rate > 0 {
			n := float64(w.Count - 1)
			if a.Type == "poisson" {
				n++
			}
			span = secondsToDuration(n / a.Rate)
		}
	case "burst":
		if a.Every > 0 && a.Size > 0 {
			span = time.Duration((w.Count+a.Size-1)/a.Size-1) * a.Every.D()
		}
	}
	wc.end = min(a.Start.D()+span+life, horizon)
	wc.livePath, wc.liveWhy = p+".count", "all pods arrive at once"
	live := float64(w.Count)
	switch {
	case meanLife >= horizon:
		wc.liveWhy = "pods live until the horizon"
	case span > 0 && a.Type == "burst":
		live = math.Min(live, float64(a.Size)*(math.Ceil(meanLife.Seconds()/a.Every.D().Seconds())+1))
		wc.livePath, wc.liveWhy = p+".arrival.size", "bursts × lifetime"
	case span > 0:
		rate := float64(w.Count) / span.Seconds()
		l := rate * meanLife.Seconds()
		live = math.Min(live, l+3*math.Sqrt(l)+1)
		wc.livePath, wc.liveWhy = p+".arrival.rate", fmt.Sprintf("%.3g pods/s × %s mean life", rate, fmtSeconds(meanLife.Seconds()))
	}
	wc.live = live

	// Events of one pod: a base, plus container restarts over its life.
	wc.base = podBaseEvents + ctrBaseEvents*float64(spec.Len())
	for j := 0; j < spec.Len(); j++ {
		ctr := spec.At(j)
		b, err := w.BehaviorOf(ctr.Name)
		if err != nil {
			continue
		}
		n, field := restarts(&b, ctr, spec.RestartPolicy, life)
		if n*eventsPerRestart > wc.restarts {
			key := ctr.Name
			if _, own := w.Behaviors[key]; !own {
				key = DefaultBehavior
			}
			wc.restartPath = p + ".behaviors." + key + "." + field
		}
		wc.restarts += n * eventsPerRestart
	}
	return wc
}

// restarts estimates how often a container restarts over life, and the
// behaviour field that causes it. A crash-looping container waits for
// the kubelet's back-off between attempts: up to MaxBackoff (300s) while
// it runs less than BackoffResetAfter (10 min), InitialBackoff (10s)
// after a longer run.
func restarts(b *behavior.Container, c *api.Container, policy api.RestartPolicy, life time.Duration) (float64, string) {
	restartable := c.Role == api.RoleSidecar || policy != api.RestartNever
	if !restartable || life <= 0 {
		return 0, ""
	}
	up, field := behavior.Never, ""
	consider := func(d time.Duration, name string) {
		if d < up {
			up, field = d, name
		}
	}
	if !b.CrashMTBF.IsNever() && !b.CrashMTBF.IsZero() {
		consider(b.CrashMTBF.Mean(), "crashMTBF")
	}
	if b.MemoryGrowth > 0 && b.MemoryLimit > 0 {
		consider(secondsToDuration(float64(b.MemoryLimit)/b.MemoryGrowth), "memoryGrowth")
	}
	if !b.LivenessFailAfter.IsNever() && c.LivenessProbe != nil {
		consider(b.LivenessFailAfter.Mean(), "livenessFailAfter")
	}
	// A normal exit restarts under Always, and for sidecars; a regular
	// init container or a Job's main exits once.
	if !b.RunTime.IsNever() && (c.Role == api.RoleSidecar || (c.Role == api.RoleMain && policy == api.RestartAlways)) && (b.ExitCode != 0 || policy == api.RestartAlways || c.Role == api.RoleSidecar) {
		consider(b.RunTime.Mean(), "runTime")
	}
	if up == behavior.Never {
		return 0, ""
	}
	backoff := kubelet.MaxBackoff
	if up >= kubelet.BackoffResetAfter {
		backoff = kubelet.InitialBackoff
	}
	cycle := up + backoff + b.StartLatency.Mean()
	// The first back-offs (10s, 20s, ... 160s) are shorter: at most 5 more.
	return life.Seconds()/cycle.Seconds() + 5, field
}

func totalLive(wls []wlCost) float64 {
	n := 0.0
	for i := range wls {
		n += wls[i].live
	}
	return n
}

// quantile is d's p-quantile, the horizon-sized Never for never.
func quantile(d behavior.Dist, p float64) time.Duration {
	if d.IsNever() {
		return behavior.Never
	}
	return d.Quantile(p)
}

func secondsToDuration(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// count formats a possibly huge count compactly.
func count(n float64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("%.3g", n)
}

// fmtBytes formats a byte count in binary units.
func fmtBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	if b >= 1000 && i == len(units)-1 {
		return fmt.Sprintf("%.3g %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

package metrics

import (
	"cmp"
	"slices"

	"github.com/sidebench/sidebench/reports/stats"
)

// Options control aggregation.
type Options struct {
	// Confidence is the level of the percentile CIs; 0 means 0.95.
	Confidence float64
	// IncludeFaulted adds the latencies of faulted pods to the samples. By
	// default they are left out (a fault is a different experiment from the
	// SLI's steady state) and counted in MetricSummary.FaultedExcluded.
	IncludeFaulted bool
}

// Key identifies one latency sample set.
type Key struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Metric   Metric `json:"metric"`
}

// MetricSummary is the aggregate of one metric for one scenario and policy:
// nearest-rank p50/p90/p99 (CL2's Perc50/90/99, in ms) each with a
// distribution-free order-statistic CI (stats.QuantileSummary) and the
// sample size. A percentile whose CI is unbounded carries the warning
// "need >= N samples ...".
type MetricSummary struct {
	Key
	N int `json:"n"`
	// FaultedExcluded counts faulted pods that had this metric but were
	// left out (0 with Options.IncludeFaulted).
	FaultedExcluded int           `json:"faultedExcluded"`
	P50             stats.Summary `json:"p50"`
	P90             stats.Summary `json:"p90"`
	P99             stats.Summary `json:"p99"`
}

// RunKey identifies a scenario × policy.
type RunKey struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
}

// PodCounts are the per scenario × policy counts reports and graduation
// criteria need.
type PodCounts struct {
	RunKey
	Pods    int `json:"pods"`
	Faulted int `json:"faulted"`
	// Jobs are pods with restartPolicy other than Always; Finished reached
	// Succeeded or Failed; Succeeded reached Succeeded.
	Jobs          int `json:"jobs"`
	JobsFinished  int `json:"jobsFinished"`
	JobsSucceeded int `json:"jobsSucceeded"`
	// The same, only for Jobs whose pod has sidecars (KEP-753 PRR SLO: 99%
	// of Jobs with sidecars complete).
	SidecarJobs          int      `json:"sidecarJobs"`
	SidecarJobsFinished  int      `json:"sidecarJobsFinished"`
	SidecarJobsSucceeded int      `json:"sidecarJobsSucceeded"`
	Restarts             Restarts `json:"restarts"`
}

// Result is the outcome of aggregating records.
type Result struct {
	Latencies []MetricSummary `json:"latencies"`
	Pods      []PodCounts     `json:"pods"`
}

// Aggregator collects records incrementally and summarises them. Each
// latency population is a stats.Hist (1 ms resolution): memory is bounded
// by the range of the values, not by the number of pods, so a soak of any
// length aggregates in constant space, and aggregators merge (trials,
// shards, nights) without the per-pod records. The zero value is not
// usable; use NewAggregator.
type Aggregator struct {
	opts     Options
	hists    map[Key]*stats.Hist
	excluded map[Key]int
	counts   map[RunKey]*PodCounts
}

// NewAggregator returns an empty Aggregator.
func NewAggregator(opts Options) *Aggregator {
	if opts.Confidence == 0 {
		opts.Confidence = 0.95
	}
	return &Aggregator{opts: opts, hists: map[Key]*stats.Hist{}, excluded: map[Key]int{}, counts: map[RunKey]*PodCounts{}}
}

func (a *Aggregator) podCounts(rk RunKey) *PodCounts {
	pc := a.counts[rk]
	if pc == nil {
		pc = &PodCounts{RunKey: rk}
		a.counts[rk] = pc
	}
	return pc
}

func (a *Aggregator) hist(k Key) *stats.Hist {
	h := a.hists[k]
	if h == nil {
		h = &stats.Hist{}
		a.hists[k] = h
	}
	return h
}

// Add adds one pod's record.
func (a *Aggregator) Add(r *Record) {
	pc := a.podCounts(RunKey{r.Scenario, r.Policy})
	pc.Pods++
	if r.Faulted {
		pc.Faulted++
	}
	pc.Restarts.Init += r.Restarts.Init
	pc.Restarts.Sidecar += r.Restarts.Sidecar
	pc.Restarts.Main += r.Restarts.Main
	if r.Job {
		finished := r.Phase == "Succeeded" || r.Phase == "Failed"
		pc.Jobs++
		pc.JobsFinished += b2i(finished)
		pc.JobsSucceeded += b2i(r.Succeeded())
		if r.HasSidecars() {
			pc.SidecarJobs++
			pc.SidecarJobsFinished += b2i(finished)
			pc.SidecarJobsSucceeded += b2i(r.Succeeded())
		}
	}
	for m, v := range r.LatenciesMs {
		k := Key{r.Scenario, r.Policy, m}
		if r.Faulted && !a.opts.IncludeFaulted {
			a.excluded[k]++
			continue
		}
		a.hist(k).Add(v)
	}
}

// Hist returns the latency distribution of one key (nil if none; not a
// copy).
func (a *Aggregator) Hist(k Key) *stats.Hist { return a.hists[k] }

// Snapshot is an Aggregator's content as plain data (JSON): what a run
// directory stores per trial for every pod, retained or not, so that a
// run, its shards and its nights aggregate from it alone.
type Snapshot struct {
	Pods      []PodCounts       `json:"pods,omitempty"`
	Latencies []LatencySnapshot `json:"latencies,omitempty"`
}

// LatencySnapshot is one latency population.
type LatencySnapshot struct {
	Key
	FaultedExcluded int         `json:"faultedExcluded,omitempty"`
	Ms              *stats.Hist `json:"ms"`
}

// Snapshot returns the content in a deterministic order (the Hists are
// shared, not copied).
func (a *Aggregator) Snapshot() Snapshot {
	var s Snapshot
	for _, pc := range a.counts {
		s.Pods = append(s.Pods, *pc)
	}
	slices.SortFunc(s.Pods, func(x, y PodCounts) int {
		return cmp.Or(cmp.Compare(x.Scenario, y.Scenario), cmp.Compare(x.Policy, y.Policy))
	})
	for _, k := range a.keys() {
		h := a.hists[k]
		if h == nil {
			h = &stats.Hist{}
		}
		s.Latencies = append(s.Latencies, LatencySnapshot{Key: k, FaultedExcluded: a.excluded[k], Ms: h})
	}
	return s
}

// AddSnapshot adds a snapshot's content (Merge of a stored aggregator).
func (a *Aggregator) AddSnapshot(s *Snapshot) {
	for i := range s.Pods {
		o := &s.Pods[i]
		pc := a.podCounts(o.RunKey)
		pc.Pods += o.Pods
		pc.Faulted += o.Faulted
		pc.Jobs += o.Jobs
		pc.JobsFinished += o.JobsFinished
		pc.JobsSucceeded += o.JobsSucceeded
		pc.SidecarJobs += o.SidecarJobs
		pc.SidecarJobsFinished += o.SidecarJobsFinished
		pc.SidecarJobsSucceeded += o.SidecarJobsSucceeded
		pc.Restarts.Init += o.Restarts.Init
		pc.Restarts.Sidecar += o.Restarts.Sidecar
		pc.Restarts.Main += o.Restarts.Main
	}
	for i := range s.Latencies {
		l := &s.Latencies[i]
		if l.FaultedExcluded > 0 {
			a.excluded[l.Key] += l.FaultedExcluded
		}
		h := a.hist(l.Key)
		h.Merge(l.Ms)
	}
}

// Merge adds everything o collected.
func (a *Aggregator) Merge(o *Aggregator) {
	s := o.Snapshot()
	a.AddSnapshot(&s)
}

// keys returns every latency key, sorted by scenario, policy and metric
// (metrics in the order of Metrics, unknown names last).
func (a *Aggregator) keys() []Key {
	seen := make(map[Key]bool)
	var keys []Key
	for k := range a.hists {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for k := range a.excluded {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y Key) int {
		return cmp.Or(cmp.Compare(x.Scenario, y.Scenario), cmp.Compare(x.Policy, y.Policy),
			cmp.Compare(metricIndex(x.Metric), metricIndex(y.Metric)), cmp.Compare(x.Metric, y.Metric))
	})
	return keys
}

// Result summarises everything added so far, sorted by scenario, policy and
// metric (metrics in the order of Metrics, unknown names last).
func (a *Aggregator) Result() Result {
	var out Result
	for _, k := range a.keys() {
		h := a.hists[k]
		if h == nil {
			h = &stats.Hist{}
		}
		out.Latencies = append(out.Latencies, MetricSummary{
			Key:             k,
			N:               h.N(),
			FaultedExcluded: a.excluded[k],
			P50:             stats.QuantileSummaryOf(h, 0.50, a.opts.Confidence),
			P90:             stats.QuantileSummaryOf(h, 0.90, a.opts.Confidence),
			P99:             stats.QuantileSummaryOf(h, 0.99, a.opts.Confidence),
		})
	}
	for _, pc := range a.counts {
		out.Pods = append(out.Pods, *pc)
	}
	slices.SortFunc(out.Pods, func(x, y PodCounts) int {
		return cmp.Or(cmp.Compare(x.Scenario, y.Scenario), cmp.Compare(x.Policy, y.Policy))
	})
	return out
}

// Aggregate collects the records' samples per (scenario, policy, metric)
// and summarises them (see Aggregator).
func Aggregate(recs []Record, opts Options) Result {
	a := NewAggregator(opts)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Result()
}

func metricIndex(m Metric) int {
	if i := slices.Index(Metrics, m); i >= 0 {
		return i
	}
	return len(Metrics)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

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

// Aggregator collects records incrementally (for streaming a large
// history) and summarises them. The zero value is not usable; use
// NewAggregator.
type Aggregator struct {
	opts     Options
	samples  map[Key][]float64
	excluded map[Key]int
	counts   map[RunKey]*PodCounts
}

// NewAggregator returns an empty Aggregator.
func NewAggregator(opts Options) *Aggregator {
	if opts.Confidence == 0 {
		opts.Confidence = 0.95
	}
	return &Aggregator{opts: opts, samples: map[Key][]float64{}, excluded: map[Key]int{}, counts: map[RunKey]*PodCounts{}}
}

// Add adds one pod's record.
func (a *Aggregator) Add(r *Record) {
	rk := RunKey{r.Scenario, r.Policy}
	pc := a.counts[rk]
	if pc == nil {
		pc = &PodCounts{RunKey: rk}
		a.counts[rk] = pc
	}
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
		a.samples[k] = append(a.samples[k], v)
	}
}

// Samples returns the collected samples of one key (not a copy).
func (a *Aggregator) Samples(k Key) []float64 { return a.samples[k] }

// Result summarises everything added so far, sorted by scenario, policy and
// metric (metrics in the order of Metrics, unknown names last).
func (a *Aggregator) Result() Result {
	var out Result
	keys := make(map[Key]bool)
	for k := range a.samples {
		keys[k] = true
	}
	for k := range a.excluded {
		keys[k] = true
	}
	for k := range keys {
		x := a.samples[k]
		out.Latencies = append(out.Latencies, MetricSummary{
			Key:             k,
			N:               len(x),
			FaultedExcluded: a.excluded[k],
			P50:             stats.QuantileSummary(x, 0.50, a.opts.Confidence),
			P90:             stats.QuantileSummary(x, 0.90, a.opts.Confidence),
			P99:             stats.QuantileSummary(x, 0.99, a.opts.Confidence),
		})
	}
	slices.SortFunc(out.Latencies, func(x, y MetricSummary) int {
		return cmp.Or(cmp.Compare(x.Scenario, y.Scenario), cmp.Compare(x.Policy, y.Policy),
			cmp.Compare(metricIndex(x.Metric), metricIndex(y.Metric)), cmp.Compare(x.Metric, y.Metric))
	})
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

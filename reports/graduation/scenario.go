package graduation

import (
	"fmt"
	"math"
	"time"
)

// Criterion names of a scenario's own criteria (the criteria: section of a
// scenario file; the names are its field names) and of a bug replica.
const (
	CriterionMaxViolations   = "maxViolations"
	CriterionMaxDegradations = "maxDegradations"
	CriterionPodStartupP50   = "podStartupP50"
	CriterionPodStartupP99   = "podStartupP99"
	CriterionCaught          = "caught"
)

// ScenarioLimits are a scenario's own pass criteria.
type ScenarioLimits struct {
	// MaxViolations bounds the hard violations of a policy over all its
	// trials (a scenario's default is 0).
	MaxViolations int
	// MaxDegradations bounds guarantees broken under voiding faults (nil:
	// unbounded).
	MaxDegradations *int
	// PodStartupP50 and PodStartupP99 bound the nearest-rank pod_startup
	// percentiles (nil: not judged).
	PodStartupP50, PodStartupP99 *time.Duration
}

// ScenarioInputs are the observed numbers, as aggregated for every other
// output (the percentiles are passed in, not recomputed, so the verdict
// and the tables show the same number).
type ScenarioInputs struct {
	Violations, Degradations int
	// StartupN is the number of pod_startup samples; StartupP50Ms and
	// StartupP99Ms its nearest-rank percentiles.
	StartupN                   int
	StartupP50Ms, StartupP99Ms float64
	// StartupFaulted counts the faulted pods left out of the samples.
	StartupFaulted int
}

// EvaluateScenario judges a policy against its scenario's own criteria:
// each is PASS or FAIL (they are point limits, with no confidence bound).
func EvaluateScenario(l ScenarioLimits, in ScenarioInputs) []Verdict {
	out := []Verdict{limit(CriterionMaxViolations, "violations", float64(in.Violations), float64(l.MaxViolations))}
	if l.MaxDegradations != nil {
		out = append(out, limit(CriterionMaxDegradations, "degradations", float64(in.Degradations), float64(*l.MaxDegradations)))
	}
	startup := func(name string, p float64, max *time.Duration, observed float64) {
		if max == nil {
			return
		}
		th := float64(*max) / 1e6
		if in.StartupN == 0 {
			// Latency samples are the unfaulted pods' (the SLI's steady
			// state): with none there is nothing to judge, which is not a
			// failure of the limit.
			msg := fmt.Sprintf("p%g pod_startup: no sample (n=0)", p)
			if in.StartupFaulted > 0 {
				msg = fmt.Sprintf("p%g pod_startup: no unfaulted pod to judge (all %d pods with a start were touched by a fault; latency samples exclude faulted pods)", p, in.StartupFaulted)
			}
			out = append(out, Verdict{Criterion: name, Status: Insufficient, Observed: math.NaN(), Bound: math.NaN(), Threshold: th, Message: msg})
			return
		}
		v := Verdict{Criterion: name, Observed: observed, Bound: math.NaN(), Threshold: th, Status: Pass}
		v.Message = fmt.Sprintf("p%g pod_startup %s (n=%d) <= %s", p, fmtMs(observed), in.StartupN, *max)
		if observed > th {
			v.Status = Fail
			v.Message = fmt.Sprintf("p%g pod_startup %s (n=%d) > %s", p, fmtMs(observed), in.StartupN, *max)
		}
		out = append(out, v)
	}
	startup(CriterionPodStartupP50, 50, l.PodStartupP50, in.StartupP50Ms)
	startup(CriterionPodStartupP99, 99, l.PodStartupP99, in.StartupP99Ms)
	return out
}

func limit(name, what string, observed, max float64) Verdict {
	v := Verdict{Criterion: name, Observed: observed, Bound: math.NaN(), Threshold: max, Status: Pass,
		Message: fmt.Sprintf("%s %g <= %s %g", what, observed, name, max)}
	if observed > max {
		v.Status = Fail
		v.Message = fmt.Sprintf("%s %g > %s %g", what, observed, name, max)
	}
	return v
}

// EvaluateBugReplica judges a deliberately wrong policy: it exists to
// prove the checker catches it, so it PASSes when the checker found at
// least one violation or exceeded bound in its trials, and FAILs when it
// found nothing.
func EvaluateBugReplica(findings int, lifecycles int) Verdict {
	v := Verdict{Criterion: CriterionCaught, Observed: float64(findings), Bound: math.NaN(), Threshold: 1, Status: Pass,
		Message: fmt.Sprintf("the checker caught it: %d violations or exceeded bounds in %d lifecycles", findings, lifecycles)}
	if findings == 0 {
		v.Status = Fail
		v.Message = fmt.Sprintf("the checker did not catch the bug replica: no violation or exceeded bound in %d lifecycles", lifecycles)
	}
	return v
}

// fmtMs renders milliseconds as a rounded duration ("1.234s", "850ms").
func fmtMs(v float64) string {
	d := time.Duration(v * 1e6)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

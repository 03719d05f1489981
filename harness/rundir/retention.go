package rundir

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Retention is what a run keeps of its pods' histories and per-pod
// records (--keep-history). Whatever it is, every pod is checked and
// measured, and its counts and latency distributions are kept
// (TrialStats): retention bounds the disk, not the evidence.
type Retention struct {
	// Mode is RetainAll, RetainFindings or RetainSample.
	Mode string
	// Percent is the share of the other pods sampled (RetainSample).
	Percent float64
}

// Retention modes.
const (
	// RetainAll keeps every event of every trial (the history as the
	// backend emitted it) and every pod's record: run's default.
	RetainAll = "all"
	// RetainFindings keeps the pods with a finding (violation,
	// degradation, bound exceeded, or a checker that failed on them).
	RetainFindings = "findings"
	// RetainSample keeps the pods with a finding plus a deterministic
	// Percent of the others: soak's default.
	RetainSample = "sample"
)

// DefaultSoakRetention is soak's default: findings plus 0.1% of the other
// pods, chosen so that an 8-hour soak of scenarios/soak-profile.yaml
// stays within 5 GB (docs/performance.md measures it).
var DefaultSoakRetention = Retention{Mode: RetainSample, Percent: 0.1}

// ParseRetention parses --keep-history: all, findings or sample:P (P a
// percentage in (0, 100]).
func ParseRetention(s string) (Retention, error) {
	switch {
	case s == "" || s == RetainAll:
		return Retention{Mode: RetainAll}, nil
	case s == RetainFindings:
		return Retention{Mode: RetainFindings}, nil
	case strings.HasPrefix(s, RetainSample+":"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(s, RetainSample+":"), "%"), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return Retention{}, fmt.Errorf("--keep-history %q: sample:P needs a percentage P in (0, 100], e.g. sample:0.1", s)
		}
		return Retention{Mode: RetainSample, Percent: p}, nil
	}
	return Retention{}, fmt.Errorf("--keep-history %q: allowed: all, findings, sample:P (findings plus P%% of the other pods)", s)
}

// String is the flag's form (ParseRetention's input).
func (r Retention) String() string {
	switch r.Mode {
	case "", RetainAll:
		return RetainAll
	case RetainSample:
		return RetainSample + ":" + strconv.FormatFloat(r.Percent, 'g', -1, 64)
	}
	return r.Mode
}

// All reports whether every event is kept.
func (r Retention) All() bool { return r.Mode == "" || r.Mode == RetainAll }

// Keep says whether a pod's history and record are kept: every pod under
// RetainAll, a pod with findings always, and under RetainSample a pod
// whose hash of (trial seed, pod name) falls in the sampled Percent, so
// the sample is the same on every run, resume and shard of the trial.
func (r Retention) Keep(seed uint64, pod string, notable bool) bool {
	switch {
	case r.All() || notable:
		return true
	case r.Mode != RetainSample:
		return false
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(pod))
	return float64(h.Sum64()%1_000_000) < r.Percent*10_000
}

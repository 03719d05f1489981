package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
)

// Ordered is a sample in ascending order: At(i) is its (i+1)-th smallest
// value. A sorted []float64 (Sorted) and a Hist are both Ordered, so every
// order-statistic estimator (nearest-rank percentiles, quantile CIs, the
// quantile bootstrap) has one implementation for both.
type Ordered interface {
	Len() int
	At(i int) float64
}

// Sorted is an ascending []float64 as an Ordered sample.
type Sorted []float64

// Len is the sample size.
func (s Sorted) Len() int { return len(s) }

// At is the (i+1)-th smallest value.
func (s Sorted) At(i int) float64 { return s[i] }

// Hist is a latency distribution at 1 ms resolution: how many samples fell
// in each whole millisecond, a value x (ms) counted as ceil(x). It is what
// every output's percentiles are computed from, because it is
//
//   - exact to the millisecond: nearest rank commutes with the monotone
//     ceil, so a percentile of the Hist is the percentile of the raw
//     samples rounded up to the next whole ms, and a limit "p99 ≤ X ms"
//     with a whole-ms X is decided exactly;
//   - bounded in memory by the range of the values (distinct whole ms),
//     not by the number of samples: a soak of 10^8 lifecycles holds a few
//     thousand buckets per metric;
//   - mergeable: the Hist of two sets of samples is the sum of their
//     Hists, so trials, shards and nights pool without the samples.
//
// NaN and ±Inf are not counted. The zero value is an empty Hist ready to
// use. A Hist is not safe for concurrent use.
type Hist struct {
	counts map[int64]uint64
	n      int
	// Sorted view (rebuilt after a change): keys ascending, cum[i] the
	// number of samples ≤ keys[i].
	keys  []int64
	cum   []int
	stale bool
}

// HistOf returns the Hist of samples.
func HistOf(samples []float64) *Hist {
	h := &Hist{}
	for _, x := range samples {
		h.Add(x)
	}
	return h
}

// Bucket is the whole millisecond a value x falls in: ceil(x).
func Bucket(x float64) int64 { return int64(math.Ceil(x)) }

// Add counts one sample of x ms.
func (h *Hist) Add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	h.AddN(Bucket(x), 1)
}

// AddN counts c samples of ms whole milliseconds.
func (h *Hist) AddN(ms int64, c int) {
	if c <= 0 {
		return
	}
	if h.counts == nil {
		h.counts = map[int64]uint64{}
	}
	h.counts[ms] += uint64(c)
	h.n += c
	h.stale = true
}

// Merge adds every sample of o.
func (h *Hist) Merge(o *Hist) {
	if o == nil {
		return
	}
	for ms, c := range o.counts {
		h.AddN(ms, int(c))
	}
}

// Clone returns a copy of h.
func (h *Hist) Clone() *Hist {
	c := &Hist{}
	c.Merge(h)
	return c
}

// N is the number of samples (Len as an int for callers that count).
func (h *Hist) N() int {
	if h == nil {
		return 0
	}
	return h.n
}

// Len is the number of samples (Ordered).
func (h *Hist) Len() int { return h.N() }

// Distinct is the number of non-empty buckets, the measure of its memory.
func (h *Hist) Distinct() int {
	if h == nil {
		return 0
	}
	return len(h.counts)
}

func (h *Hist) view() {
	if !h.stale && len(h.keys) == len(h.counts) {
		return
	}
	h.keys = h.keys[:0]
	for k := range h.counts {
		h.keys = append(h.keys, k)
	}
	slices.Sort(h.keys)
	h.cum = h.cum[:0]
	acc := 0
	for _, k := range h.keys {
		acc += int(h.counts[k])
		h.cum = append(h.cum, acc)
	}
	h.stale = false
}

// At returns the (i+1)-th smallest sample, 0 ≤ i < N (Ordered).
func (h *Hist) At(i int) float64 {
	h.view()
	j, _ := slices.BinarySearch(h.cum, i+1)
	return float64(h.keys[j])
}

// Buckets yields (ms, count) in ascending order.
func (h *Hist) Buckets() iter.Seq2[int64, int] {
	return func(yield func(int64, int) bool) {
		if h == nil || h.n == 0 {
			return
		}
		h.view()
		for _, k := range h.keys {
			if !yield(k, int(h.counts[k])) {
				return
			}
		}
	}
}

// CountLE is the number of samples whose bucket is ≤ x.
func (h *Hist) CountLE(x float64) int {
	if h.N() == 0 {
		return 0
	}
	h.view()
	j, _ := slices.BinarySearch(h.keys, int64(math.Floor(x))+1) // first key > x
	if j == 0 {
		return 0
	}
	return h.cum[j-1]
}

// Min is the smallest sample (NaN if empty).
func (h *Hist) Min() float64 {
	if h.N() == 0 {
		return math.NaN()
	}
	return h.At(0)
}

// Equal reports whether h and o hold the same samples.
func (h *Hist) Equal(o *Hist) bool {
	if h.N() != o.N() || h.Distinct() != o.Distinct() {
		return false
	}
	for k, c := range h.counts {
		if o.counts[k] != c {
			return false
		}
	}
	return true
}

// MarshalJSON encodes the buckets compactly: a JSON array whose first
// element is the smallest bucket (ms), each later value element the gap
// (> 0) to the previous bucket, and a negative element −c after a value
// its count when c ≥ 2 (a value without one has count 1). Gaps and counts
// are small numbers, which zstd compresses to about 3 bytes per pod and
// metric. {1: 1, 3: 2, 10: 1} is [1,2,-2,7]; an empty Hist is [].
func (h *Hist) MarshalJSON() ([]byte, error) {
	return h.AppendJSON(nil), nil
}

// AppendJSON appends the JSON encoding (MarshalJSON) to b.
func (h *Hist) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	first := true
	var prev int64
	for k, c := range h.Buckets() {
		if !first {
			b = append(b, ',')
			b = strconv.AppendInt(b, k-prev, 10)
		} else {
			b = strconv.AppendInt(b, k, 10)
			first = false
		}
		prev = k
		if c > 1 {
			b = append(b, ',', '-')
			b = strconv.AppendInt(b, int64(c), 10)
		}
	}
	return append(b, ']')
}

// UnmarshalJSON decodes MarshalJSON's encoding into h (which is reset).
func (h *Hist) UnmarshalJSON(data []byte) error {
	*h = Hist{}
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	var xs []int64
	if err := json.Unmarshal(data, &xs); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	var prev int64
	pending := false // a value read, its count not yet added
	flush := func(c int64) {
		h.AddN(prev, int(c))
		pending = false
	}
	for i, x := range xs {
		switch {
		case i == 0:
			prev, pending = x, true
		case x < 0:
			if !pending || -x < 2 {
				return fmt.Errorf("histogram: element %d: count %d without a value or below 2", i, -x)
			}
			flush(-x)
		case x == 0:
			return fmt.Errorf("histogram: element %d: gap 0 (buckets must be ascending)", i)
		default:
			if pending {
				flush(1)
			}
			prev, pending = prev+x, true
		}
	}
	if pending {
		flush(1)
	}
	return nil
}

package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// ceiled returns the samples as a Hist counts them: whole ms, rounded up.
func ceiled(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Ceil(v)
	}
	return out
}

func lognormalSample(r *rand.Rand, n int, median float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = median * math.Exp(0.8*r.NormFloat64())
	}
	return x
}

// TestHistEstimatorsEqualSampleEstimators: every order-statistic estimator
// over a Hist equals the same estimator over the raw samples rounded up to
// the ms: the percentile (exact to the ms), its CI ends, the quantile
// bootstrap (same seed, same draws) and Mann–Whitney U.
func TestHistEstimatorsEqualSampleEstimators(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 5, 50, 400, 5000} {
		a, b := lognormalSample(r, n, 300), lognormalSample(r, n+7, 330)
		ha, hb := HistOf(a), HistOf(b)
		ca, cb := ceiled(a), ceiled(b)
		if ha.N() != n || hb.N() != n+7 {
			t.Fatalf("n=%d: N %d %d", n, ha.N(), hb.N())
		}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			got, want := QuantileSummaryOf(ha, q, 0.95), QuantileSummary(ca, q, 0.95)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("n=%d q=%v: hist %+v, samples %+v", n, q, got, want)
			}
			// Exact to the ms: the hist percentile is the raw one rounded up.
			if got.Center != math.Ceil(QuantileSummary(a, q, 0.95).Center) {
				t.Errorf("n=%d q=%v: hist p %v, raw %v", n, q, got.Center, QuantileSummary(a, q, 0.95).Center)
			}
			bh := BootstrapQuantileDiffOf(Log{ha}, Log{hb}, q, 0.95, 500, 7)
			bs := BootstrapQuantileDiff(logAll(ca), logAll(cb), q, 0.95, 500, 7)
			if !reflect.DeepEqual(bh, bs) {
				t.Errorf("n=%d q=%v: bootstrap hist %+v, samples %+v", n, q, bh, bs)
			}
		}
		// U counts the pairs (a_i, b_j) with a_i > b_j, ties one half.
		var u float64
		for _, x := range ca {
			for _, y := range cb {
				switch {
				case x > y:
					u++
				case x == y:
					u += 0.5
				}
			}
		}
		if got := MannWhitneyUHist(ha, hb); got.U != u || got.N1 != n || !(got.P >= 0 && got.P <= 1) {
			t.Errorf("n=%d: MWU %+v, pairwise U %v", n, got, u)
		}
	}
}

// TestMannWhitneyUHist: the exact p-value of a complete separation, the
// normal approximation's verdicts on a shift and on no shift.
func TestMannWhitneyUHist(t *testing.T) {
	r := MannWhitneyUHist(HistOf([]float64{1, 2, 3}), HistOf([]float64{4, 5, 6}))
	if !r.Exact || r.U != 0 || math.Abs(r.P-0.1) > 1e-12 { // 2/C(6,3)
		t.Errorf("separated: %+v", r)
	}
	g := rand.New(rand.NewPCG(9, 9))
	a, b, c := lognormalSample(g, 2000, 300), lognormalSample(g, 2000, 300), lognormalSample(g, 2000, 360)
	if r := MannWhitneyUHist(HistOf(a), HistOf(b)); r.Exact || r.P < 0.05 {
		t.Errorf("same distribution: %+v", r)
	}
	if r := MannWhitneyUHist(HistOf(a), HistOf(c)); r.P > 1e-6 {
		t.Errorf("20%% slower: %+v", r)
	}
	if r := MannWhitneyUHist(&Hist{}, HistOf(a)); !math.IsNaN(r.P) || len(r.Warnings) == 0 {
		t.Errorf("empty: %+v", r)
	}
}

func logAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Log(v)
	}
	return out
}

// TestHistMergeIsPooling: the Hist of pooled samples is the merge of the
// parts' Hists, whatever the split.
func TestHistMergeIsPooling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := lognormalSample(r, 3000, 1000)
	whole := HistOf(x)
	merged := &Hist{}
	for i := 0; i < len(x); i += 317 {
		merged.Merge(HistOf(x[i:min(i+317, len(x))]))
	}
	if !merged.Equal(whole) {
		t.Fatalf("merged %d/%d buckets, whole %d/%d", merged.N(), merged.Distinct(), whole.N(), whole.Distinct())
	}
	if QuantileSummaryOf(merged, 0.99, 0.95).Center != QuantileSummaryOf(whole, 0.99, 0.95).Center {
		t.Fatal("p99 differs")
	}
}

func TestHistJSON(t *testing.T) {
	for _, tc := range []struct {
		samples []float64
		want    string
	}{
		{nil, `[]`},
		{[]float64{0.5, 2.1, 2.9, 9.4}, `[1,2,-2,7]`},
		{[]float64{-3.5, -3.2, 0, 7, 7, 7}, `[-3,-2,3,7,-3]`},
		{[]float64{12}, `[12]`},
		{[]float64{math.NaN(), math.Inf(1), 4}, `[4]`},
	} {
		h := HistOf(tc.samples)
		b, err := json.Marshal(h)
		if err != nil || string(b) != tc.want {
			t.Errorf("%v: %s %v, want %s", tc.samples, b, err, tc.want)
			continue
		}
		var back Hist
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(h) {
			t.Errorf("%s: round trip %v: %v", b, err, back.counts)
		}
	}
	for _, bad := range []string{`[1,-1]`, `[1,0]`, `[1,-2,-2]`, `{"a":1}`} {
		var h Hist
		if err := json.Unmarshal([]byte(bad), &h); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestHistCountLE(t *testing.T) {
	h := HistOf([]float64{0.2, 1, 1.5, 2, 10})
	for x, want := range map[float64]int{-1: 0, 0: 0, 1: 2, 1.9: 2, 2: 4, 9.99: 4, 10: 5, 1e9: 5} {
		if got := h.CountLE(x); got != want {
			t.Errorf("CountLE(%v) = %d, want %d", x, got, want)
		}
	}
}

// TestSlope: a flat noisy series has an interval containing 0; a leak of
// 1 per unit does not, and its estimate is close to 1.
func TestSlope(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var x, flat, leak []float64
	for i := range 60 {
		x = append(x, float64(i))
		noise := 5 * r.NormFloat64()
		flat = append(flat, 100+noise)
		leak = append(leak, 100+float64(i)+noise)
	}
	if s := Slope(x, flat, 0.95); !(s.Lo < 0 && s.Hi > 0) {
		t.Errorf("flat: %+v", s)
	}
	if s := Slope(x, leak, 0.95); !(s.Lo > 0.5 && s.Hi < 1.5 && s.Lo <= 1 && s.Hi >= 1) {
		t.Errorf("leak: %+v", s)
	}
	if s := Slope(x[:2], leak[:2], 0.95); len(s.Warnings) == 0 || math.IsInf(s.Hi, 1) == false {
		t.Errorf("two points: %+v", s)
	}
}

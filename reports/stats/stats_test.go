package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool {
	if math.IsInf(want, 0) || math.IsNaN(want) {
		return got == want || (math.IsNaN(got) && math.IsNaN(want))
	}
	return math.Abs(got-want) <= tol
}

func seq(a, b int) []float64 {
	var x []float64
	for i := a; i <= b; i++ {
		x = append(x, float64(i))
	}
	return x
}

// logBinomPMF is an independent binomial pmf (log-gamma), used to check the
// incomplete-beta based tails by brute-force summation.
func logBinomPMF(k, n int, p float64) float64 {
	lc, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return lc - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

func bruteCDF(k, n int, p float64) float64 {
	var s float64
	for i := 0; i <= k && i <= n; i++ {
		s += math.Exp(logBinomPMF(i, n, p))
	}
	return s
}

func TestPercentileNearestRank(t *testing.T) {
	// Expected values from the CL2 formula sorted[ceil(n·p/100)−1] by hand.
	tests := []struct {
		name string
		x    []float64
		p    float64
		want float64
	}{
		{"1..10 p50", seq(1, 10), 50, 5},
		{"1..10 p90", seq(1, 10), 90, 9},
		{"1..10 p99", seq(1, 10), 99, 10},
		{"1..10 p0 is min", seq(1, 10), 0, 1},
		{"1..10 p100 is max", seq(1, 10), 100, 10},
		{"1..500 p99 is 495th (CL2 practice)", seq(1, 500), 99, 495},
		{"1..100 p99", seq(1, 100), 99, 99},
		{"1..101 p99", seq(1, 101), 99, 100},
		{"unsorted", []float64{9, 1, 5, 3, 7}, 50, 5},
		{"single", []float64{42}, 99, 42},
		{"even n lower median", []float64{1, 2}, 50, 1},
		{"p99.9 of 1..1000", seq(1, 1000), 99.9, 999},
		{"empty", nil, 50, math.NaN()},
		{"p>100", seq(1, 3), 101, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.x, tt.p); !near(got, tt.want, 0) {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
	// Integer percentiles: rank must equal CL2's integer arithmetic for all n.
	for n := 1; n <= 3000; n++ {
		for _, p := range []int{50, 90, 99} {
			want := (n*p + 99) / 100 // ceil(n·p/100) in integers
			if got := NearestRank(n, float64(p)); got != want {
				t.Fatalf("NearestRank(%d, %d) = %d, want %d", n, p, got, want)
			}
		}
	}
	x := []float64{3, 1, 2}
	Percentile(x, 50)
	if !slices.Equal(x, []float64{3, 1, 2}) {
		t.Errorf("Percentile modified its input: %v", x)
	}
}

func TestPercentileSummary(t *testing.T) {
	got := PercentileSummary(seq(1, 500))
	want := Percentiles{P50: 250, P90: 450, P99: 495, N: 500}
	if got != want {
		t.Errorf("PercentileSummary = %+v, want %+v", got, want)
	}
	if got := PercentileSummary(nil); got != (Percentiles{}) {
		t.Errorf("empty: %+v", got)
	}
	if got := ClampNegative([]float64{-1, 2}); !slices.Equal(got, []float64{0, 2}) {
		t.Errorf("ClampNegative = %v", got)
	}
}

func TestQuantileCIRanks(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		q, c   float64
		lo, hi int
	}{
		// Textbook median CIs (Conover, Practical Nonparametric Statistics,
		// sign-test table): n=10 → X(2)..X(9), n=20 → X(6)..X(15),
		// n=100 → X(40)..X(61); all at 95%.
		{"median n=10", 10, 0.5, 0.95, 2, 9},
		{"median n=20", 20, 0.5, 0.95, 6, 15},
		{"median n=100", 100, 0.5, 0.95, 40, 61},
		// n=6 is benchstat's minimum for a 95% median CI: [min, max].
		{"median n=6", 6, 0.5, 0.95, 1, 6},
		{"median n=5 unbounded both", 5, 0.5, 0.95, 0, 6},
		// p99 at 95%: finite upper bound needs 0.99^n ≤ 0.025, n ≥ 368
		// (ANCHORS.md §3.3).
		{"p99 n=367 unbounded above", 367, 0.99, 0.95, 0, 368},
		{"p99 n=368 max is the bound", 368, 0.99, 0.95, 0, 368},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := QuantileCIRanks(tt.n, tt.q, tt.c)
			// For the p99 cases only the upper rank is pinned; the lower is
			// checked by the brute-force test below.
			if tt.q != 0.99 && lo != tt.lo {
				t.Errorf("lo = %d, want %d", lo, tt.lo)
			}
			if hi != tt.hi {
				t.Errorf("hi = %d, want %d", hi, tt.hi)
			}
		})
	}
}

// TestQuantileCIRanksBruteForce checks the ranks against exact binomial
// tails summed term by term (log-gamma pmf), a different computation from
// the regularized incomplete beta used by the implementation.
func TestQuantileCIRanksBruteForce(t *testing.T) {
	for _, n := range []int{6, 7, 10, 31, 100, 368, 500, 1000} {
		for _, q := range []float64{0.5, 0.9, 0.99} {
			for _, c := range []float64{0.9, 0.95, 0.99} {
				half := (1 - c) / 2
				// cdf[k] = P(B ≤ k), summed term by term; sf[k] = P(B ≥ k)
				// summed from the top (no cancellation in 1 − cdf).
				cdf := make([]float64, n+1)
				sf := make([]float64, n+2)
				acc := 0.0
				for k := 0; k <= n; k++ {
					acc += math.Exp(logBinomPMF(k, n, q))
					cdf[k] = acc
				}
				for k := n; k >= 0; k-- {
					sf[k] = sf[k+1] + math.Exp(logBinomPMF(k, n, q))
				}
				wantLo := 0
				for r := 1; r <= n; r++ {
					if cdf[r-1] <= half+1e-12 {
						wantLo = r
					}
				}
				wantHi := n + 1
				for s := n; s >= 1; s-- {
					if sf[s] <= half+1e-12 {
						wantHi = s
					}
				}
				lo, hi := QuantileCIRanks(n, q, c)
				if lo != wantLo || hi != wantHi {
					t.Errorf("n=%d q=%v c=%v: ranks (%d, %d), brute force (%d, %d)", n, q, c, lo, hi, wantLo, wantHi)
				}
			}
		}
	}
}

func TestMinSamplesForCI(t *testing.T) {
	tests := []struct {
		q, c float64
		want int
	}{
		{0.5, 0.95, 6},      // benchstat: "need >= 6 samples for confidence interval at level 0.95"
		{0.99, 0.95, 368},   // ANCHORS.md §3.3
		{0.999, 0.95, 3688}, // ln(0.025)/ln(0.999) = 3687.1
		{0.9, 0.95, 36},     // ln(0.025)/ln(0.9) = 35.01
	}
	for _, tt := range tests {
		if got := MinSamplesForCI(tt.q, tt.c); got != tt.want {
			t.Errorf("MinSamplesForCI(%v, %v) = %d, want %d", tt.q, tt.c, got, tt.want)
		}
	}
}

func TestQuantileSummary(t *testing.T) {
	s := Summarize(seq(1, 10), 0.95)
	if s.Center != 5 || s.Lo != 2 || s.Hi != 9 || s.N != 10 || len(s.Warnings) != 0 {
		t.Errorf("Summarize(1..10) = %+v", s)
	}
	s = Summarize(seq(1, 5), 0.95)
	if !math.IsInf(s.Lo, -1) || !math.IsInf(s.Hi, 1) || len(s.Warnings) != 1 ||
		s.Warnings[0] != "need >= 6 samples for confidence interval at level 0.95" {
		t.Errorf("Summarize(1..5) = %+v", s)
	}
	s = QuantileSummary(seq(1, 100), 0.99, 0.95)
	if s.Center != 99 || !math.IsInf(s.Hi, 1) || !strings.Contains(strings.Join(s.Warnings, ";"), "need >= 368 samples") {
		t.Errorf("p99 of 100 = %+v", s)
	}
	s = QuantileSummary(seq(1, 500), 0.99, 0.95)
	if s.Center != 495 || math.IsInf(s.Hi, 1) || s.Lo > 495 || s.Hi < 495 || len(s.Warnings) != 0 {
		t.Errorf("p99 of 500 = %+v", s)
	}
	for _, bad := range []Summary{Summarize(nil, 0.95), Summarize([]float64{1, math.NaN()}, 0.95), QuantileSummary(seq(1, 9), 1, 0.95)} {
		if len(bad.Warnings) == 0 || !math.IsNaN(bad.Center) {
			t.Errorf("bad input not flagged: %+v", bad)
		}
	}
}

func TestSummaryJSON(t *testing.T) {
	s := QuantileSummary(seq(1, 100), 0.99, 0.95)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"hi":null`) {
		t.Errorf("unbounded Hi not null: %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Center != s.Center || back.Lo != s.Lo || !math.IsInf(back.Hi, 1) || back.N != s.N {
		t.Errorf("round trip: %+v vs %+v", back, s)
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 200)
	for i := range x {
		x[i] = 100 + 10*r.NormFloat64()
	}
	a := BootstrapMean(x, 0.95, 2000, 7)
	b := BootstrapMean(x, 0.95, 2000, 7)
	if a.Lo != b.Lo || a.Hi != b.Hi || a.Center != b.Center {
		t.Errorf("same seed, different result: %+v %+v", a, b)
	}
	c := BootstrapMean(x, 0.95, 2000, 8)
	if a.Lo == c.Lo && a.Hi == c.Hi {
		t.Errorf("different seeds gave identical intervals: %+v", a)
	}
	if !(a.Lo < a.Center && a.Center < a.Hi) || len(a.Warnings) != 0 {
		t.Errorf("CI does not bracket the mean: %+v", a)
	}
	// The bootstrap CI of a mean approximates mean ± 1.96·s/√n (CLT);
	// s ≈ 10, n = 200: half-width ≈ 1.39. Allow 25%.
	if hw := (a.Hi - a.Lo) / 2; hw < 1.0 || hw > 1.75 {
		t.Errorf("half-width %v far from the CLT value 1.39", hw)
	}

	y := make([]float64, 200)
	for i := range y {
		y[i] = 110 + 10*r.NormFloat64()
	}
	for _, st := range []Statistic{Mean, Median} {
		d := BootstrapDiff(x, y, st, 0.95, 2000, 3)
		d2 := BootstrapDiff(x, y, st, 0.95, 2000, 3)
		if d.Lo != d2.Lo || d.Hi != d2.Hi {
			t.Errorf("BootstrapDiff not deterministic")
		}
		if !(d.Lo > 5 && d.Hi < 15 && d.Lo < d.Center && d.Center < d.Hi) {
			t.Errorf("difference CI %+v should bracket ~10", d)
		}
	}
	if w := BootstrapMean([]float64{1, 2, 3}, 0.95, 100, 1).Warnings; len(w) != 2 {
		t.Errorf("want resample and small-n warnings, got %q", w)
	}
}

func TestClopperPearson(t *testing.T) {
	tests := []struct {
		name           string
		k, n           int
		wantLo, wantHi float64
		tol            float64
	}{
		// R: binom.test(0, 100)$conf.int = [0, 0.03621669]; the upper end
		// is the closed form 1 − 0.025^(1/100).
		{"0/100", 0, 100, 0, 1 - math.Pow(0.025, 0.01), 1e-9},
		// R: binom.test(3, 100)$conf.int ≈ [0.0062, 0.0852] (ECOSYSTEM.md §5).
		{"3/100", 3, 100, 0.0062, 0.0852, 5e-5},
		// 100/100: [0.025^(1/100), 1] by symmetry.
		{"100/100", 100, 100, math.Pow(0.025, 0.01), 1, 1e-9},
		{"no trials", 0, 0, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := ClopperPearson(tt.k, tt.n, 0.95)
			if !near(lo, tt.wantLo, tt.tol) || !near(hi, tt.wantHi, tt.tol) {
				t.Errorf("ClopperPearson(%d, %d) = [%v, %v], want [%v, %v]", tt.k, tt.n, lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
	// Defining property, checked by brute-force pmf sums: at the bounds the
	// tail probabilities are exactly α/2.
	for _, kn := range [][2]int{{1, 10}, {3, 100}, {7, 50}, {2, 3000}} {
		k, n := kn[0], kn[1]
		lo, hi := ClopperPearson(k, n, 0.95)
		if got := 1 - bruteCDF(k-1, n, lo); !near(got, 0.025, 1e-7) {
			t.Errorf("%d/%d: P(B ≥ k | lo) = %v, want 0.025", k, n, got)
		}
		if got := bruteCDF(k, n, hi); !near(got, 0.025, 1e-7) {
			t.Errorf("%d/%d: P(B ≤ k | hi) = %v, want 0.025", k, n, got)
		}
	}
}

func TestZeroFailureBounds(t *testing.T) {
	// ANCHORS.md §3.2 table: n, exact one-sided 95%, Clopper–Pearson two-sided.
	tests := []struct {
		n          int
		exact, cp2 float64
	}{
		{300, 0.0099, 0.0122},
		{3000, 0.000998, 0.00123},
		{30000, 0.0000999, 0.0000123 * 10},
	}
	for _, tt := range tests {
		if got := ZeroFailureUpper(tt.n, 0.95); !near(got, tt.exact, tt.exact*0.01) {
			t.Errorf("ZeroFailureUpper(%d) = %v, want ≈ %v", tt.n, got, tt.exact)
		}
		if _, hi := ClopperPearson(0, tt.n, 0.95); !near(hi, tt.cp2, tt.cp2*0.01) {
			t.Errorf("CP(0, %d) hi = %v, want ≈ %v", tt.n, hi, tt.cp2)
		}
		// One-sided CP at k=0 is the closed form.
		if a, b := ClopperPearsonUpper(0, tt.n, 0.95), 1-math.Pow(0.05, 1/float64(tt.n)); !near(a, b, 1e-12) {
			t.Errorf("ClopperPearsonUpper(0, %d) = %v, closed form %v", tt.n, a, b)
		}
		if got := RuleOfThree(tt.n); got != 3/float64(tt.n) {
			t.Errorf("RuleOfThree(%d) = %v", tt.n, got)
		}
	}
	// One-sided CP for k>0 via the Beta quantile agrees with the pmf sum.
	if u := ClopperPearsonUpper(2, 1000, 0.95); !near(bruteCDF(2, 1000, u), 0.05, 1e-8) {
		t.Errorf("ClopperPearsonUpper(2, 1000) = %v does not solve P(B ≤ 2) = 0.05", u)
	}
}

func TestWilson(t *testing.T) {
	const z = 1.959963984540054 // Φ⁻¹(0.975)
	// k = 0: upper = z²/(n+z²) (closed form).
	if lo, hi := Wilson(0, 100, 0.95); lo != 0 || !near(hi, z*z/(100+z*z), 1e-12) {
		t.Errorf("Wilson(0, 100) = [%v, %v]", lo, hi)
	}
	// ANCHORS.md §3.2: Wilson upper with 0 events: 300 → 1.26%, 3000 → 0.128%.
	if _, hi := Wilson(0, 300, 0.95); !near(hi, 0.0126, 5e-5) {
		t.Errorf("Wilson(0, 300) hi = %v", hi)
	}
	// k > 0: the bounds solve (p̂ − p)² = z²·p(1−p)/n; checked by bisection.
	for _, kn := range [][2]int{{3, 100}, {1, 10}, {50, 100}, {9, 10}} {
		k, n := kn[0], kn[1]
		ph := float64(k) / float64(n)
		f := func(p float64) float64 { return (ph-p)*(ph-p) - z*z*p*(1-p)/float64(n) }
		bisect := func(a, b float64) float64 {
			for range 200 {
				m := (a + b) / 2
				if (f(a) > 0) == (f(m) > 0) {
					a = m
				} else {
					b = m
				}
			}
			return (a + b) / 2
		}
		lo, hi := Wilson(k, n, 0.95)
		if wl, wh := bisect(0, ph), bisect(ph, 1); !near(lo, wl, 1e-9) || !near(hi, wh, 1e-9) {
			t.Errorf("Wilson(%d, %d) = [%v, %v], bisection [%v, %v]", k, n, lo, hi, wl, wh)
		}
	}
	r := Rate(3, 100, 0.95)
	if r.Rate != 0.03 || r.CPHi < r.UpperOneSided || r.WilsonHi <= r.Rate {
		t.Errorf("Rate(3, 100) = %+v", r)
	}
}

func TestTrialsNeeded(t *testing.T) {
	// ANCHORS.md §3.2 (derived: ceil(ln α / ln(1−p))).
	tests := []struct {
		p, c float64
		want int
	}{
		{1e-2, 0.95, 299}, {1e-3, 0.95, 2995}, {1e-4, 0.95, 29956}, {1e-5, 0.95, 299572}, {1e-6, 0.95, 2995731},
		{1e-2, 0.99, 459}, {1e-3, 0.99, 4603}, {1e-4, 0.99, 46050}, {1e-5, 0.99, 460515}, {1e-6, 0.99, 4605168},
	}
	for _, tt := range tests {
		n := TrialsNeeded(tt.p, tt.c)
		if n != tt.want {
			t.Errorf("TrialsNeeded(%v, %v) = %d, want %d", tt.p, tt.c, n, tt.want)
		}
		// Defining property: (1−p)^n ≤ α < (1−p)^(n−1).
		a := 1 - tt.c
		if !(math.Pow(1-tt.p, float64(n)) <= a && math.Pow(1-tt.p, float64(n-1)) > a) {
			t.Errorf("TrialsNeeded(%v, %v) = %d is not minimal", tt.p, tt.c, n)
		}
	}
	if TrialsNeeded(0, 0.95) != -1 {
		t.Error("p=0 should be -1")
	}
}

func TestMoreTrialsNeeded(t *testing.T) {
	tests := []struct {
		name    string
		k, n    int
		p, c    float64
		want    int // -1: only check the defining property
		wantErr bool
	}{
		{"zero so far", 0, 0, 1e-4, 0.95, 29956, false},
		{"10k clean", 0, 10000, 1e-4, 0.95, 19956, false},
		{"already enough", 0, 40000, 1e-4, 0.95, 0, false},
		{"rate above target", 5, 1000, 1e-3, 0.95, 0, true},
		{"1 in 10k vs 1e-3", 1, 10000, 1e-3, 0.95, -1, false},
		{"2 in 1000 vs 1e-2", 2, 1000, 1e-2, 0.95, -1, false},
		{"1 in 1000 vs 1e-3 equal", 1, 1000, 1e-3, 0.95, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			more, err := MoreTrialsNeeded(tt.k, tt.n, tt.p, tt.c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr {
				return
			}
			if tt.want >= 0 && more != tt.want {
				t.Errorf("more = %d, want %d", more, tt.want)
			}
			if tt.k > 0 {
				rate := float64(tt.k) / float64(tt.n)
				N := tt.n + more
				if b := cpUpper(rate*float64(N), float64(N), tt.c); b >= tt.p {
					t.Errorf("bound at N=%d is %v ≥ %v", N, b, tt.p)
				}
				if more > 0 {
					if b := cpUpper(rate*float64(N-1), float64(N-1), tt.c); b < tt.p {
						t.Errorf("N=%d not minimal: bound at N−1 is %v", N, b)
					}
				}
			}
		})
	}
}

func TestKolmogorovQ(t *testing.T) {
	// Classical asymptotic critical values of the Kolmogorov distribution
	// (Smirnov 1948 table; e.g. Massey 1951): 1.2238 (10%), 1.3581 (5%),
	// 1.6276 (1%).
	tests := []struct{ lambda, want float64 }{
		{1.2238, 0.10}, {1.3581, 0.05}, {1.6276, 0.01}, {0.1, 1}, {3, 2 * math.Exp(-18)},
	}
	for _, tt := range tests {
		if got := KolmogorovQ(tt.lambda); !near(got, tt.want, 2e-4) {
			t.Errorf("KolmogorovQ(%v) = %v, want %v", tt.lambda, got, tt.want)
		}
	}
}

func TestKolmogorovSmirnov(t *testing.T) {
	// D cross-checked against a brute-force sup over all observed values.
	bruteD := func(a, b []float64) float64 {
		ecdf := func(x []float64, v float64) float64 {
			c := 0
			for _, w := range x {
				if w <= v {
					c++
				}
			}
			return float64(c) / float64(len(x))
		}
		d := 0.0
		for _, v := range append(slices.Clone(a), b...) {
			d = max(d, math.Abs(ecdf(a, v)-ecdf(b, v)))
		}
		return d
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		a := make([]float64, 5+r.IntN(40))
		b := make([]float64, 5+r.IntN(40))
		for j := range a {
			a[j] = math.Round(r.NormFloat64() * 3) // rounding creates ties
		}
		for j := range b {
			b[j] = math.Round(r.NormFloat64()*3 + float64(i%3))
		}
		got := KolmogorovSmirnov(a, b)
		if want := bruteD(a, b); !near(got.D, want, 1e-12) {
			t.Fatalf("case %d: D = %v, brute force %v", i, got.D, want)
		}
		if !(got.P >= 0 && got.P <= 1) {
			t.Fatalf("p out of range: %+v", got)
		}
	}
	// Disjoint samples: D = 1; n_e = 25·25/50 = 12.5, λ = (√12.5+0.12+0.11/√12.5)·1.
	k := KolmogorovSmirnov(seq(1, 25), seq(26, 50))
	sq := math.Sqrt(12.5)
	if k.D != 1 || !near(k.P, KolmogorovQ(sq+0.12+0.11/sq), 0) || k.P > 1e-9 {
		t.Errorf("disjoint = %+v", k)
	}
	if k := KolmogorovSmirnov(seq(1, 30), seq(1, 30)); k.D != 0 || k.P != 1 {
		t.Errorf("identical = %+v", k)
	}
}

func TestHolm(t *testing.T) {
	// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
	// (by hand: 4·0.005, 3·0.01, 2·0.03, max(0.06, 1·0.04)).
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-15) {
			t.Errorf("Holm = %v, want %v", got, want)
			break
		}
	}
	got = Holm([]float64{0.5, math.NaN(), 0.9})
	if got[0] != 1 || !math.IsNaN(got[1]) || got[2] != 1 {
		t.Errorf("Holm with NaN = %v", got)
	}
}

// TestBootstrapQuantileDiff compares the order-statistic shortcut with the
// resampling bootstrap (BootstrapDiff with Median): the same bootstrap
// distribution, so the interval ends agree up to Monte Carlo error.
func TestBootstrapQuantileDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := make([]float64, 300)
	b := make([]float64, 300)
	for i := range a {
		a[i] = math.Exp(r.NormFloat64())
		b[i] = 1.3 * math.Exp(r.NormFloat64())
	}
	fast := BootstrapQuantileDiff(a, b, 0.5, 0.95, 20000, 1)
	slow := BootstrapDiff(a, b, Median, 0.95, 4000, 1)
	if fast.Center != slow.Center {
		t.Errorf("centers differ: %v vs %v", fast.Center, slow.Center)
	}
	width := slow.Hi - slow.Lo
	if math.Abs(fast.Lo-slow.Lo) > 0.1*width || math.Abs(fast.Hi-slow.Hi) > 0.1*width {
		t.Errorf("fast [%v, %v] vs resampling [%v, %v]", fast.Lo, fast.Hi, slow.Lo, slow.Hi)
	}
	again := BootstrapQuantileDiff(a, b, 0.5, 0.95, 20000, 1)
	if again.Lo != fast.Lo || again.Hi != fast.Hi {
		t.Error("not deterministic")
	}
	// p90 too, against a direct resampling of the p90.
	p90 := func(x []float64) float64 { slices.Sort(x); return PercentileSorted(x, 90) }
	f90 := BootstrapQuantileDiff(a, b, 0.9, 0.95, 20000, 2)
	s90 := BootstrapDiff(a, b, p90, 0.95, 4000, 2)
	w90 := s90.Hi - s90.Lo
	if math.Abs(f90.Lo-s90.Lo) > 0.15*w90 || math.Abs(f90.Hi-s90.Hi) > 0.15*w90 {
		t.Errorf("p90: fast [%v, %v] vs resampling [%v, %v]", f90.Lo, f90.Hi, s90.Lo, s90.Hi)
	}
	if w := BootstrapQuantileDiff(a, b, 1.5, 0.95, 100, 1).Warnings; len(w) == 0 {
		t.Error("bad quantile not flagged")
	}
}

func BenchmarkQuantileSummary150k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 150000)
	for i := range x {
		x[i] = r.ExpFloat64()
	}
	for b.Loop() {
		QuantileSummary(x, 0.99, 0.95)
	}
}

func BenchmarkBootstrapQuantileDiff(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 10000)
	y := make([]float64, 10000)
	for i := range x {
		x[i], y[i] = r.ExpFloat64(), r.ExpFloat64()
	}
	for b.Loop() {
		BootstrapQuantileDiff(x, y, 0.5, 0.95, 10000, 1)
	}
}

// TestTrialsNeededAtRate: counted from zero, the projection agrees with
// MoreTrialsNeeded while the bound is above the target, and says where it
// crossed once below.
func TestTrialsNeededAtRate(t *testing.T) {
	for _, c := range []struct {
		k, n int
		p    float64
	}{{1, 2000, 1e-3}, {3, 50000, 1e-3}, {11, 440400, 1e-4}, {5, 1000, 1e-2}} {
		N := TrialsNeededAtRate(float64(c.k)/float64(c.n), c.p, 0.975)
		more, err := MoreTrialsNeeded(c.k, c.n, c.p, 0.975)
		if err != nil {
			t.Fatal(err)
		}
		if more > 0 && N != c.n+more {
			t.Errorf("k=%d n=%d p=%g: %d at the rate, n+more = %d", c.k, c.n, c.p, N, c.n+more)
		}
		if more == 0 && (N > c.n || N <= 0) {
			t.Errorf("k=%d n=%d p=%g: bound below p at n, but needed %d", c.k, c.n, c.p, N)
		}
	}
	if TrialsNeededAtRate(0, 1e-3, 0.975) != TrialsNeeded(1e-3, 0.975) || TrialsNeededAtRate(2e-3, 1e-3, 0.975) != -1 {
		t.Error("edges")
	}
}

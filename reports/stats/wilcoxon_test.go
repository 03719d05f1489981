package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestWilcoxonSignedRankPublished checks the exact path against the
// example of R's ?wilcox.test (Hollander & Wolfe 1973, p. 29: depression
// scale before (y) and after (x) treatment):
//
//	wilcox.test(x, y, paired = TRUE, alternative = "greater")
//	V = 40, p-value = 0.01953
//
// i.e. 10 of the 512 sign assignments reach V >= 40; two-sided 20/512.
func TestWilcoxonSignedRankPublished(t *testing.T) {
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	r := WilcoxonSignedRank(y, x) // d = x − y
	if r.V != 40 || !r.Exact || !near(r.P, 20.0/512, 1e-15) {
		t.Errorf("H&W example: %+v, want V=40 exact p=%v", r, 20.0/512)
	}
	if r.Up != 7 || r.Down != 2 || r.Equal != 0 || r.Pairs != 9 {
		t.Errorf("sign counts: %+v", r)
	}
	// Sign test on 7 up, 2 down: binom.test(7, 9) p = 2·(1+9+36)/512.
	if !near(r.SignP, 2*46.0/512, 1e-15) {
		t.Errorf("sign p = %v, want %v", r.SignP, 2*46.0/512)
	}
	// Swapping the samples mirrors V (n(n+1)/2 − V) and keeps p.
	if s := WilcoxonSignedRank(x, y); s.V != 5 || s.P != r.P || s.Up != 2 {
		t.Errorf("swapped: %+v", s)
	}
}

func TestWilcoxonSignedRankClosedForms(t *testing.T) {
	// n distinct differences, all positive: only the all-plus assignment
	// reaches V = n(n+1)/2, so p = 2/2^n (exact below 50).
	for _, n := range []int{1, 5, 10, 20, 49} {
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i], b[i] = 100, 100+float64(i+1)
		}
		r := WilcoxonSignedRank(a, b)
		want := min(1, 2/math.Ldexp(1, n))
		if !r.Exact || r.V != float64(n*(n+1)/2) || !near(r.P, want, 1e-12*want) {
			t.Errorf("n=%d all positive: %+v, want p=%v", n, r, want)
		}
		if !near(r.SignP, want, 1e-12*want) {
			t.Errorf("n=%d sign p %v, want %v", n, r.SignP, want)
		}
	}
	// No pair differs: nothing to test.
	if r := WilcoxonSignedRank(seq(1, 10), seq(1, 10)); r.P != 1 || !r.Degenerate || r.Equal != 10 || r.SignP != 1 {
		t.Errorf("identical pairs: %+v", r)
	}
	if r := WilcoxonSignedRank(seq(1, 3), seq(1, 4)); r.Pairs != 0 || !math.IsNaN(r.P) || len(r.Warnings) == 0 {
		t.Errorf("unequal lengths: %+v", r)
	}
}

// TestWilcoxonSignedRankNormal checks the tie- and zero-handling normal
// path against the permutation moments computed from the midranks
// directly: under the null each rank enters V with probability 1/2, so
// E[V] = Σr/2 and Var[V] = Σr²/4 (no closed form for ties needed).
func TestWilcoxonSignedRankNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for c := range 20 {
		n := 30 + rng.IntN(200)
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(50))
			// Rounded shifts: many ties in |d| and some zeros.
			b[i] = a[i] + float64(rng.IntN(9)-4+c%3)
		}
		r := WilcoxonSignedRank(a, b)
		if r.Exact {
			t.Fatalf("case %d: ties must use the normal approximation", c)
		}
		var d []float64
		for i := range a {
			if b[i] != a[i] {
				d = append(d, b[i]-a[i])
			}
		}
		var v, sum, sumSq float64
		for _, x := range d {
			var less, eq float64
			for _, y := range d {
				switch {
				case math.Abs(y) < math.Abs(x):
					less++
				case math.Abs(y) == math.Abs(x):
					eq++
				}
			}
			rank := less + (eq+1)/2
			sum += rank
			sumSq += rank * rank
			if x > 0 {
				v += rank
			}
		}
		dev := v - sum/2
		z := (math.Abs(dev) - 0.5) / math.Sqrt(sumSq/4)
		p := math.Erfc(z / math.Sqrt2)
		if r.V != v || !near(math.Abs(r.Z), z, 1e-9) || !near(r.P, min(1, p), 1e-9) {
			t.Errorf("case %d: V=%v z=%v p=%v, independent V=%v z=%v p=%v", c, r.V, r.Z, r.P, v, z, p)
		}
		if r.Up+r.Down+r.Equal != n || r.Up+r.Down != len(d) {
			t.Errorf("case %d: counts %+v", c, r)
		}
	}
}

// TestSignedRankExactBruteForce enumerates every sign assignment.
func TestSignedRankExactBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		n := 1 + rng.IntN(12)
		perm := rng.Perm(n)
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			mag := float64(perm[i] + 1)
			if rng.IntN(3) == 0 {
				mag = -mag
			}
			a[i], b[i] = 10, 10+mag
		}
		r := WilcoxonSignedRank(a, b)
		var le, ge float64
		for mask := 0; mask < 1<<n; mask++ {
			v := 0
			for k := range n {
				if mask&(1<<k) != 0 {
					v += k + 1
				}
			}
			if float64(v) <= r.V {
				le++
			}
			if float64(v) >= r.V {
				ge++
			}
		}
		total := math.Ldexp(1, n)
		tail := le
		if r.V > float64(n*(n+1))/4 {
			tail = ge
		}
		if want := min(1, 2*tail/total); !r.Exact || !near(r.P, want, 1e-12) {
			t.Errorf("n=%d V=%v: p=%v, enumeration %v", n, r.V, r.P, want)
		}
	}
	if c := signedRankCounts(4); !slices.Equal(c, []float64{1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1}) {
		t.Errorf("signedRankCounts(4) = %v", c)
	}
}

func TestSignTest(t *testing.T) {
	tests := []struct {
		up, down int
		want     float64
	}{
		{2, 8, 2 * 56.0 / 1024}, // binom.test(2, 10): 0.1094
		{0, 67, 2 * math.Ldexp(1, -67)},
		{5, 5, 1},
		{0, 0, 1},
		{1, 0, 1},
	}
	for _, tt := range tests {
		if got := SignTest(tt.up, tt.down); !near(got, tt.want, 1e-12*tt.want) {
			t.Errorf("SignTest(%d, %d) = %v, want %v", tt.up, tt.down, got, tt.want)
		}
	}
}

// TestBootstrapPairedQuantileChange checks the counting shortcut against
// materialising and sorting every resample drawn from the same stream.
func TestBootstrapPairedQuantileChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n := 157
	a := make([]float64, n)
	b := make([]float64, n)
	for i := range a {
		a[i] = math.Round(1000 * math.Exp(rng.NormFloat64()/2))
		b[i] = a[i] * (1 + 0.1*rng.Float64()) // every pod a bit slower
	}
	qs := []float64{0.5, 0.9, 0.99}
	const resamples, seed = 500, 11
	got := BootstrapPairedQuantileChange(a, b, qs, 0.95, resamples, seed)

	r := newRand(seed)
	vals := make([][]float64, len(qs))
	ra, rb := make([]float64, n), make([]float64, n)
	for range resamples {
		for i := range n {
			u := r.IntN(n)
			ra[i], rb[i] = a[u], b[u]
		}
		for j, q := range qs {
			vals[j] = append(vals[j], RelativeChange(Percentile(ra, 100*q), Percentile(rb, 100*q)))
		}
	}
	for j, q := range qs {
		lo, hi := bootstrapBounds(vals[j], 0.95)
		center := RelativeChange(Percentile(a, 100*q), Percentile(b, 100*q))
		if got[j].Lo != lo || got[j].Hi != hi || got[j].Center != center {
			t.Errorf("q=%v: got [%v, %v] center %v, materialised [%v, %v] center %v", q, got[j].Lo, got[j].Hi, got[j].Center, lo, hi, center)
		}
		// Every pod got 0–10% slower: the interval lies in [0, 0.1].
		if !(got[j].Lo >= 0 && got[j].Hi <= 0.1) {
			t.Errorf("q=%v: interval [%v, %v] outside [0, 0.1]", q, got[j].Lo, got[j].Hi)
		}
	}
	again := BootstrapPairedQuantileChange(a, b, qs, 0.95, resamples, seed)
	for j := range qs {
		if again[j].Lo != got[j].Lo || again[j].Hi != got[j].Hi {
			t.Fatal("not deterministic")
		}
	}
	if w := BootstrapPairedQuantileChange(a, b[1:], qs, 0.95, 10, 1)[0].Warnings; len(w) == 0 {
		t.Error("unequal lengths not flagged")
	}
	if w := BootstrapPairedQuantileChange(a, b, []float64{0.9, 0.5}, 0.95, 10, 1)[0].Warnings; len(w) == 0 {
		t.Error("descending quantiles not flagged")
	}
}

// TestBootstrapQuantileChange: the relative change of nearest-rank
// quantiles is exp(difference of the quantiles of the logs) − 1, and both
// shortcuts draw the same order statistics from the same stream.
func TestBootstrapQuantileChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	a := make([]float64, 400)
	b := make([]float64, 300)
	for i := range a {
		a[i] = math.Exp(rng.NormFloat64())
	}
	for i := range b {
		b[i] = 1.2 * math.Exp(rng.NormFloat64())
	}
	la, lb := make([]float64, len(a)), make([]float64, len(b))
	for i := range a {
		la[i] = math.Log(a[i])
	}
	for i := range b {
		lb[i] = math.Log(b[i])
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		c := BootstrapQuantileChange(a, b, q, 0.95, 3000, 4)
		d := BootstrapQuantileDiff(la, lb, q, 0.95, 3000, 4)
		if !near(c.Lo, math.Expm1(d.Lo), 1e-12) || !near(c.Hi, math.Expm1(d.Hi), 1e-12) || !near(c.Center, math.Expm1(d.Center), 1e-12) {
			t.Errorf("q=%v: change %v [%v, %v], exp(log diff)−1 %v [%v, %v]", q, c.Center, c.Lo, c.Hi,
				math.Expm1(d.Center), math.Expm1(d.Lo), math.Expm1(d.Hi))
		}
	}
	for _, tt := range []struct{ qa, qb, want float64 }{{0, 0, 0}, {2, 3, 0.5}, {0, 1, math.Inf(1)}, {4, 2, -0.5}} {
		if got := RelativeChange(tt.qa, tt.qb); got != tt.want {
			t.Errorf("RelativeChange(%v, %v) = %v, want %v", tt.qa, tt.qb, got, tt.want)
		}
	}
}

func BenchmarkBootstrapPairedQuantileChange(b *testing.B) {
	for _, n := range []int{200, 42000} {
		r := rand.New(rand.NewPCG(1, 1))
		x := make([]float64, n)
		y := make([]float64, n)
		for i := range x {
			x[i] = r.ExpFloat64()
			y[i] = x[i] * 1.05
		}
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				BootstrapPairedQuantileChange(x, y, []float64{0.5, 0.9, 0.99}, 0.95, 2000, 1)
			}
		})
	}
}

package behavior

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"250ms", "250ms"},
		{"0", "0s"},
		{"1m30s", "1m30s"},
		{"fixed(1s)", "1s"},
		{"fixed(value=2s)", "2s"},
		{" uniform( 1s ,3s ) ", "uniform(1s, 3s)"},
		{"uniform(min=1s, max=3s)", "uniform(1s, 3s)"},
		{"uniform(max=3s, min=1s)", "uniform(1s, 3s)"},
		{"uniform(2s, 2s)", "uniform(2s, 2s)"},
		{"normal(mean=1s, sd=200ms)", "normal(mean=1s, sd=200ms)"},
		{"normal(1s, 200ms)", "normal(mean=1s, sd=200ms)"},
		{"normal(1s, sd=0s)", "normal(mean=1s, sd=0s)"},
		{"lognormal(median=300ms, p99=2s)", "lognormal(median=300ms, p99=2s)"},
		{"lognormal(p99=2s,median=300ms)", "lognormal(median=300ms, p99=2s)"},
		{"exponential(mean=5s)", "exponential(mean=5s)"},
		{"exponential(5s)", "exponential(mean=5s)"},
		{"never", "never"},
		{"forever", "never"},
	}
	for _, tt := range tests {
		d, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := d.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		back, err := Parse(d.String())
		if err != nil || back != d {
			t.Errorf("%q does not round-trip: %v %v", d.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"lognorm(median=1s, p99=2s)", `bad distribution "lognorm(median=1s, p99=2s)": unknown form "lognorm" (allowed: fixed, uniform, normal, lognormal, exponential, never, or a duration like 250ms)`},
		{"", `bad distribution "": empty (allowed:`},
		{"soon", `unknown form "soon" (allowed:`},
		{"uniform", `uniform needs parameters, e.g. uniform(1s, 3s)`},
		{"250", `"250" is not a duration (e.g. 250ms, 2s, 1m30s)`},
		{"-1s", `unknown form "-1s"`},
		{"uniform(-1s, 1s)", `min: negative duration -1s`},
		{"uniform(3s, 1s)", `uniform max 1s is below min 3s`},
		{"uniform(1s)", `uniform needs max (e.g. uniform(1s, 3s))`},
		{"uniform(1s, 2s, 3s)", `uniform takes 2 parameter(s)`},
		{"uniform(1s, 2s", `missing ')'`},
		{"normal(mean=1s)", `normal needs sd (e.g. normal(mean=1s, sd=200ms))`},
		{"normal(mean=1s, stddev=1s)", `normal has no parameter "stddev" (parameters: mean, sd)`},
		{"normal(mean=1s, mean=2s)", `mean given twice`},
		{"normal(mean=1s, 2s)", `positional parameter after a named one`},
		{"lognormal(median=0s, p99=1s)", `lognormal median must be positive`},
		{"lognormal(median=2s, p99=1s)", `lognormal p99 1s is below the median 2s`},
		{"exponential(mean=0s)", `exponential mean must be positive`},
		{"exponential(mean=)", `mean: missing duration`},
		{"never()", `unknown form "never"`},
		{"fixed(2562047h47m16.854775807s)", `too large (use never)`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v\nwant it to contain %q", tt.in, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "bad distribution ") {
			t.Errorf("Parse(%q) error %q does not quote the input", tt.in, err)
		}
	}
}

func TestTextMarshaling(t *testing.T) {
	type doc struct {
		A Dist `json:"a"`
		B Dist `json:"b"`
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"a":"lognormal(median=300ms, p99=2s)","b":"forever"}`), &d); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(d)
	if got, want := string(out), `{"a":"lognormal(median=300ms, p99=2s)","b":"never"}`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	err := json.Unmarshal([]byte(`{"a":"lognorm(1s)"}`), &d)
	if err == nil || !strings.Contains(err.Error(), `unknown form "lognorm"`) {
		t.Errorf("got %v", err)
	}
}

func TestQuantileAndMean(t *testing.T) {
	tests := []struct {
		dist       string
		p          float64
		want, mean time.Duration
	}{
		{"250ms", 0.9, 250 * time.Millisecond, 250 * time.Millisecond},
		{"uniform(1s, 3s)", 0.25, 1500 * time.Millisecond, 2 * time.Second},
		{"normal(mean=1s, sd=200ms)", 0.5, time.Second, 1000000011}, // truncation adds 11ns
		{"normal(mean=0s, sd=1s)", 0.25, 0, 398942280},              // half-normal: sd*sqrt(2/pi)
		{"lognormal(median=300ms, p99=2s)", 0.5, 300 * time.Millisecond, 418340939},
		{"lognormal(median=300ms, p99=2s)", 0.99, 2 * time.Second, 418340939},
		{"exponential(mean=5s)", 0.5, 3465735903, 5 * time.Second}, // 5s*ln 2
		{"never", 0.5, Never, Never},
	}
	for _, tt := range tests {
		d := MustParse(tt.dist)
		if got := d.Quantile(tt.p); absDiff(got, tt.want) > 2 {
			t.Errorf("%s: Quantile(%v) = %v, want %v", tt.dist, tt.p, got, tt.want)
		}
		if got := d.Mean(); absDiff(got, tt.mean) > 2 {
			t.Errorf("%s: Mean() = %d, want %d", tt.dist, got, tt.mean)
		}
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

// TestSampleStatistics checks the samplers against their definitions over
// 100k draws (tolerances are several standard errors wide, and the seed
// is fixed, so the test is deterministic).
func TestSampleStatistics(t *testing.T) {
	const n = 100_000
	tests := []struct {
		dist string
		// within relTol of the expected median, p99 and mean (0: skip)
		median, p99, mean time.Duration
		relTol            float64
		min, max          time.Duration
	}{
		{dist: "lognormal(median=300ms, p99=2s)", median: 300 * time.Millisecond, p99: 2 * time.Second, relTol: 0.03, max: Never},
		{dist: "exponential(mean=5s)", median: 3465735903, mean: 5 * time.Second, relTol: 0.02, max: Never},
		{dist: "uniform(1s, 3s)", median: 2 * time.Second, mean: 2 * time.Second, relTol: 0.01, min: time.Second, max: 3 * time.Second},
		{dist: "normal(mean=1s, sd=200ms)", median: time.Second, mean: time.Second, relTol: 0.01, max: Never},
		// Heavy truncation: Mean() must describe what Sample produces.
		{dist: "normal(mean=100ms, sd=200ms)", mean: MustParse("normal(mean=100ms, sd=200ms)").Mean(), relTol: 0.02, max: Never},
	}
	for _, tt := range tests {
		d := MustParse(tt.dist)
		r := NewStream(1, "stats", tt.dist)
		xs := make([]time.Duration, n)
		var sum float64
		for i := range xs {
			xs[i] = d.Sample(r)
			sum += float64(xs[i])
			if xs[i] < tt.min || xs[i] > tt.max {
				t.Fatalf("%s: sample %v outside [%v, %v]", tt.dist, xs[i], tt.min, tt.max)
			}
		}
		slices.Sort(xs)
		check := func(what string, got, want time.Duration) {
			if want == 0 {
				return
			}
			if rel := math.Abs(float64(got-want)) / float64(want); rel > tt.relTol {
				t.Errorf("%s: %s = %v, want %v ±%.0f%%", tt.dist, what, got, want, 100*tt.relTol)
			}
		}
		check("median", xs[n/2], tt.median)
		check("p99", xs[n*99/100], tt.p99)
		check("mean", time.Duration(sum/n), tt.mean)
	}
}

// TestSampleConsumesOneDraw: every form reads exactly one uint64, the
// property that keeps Draw's fields independent of each other's forms.
func TestSampleConsumesOneDraw(t *testing.T) {
	for _, s := range []string{"0s", "1s", "uniform(1s, 2s)", "normal(mean=1s, sd=1s)", "lognormal(median=1s, p99=3s)", "exponential(mean=1s)", "never"} {
		a, b := NewStream(9, "x"), NewStream(9, "x")
		MustParse(s).Sample(a)
		b.Uint64()
		if a.Uint64() != b.Uint64() {
			t.Errorf("%s: Sample does not consume exactly one value", s)
		}
	}
}

func TestFixedAndNever(t *testing.T) {
	if d := Fixed(-time.Second); d.String() != "0s" || !d.IsZero() {
		t.Errorf("Fixed(-1s) = %v", d)
	}
	var zero Dist
	if zero != Fixed(0) || zero.String() != "0s" {
		t.Errorf("zero Dist = %v, want fixed 0", zero)
	}
	if !NeverDist().IsNever() || MustParse("forever") != NeverDist() || NeverDist().Sample(NewStream(1)) != Never {
		t.Error("never is not never")
	}
	// Far tails stay finite: a finite distribution never returns Never.
	d := MustParse("lognormal(median=1000h, p99=2000000h)")
	if got := d.Quantile(1 - 1e-16); got == Never || got != maxFinite {
		t.Errorf("far tail = %v", got)
	}
}

// Package behavior is the container behaviour model: how long a container
// takes to start, when its probes first pass, when it exits on its own,
// crashes or runs out of memory, how it handles SIGTERM and how long its
// hooks take. Durations are distributions sampled from seeded RNG streams,
// so a simulated run is reproducible and a real CRI server can play the
// same behaviour.
//
// The package is pure: no clock, no global RNG, no I/O, standard library
// only, and nothing from the simulator, so the sim backend and the CRI
// server share it. The syntax is documented in docs/behavior.md.
package behavior

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Never is the duration of something that never happens: a container that
// runs forever, ignores SIGTERM, or whose liveness never fails.
const Never time.Duration = math.MaxInt64

// maxFinite caps samples of finite distributions, so a far tail never
// collides with Never.
const maxFinite = Never - 1

// z99 is the standard normal 0.99 quantile: lognormal(median, p99) has
// sigma = ln(p99/median) / z99.
const z99 = 2.3263478740408408

type form uint8

const (
	formFixed form = iota // the zero Dist is fixed(0): "immediately"
	formUniform
	formNormal
	formLognormal
	formExponential
	formNever
)

var formNames = [...]string{
	formFixed:       "fixed",
	formUniform:     "uniform",
	formNormal:      "normal",
	formLognormal:   "lognormal",
	formExponential: "exponential",
	formNever:       "never",
}

// params lists each form's parameter names in positional order.
var params = [...][]string{
	formFixed:       {"value"},
	formUniform:     {"min", "max"},
	formNormal:      {"mean", "sd"},
	formLognormal:   {"median", "p99"},
	formExponential: {"mean"},
}

// Dist is a distribution of non-negative durations. It is a small
// comparable value; the zero Dist is fixed(0).
//
// Every Sample consumes exactly one uint64 from the RNG, whatever the form
// (sampling is by inverse CDF). So changing one field's distribution, even
// from fixed to random, does not shift the draws of the fields after it.
type Dist struct {
	form form
	a, b time.Duration // parameters in params order
	// sigma is the derived lognormal shape, cached so Sample does not
	// recompute a logarithm.
	sigma float64
}

// Fixed returns the distribution that is always d (negative d is clamped
// to 0).
func Fixed(d time.Duration) Dist { return Dist{form: formFixed, a: max(d, 0)} }

// NeverDist returns the distribution of something that never happens.
func NeverDist() Dist { return Dist{form: formNever} }

// IsNever reports whether d never happens (Sample returns Never).
func (d Dist) IsNever() bool { return d.form == formNever }

// IsZero reports whether d is always 0.
func (d Dist) IsZero() bool { return d.form == formFixed && d.a == 0 }

// Sample draws one duration, consuming exactly one value from r.
func (d Dist) Sample(r *rand.Rand) time.Duration {
	return d.Quantile(unit(r))
}

// unit draws one uint64 and maps it strictly inside (0,1), so no quantile
// is infinite.
func unit(r *rand.Rand) float64 {
	return (float64(r.Uint64()>>11) + 0.5) / (1 << 53)
}

// Quantile returns the p-quantile (0 < p < 1) of d: the inverse CDF.
func (d Dist) Quantile(p float64) time.Duration {
	switch d.form {
	case formFixed:
		return d.a
	case formNever:
		return Never
	case formUniform:
		return d.a + toDuration(p*float64(d.b-d.a))
	case formNormal:
		return toDuration(float64(d.a) + float64(d.b)*math.Sqrt2*math.Erfinv(2*p-1))
	case formLognormal:
		return toDuration(float64(d.a) * math.Exp(d.sigma*math.Sqrt2*math.Erfinv(2*p-1)))
	case formExponential:
		return toDuration(-float64(d.a) * math.Log1p(-p))
	}
	panic("behavior: corrupt Dist")
}

// toDuration rounds ns to a Duration, truncating at 0 (normal) and
// capping below Never (far tails).
func toDuration(ns float64) time.Duration {
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= float64(maxFinite):
		return maxFinite
	}
	return time.Duration(math.Round(ns))
}

// Mean returns the expected value of d (Never for never). For normal it is
// the mean after truncation at 0, which is what Sample produces.
func (d Dist) Mean() time.Duration {
	switch d.form {
	case formFixed:
		return d.a
	case formNever:
		return Never
	case formUniform:
		return d.a + (d.b-d.a)/2
	case formNormal:
		if d.b == 0 {
			return d.a
		}
		// E[max(0, X)] = mu*Phi(mu/sd) + sd*phi(mu/sd).
		mu, sd := float64(d.a), float64(d.b)
		z := mu / sd
		phi := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		Phi := 0.5 * math.Erfc(-z/math.Sqrt2)
		return toDuration(mu*Phi + sd*phi)
	case formLognormal:
		return toDuration(float64(d.a) * math.Exp(d.sigma*d.sigma/2))
	case formExponential:
		return d.a
	}
	panic("behavior: corrupt Dist")
}

// String returns the canonical form, which Parse reads back to an equal
// Dist: "250ms", "uniform(1s, 3s)", "normal(mean=1s, sd=200ms)",
// "lognormal(median=300ms, p99=2s)", "exponential(mean=5s)", "never".
func (d Dist) String() string {
	switch d.form {
	case formFixed:
		return d.a.String()
	case formNever:
		return "never"
	case formUniform:
		return fmt.Sprintf("uniform(%v, %v)", d.a, d.b)
	case formExponential:
		return fmt.Sprintf("exponential(mean=%v)", d.a)
	}
	p := params[d.form]
	return fmt.Sprintf("%s(%s=%v, %s=%v)", formNames[d.form], p[0], d.a, p[1], d.b)
}

// MarshalText implements encoding.TextMarshaler (the canonical String).
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so scenario YAML and
// JSON can hold distributions as strings.
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

const allowedForms = "allowed: fixed, uniform, normal, lognormal, exponential, never, or a duration like 250ms"

// MustParse is Parse for literals in code and tests; it panics on error.
func MustParse(s string) Dist {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Parse reads a distribution:
//
//	250ms | fixed(1s)                     always that long
//	uniform(1s, 3s)                       uniform on [min, max]
//	normal(mean=1s, sd=200ms)             normal, negative draws become 0
//	lognormal(median=300ms, p99=2s)       lognormal by median and 99th percentile
//	exponential(mean=5s)                  exponential (memoryless)
//	never | forever                       never happens
//
// Parameters are durations, given by name (any order) or by position.
func Parse(s string) (Dist, error) {
	d, err := parse(strings.TrimSpace(s))
	if err != nil {
		return Dist{}, fmt.Errorf("bad distribution %q: %v", s, err)
	}
	return d, nil
}

func parse(s string) (Dist, error) {
	if s == "never" || s == "forever" {
		return NeverDist(), nil
	}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if s == "" {
			return Dist{}, errors.New("empty (" + allowedForms + ")")
		}
		if s[0] < '0' || s[0] > '9' {
			if i := strings.IndexAny(s, " \t"); i >= 0 {
				s = s[:i]
			}
			if isForm(s) {
				return Dist{}, fmt.Errorf("%s needs parameters, e.g. %s", s, example(s))
			}
			return Dist{}, fmt.Errorf("unknown form %q (%s)", s, allowedForms)
		}
		v, err := duration(s)
		if err != nil {
			return Dist{}, err
		}
		return Fixed(v), nil
	}
	name := strings.TrimSpace(s[:open])
	f, ok := formByName(name)
	if !ok || f == formNever {
		return Dist{}, fmt.Errorf("unknown form %q (%s)", name, allowedForms)
	}
	if !strings.HasSuffix(s, ")") {
		return Dist{}, errors.New("missing ')'")
	}
	vals, err := args(f, s[open+1:len(s)-1])
	if err != nil {
		return Dist{}, fmt.Errorf("%v (e.g. %s)", err, example(name))
	}
	return build(f, vals[0], vals[1])
}

// build checks the parameters of form f and derives cached values.
func build(f form, a, b time.Duration) (Dist, error) {
	d := Dist{form: f, a: a, b: b}
	switch f {
	case formUniform:
		if b < a {
			return Dist{}, fmt.Errorf("uniform max %v is below min %v", b, a)
		}
	case formLognormal:
		if a <= 0 {
			return Dist{}, errors.New("lognormal median must be positive")
		}
		if b < a {
			return Dist{}, fmt.Errorf("lognormal p99 %v is below the median %v", b, a)
		}
		d.sigma = math.Log(float64(b)/float64(a)) / z99
	case formExponential:
		if a <= 0 {
			return Dist{}, errors.New("exponential mean must be positive (use 0s for always zero)")
		}
	}
	return d, nil
}

// args parses the comma-separated parameters of form f, positional first
// then named.
func args(f form, s string) ([2]time.Duration, error) {
	var vals [2]time.Duration
	names := params[f]
	var set [2]bool
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		parts = nil
	}
	named := false
	for i, part := range parts {
		part = strings.TrimSpace(part)
		idx := i
		key, val, hasKey := strings.Cut(part, "=")
		if hasKey {
			named = true
			key = strings.TrimSpace(key)
			idx = -1
			for j, n := range names {
				if n == key {
					idx = j
				}
			}
			if idx < 0 {
				return vals, fmt.Errorf("%s has no parameter %q (parameters: %s)", formNames[f], key, strings.Join(names, ", "))
			}
			val = strings.TrimSpace(val)
		} else {
			if named {
				return vals, errors.New("positional parameter after a named one")
			}
			if idx >= len(names) {
				return vals, fmt.Errorf("%s takes %d parameter(s)", formNames[f], len(names))
			}
			val = part
		}
		if set[idx] {
			return vals, fmt.Errorf("%s given twice", names[idx])
		}
		v, err := duration(val)
		if err != nil {
			return vals, fmt.Errorf("%s: %v", names[idx], err)
		}
		vals[idx], set[idx] = v, true
	}
	for i, n := range names {
		if !set[i] {
			return vals, fmt.Errorf("%s needs %s", formNames[f], n)
		}
	}
	return vals, nil
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("missing duration")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 250ms, 2s, 1m30s)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %v", v)
	}
	if v == Never {
		return 0, fmt.Errorf("duration %v is too large (use never)", v)
	}
	return v, nil
}

func formByName(name string) (form, bool) {
	for f, n := range formNames {
		if n == name {
			return form(f), true
		}
	}
	return 0, false
}

func isForm(name string) bool {
	f, ok := formByName(name)
	return ok && f != formNever
}

func example(name string) string {
	switch name {
	case "fixed":
		return "fixed(1s)"
	case "uniform":
		return "uniform(1s, 3s)"
	case "normal":
		return "normal(mean=1s, sd=200ms)"
	case "lognormal":
		return "lognormal(median=300ms, p99=2s)"
	case "exponential":
		return "exponential(mean=5s)"
	}
	return allowedForms
}

// Package graduation turns criteria files (alpha.yaml, beta.yaml, ga.yaml)
// and a run's headline numbers into PASS / FAIL / INSUFFICIENT DATA
// verdicts, with the number of further trials an insufficient criterion
// still needs.
//
// Inputs are plain numbers (violation counts, lifecycle counts, latency
// samples, Job outcomes), so the package depends on reports/stats only and
// not on the checker's or the metrics' internals.
package graduation

import (
	"embed"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

//go:embed alpha.yaml beta.yaml ga.yaml
var files embed.FS

// Stages are the built-in criteria, in graduation order.
var Stages = []string{"alpha", "beta", "ga"}

// Criteria is one criteria file. A nil section disables that criterion.
type Criteria struct {
	Stage       string `json:"stage"`
	Description string `json:"description,omitempty"`
	// Confidence is the level of every bound (e.g. 0.95).
	Confidence      float64        `json:"confidence"`
	ViolationRate   *ViolationRate `json:"violationRate,omitempty"`
	PodStartup      *LatencyLimit  `json:"podStartup,omitempty"`
	SidecarJobs     *JobCompletion `json:"sidecarJobs,omitempty"`
	SidecarOverhead *OverheadLimit `json:"sidecarOverhead,omitempty"`
}

// ViolationRate bounds the rate of hard-invariant violations per pod
// lifecycle: the Clopper–Pearson upper bound at Confidence must be below
// Max. Sided is "two" (the upper end of the two-sided interval, R's
// binom.test; the default) or "one" (one-sided bound, 1 − α^(1/n) with
// zero violations).
type ViolationRate struct {
	Max   float64 `json:"max"`
	Sided string  `json:"sided,omitempty"`
}

// LatencyLimit bounds a pod_startup quantile: the nearest-rank quantile
// must be at most MaxMs, and with UseUpperBound so must the upper end of
// its distribution-free CI at Confidence (for p99 at 95% that needs at
// least 368 samples).
type LatencyLimit struct {
	Quantile      float64 `json:"quantile"`
	MaxMs         float64 `json:"maxMs"`
	UseUpperBound bool    `json:"useUpperBound"`
}

// JobCompletion requires at least MinFraction of Jobs with sidecars to
// complete (phase Succeeded), over at least MinJobs Jobs. With
// UseLowerBound the Clopper–Pearson lower bound of the fraction (the same
// sidedness as ViolationRate.Sided, default two) must reach MinFraction.
type JobCompletion struct {
	MinFraction   float64 `json:"minFraction"`
	MinJobs       int     `json:"minJobs"`
	UseLowerBound bool    `json:"useLowerBound"`
}

// OverheadLimit bounds the sidecar overhead: the ratio of the Quantile of
// Metric for the policy under test to the same quantile for the `none`
// baseline must be at most MaxRatio, each side with at least MinSamples
// samples. With UseUpperBound the upper end of a seeded percentile-bootstrap
// CI of the ratio (Resamples resamples, default 10,000) must be.
type OverheadLimit struct {
	Metric        string  `json:"metric"`
	Quantile      float64 `json:"quantile"`
	MaxRatio      float64 `json:"maxRatio"`
	MinSamples    int     `json:"minSamples"`
	UseUpperBound bool    `json:"useUpperBound"`
	Resamples     int     `json:"resamples,omitempty"`
}

// Parse decodes a criteria file strictly (unknown, duplicate or
// wrongly capitalised fields are errors) and validates it. It decodes as
// the apiserver does (sigs.k8s.io/json): encoding/json matches field
// names case-insensitively, so `maxMS` was taken for `maxMs` and a file
// giving both kept whichever came last.
func Parse(data []byte) (Criteria, error) {
	var c Criteria
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Criteria{}, explainDecodeError(data, err)
	}
	strict, err := kjson.UnmarshalStrict(j, &c)
	if err == nil && len(strict) > 0 {
		err = strict[0]
	}
	if err != nil {
		return Criteria{}, explainDecodeError(data, err)
	}
	if err := c.Validate(); err != nil {
		return Criteria{}, err
	}
	return c, nil
}

// Load returns the built-in criteria of a stage ("alpha", "beta", "ga").
func Load(stage string) (Criteria, error) {
	if !slices.Contains(Stages, stage) {
		return Criteria{}, fmt.Errorf("graduation: unknown stage %q (want one of %v)", stage, Stages)
	}
	data, err := files.ReadFile(stage + ".yaml")
	if err != nil {
		return Criteria{}, err
	}
	c, err := Parse(data)
	if err != nil {
		return Criteria{}, fmt.Errorf("%s.yaml: %w", stage, err)
	}
	return c, nil
}

// Validate checks ranges and fills nothing in.
func (c *Criteria) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("graduation criteria %q: %s = %v, want %s", c.Stage, field, v, want)
	}
	if c.Stage == "" {
		return fmt.Errorf("graduation criteria: stage is required")
	}
	if !(c.Confidence > 0 && c.Confidence < 1) {
		return bad("confidence", c.Confidence, "in (0, 1)")
	}
	if v := c.ViolationRate; v != nil {
		if !(v.Max > 0 && v.Max < 1) {
			return bad("violationRate.max", v.Max, "in (0, 1)")
		}
		if v.Sided != "" && v.Sided != "one" && v.Sided != "two" {
			return bad("violationRate.sided", v.Sided, `"one" or "two"`)
		}
	}
	if l := c.PodStartup; l != nil {
		if !(l.Quantile > 0 && l.Quantile < 1) {
			return bad("podStartup.quantile", l.Quantile, "in (0, 1)")
		}
		if !(l.MaxMs > 0) {
			return bad("podStartup.maxMs", l.MaxMs, "> 0")
		}
	}
	if j := c.SidecarJobs; j != nil {
		if !(j.MinFraction > 0 && j.MinFraction < 1) {
			return bad("sidecarJobs.minFraction", j.MinFraction, "in (0, 1)")
		}
		if j.MinJobs < 0 {
			return bad("sidecarJobs.minJobs", j.MinJobs, ">= 0")
		}
	}
	if o := c.SidecarOverhead; o != nil {
		if o.Metric == "" {
			return bad("sidecarOverhead.metric", `""`, "a metric name")
		}
		if !(o.Quantile > 0 && o.Quantile < 1) {
			return bad("sidecarOverhead.quantile", o.Quantile, "in (0, 1)")
		}
		if !(o.MaxRatio > 0) {
			return bad("sidecarOverhead.maxRatio", o.MaxRatio, "> 0")
		}
		if o.MinSamples < 0 || o.Resamples < 0 {
			return bad("sidecarOverhead.minSamples/resamples", [2]int{o.MinSamples, o.Resamples}, ">= 0")
		}
	}
	return nil
}

// oneSidedLevel converts the criteria confidence to the one-sided level of
// the bound actually compared.
func (c *Criteria) oneSidedLevel() float64 {
	if c.ViolationRate != nil && c.ViolationRate.Sided == "one" {
		return c.Confidence
	}
	return (1 + c.Confidence) / 2
}

// sections maps each section of a criteria file (a struct field of
// Criteria, by its JSON name; "" is the top level) to its type, for the
// fields an unknown-field error lists as allowed. Derived from Criteria,
// so a new section is listed without another table to keep.
var sections = func() map[string]reflect.Type {
	top := reflect.TypeFor[Criteria]()
	out := map[string]reflect.Type{"": top}
	for i := range top.NumField() {
		f := top.Field(i)
		if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = f.Type.Elem()
		}
	}
	return out
}()

var (
	unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)
	scenarioKind = regexp.MustCompile(`(?m)^kind:\s*Scenario\s*$`)
)

// explainDecodeError turns a strict decode error into one a user can act
// on: an unknown field with its line, its section and the fields allowed
// there (the decoder goes through JSON and gives only the field's path,
// e.g. "podStartup.maxMS"), and a scenario given as a criteria file named
// as such.
func explainDecodeError(data []byte, err error) error {
	if scenarioKind.Match(data) {
		return fmt.Errorf("graduation criteria: this is a scenario file, not a criteria file (stage, confidence, violationRate, podStartup, sidecarJobs, sidecarOverhead, as in reports/graduation/beta.yaml); a scenario's own stage is its criteria.graduation")
	}
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("graduation criteria: %w", err)
	}
	section, field, nested := strings.Cut(m[1], ".")
	if !nested {
		section, field = "", m[1]
	}
	typ, known := sections[section]
	if !known || strings.Contains(field, ".") {
		return fmt.Errorf("graduation criteria: %w", err)
	}
	where := "at the top level"
	if section != "" {
		where = "in " + section
	}
	allowed := jsonFields(typ)
	hint := ""
	if i := slices.IndexFunc(allowed, func(a string) bool { return strings.EqualFold(a, field) }); i >= 0 {
		hint = fmt.Sprintf("; did you mean %q? field names are case-sensitive", allowed[i])
	}
	at := ""
	if line := keyLine(data, section, field); line > 0 {
		at = fmt.Sprintf("line %d: ", line)
	}
	return fmt.Errorf("graduation criteria: %sunknown field %q %s (allowed: %s)%s", at, field, where, strings.Join(allowed, ", "), hint)
}

// keyLine is the 1-based line of key in data: the first one after
// section's own key (any line if section is ""), in block or flow style;
// 0 if not found. Comments are skipped.
func keyLine(data []byte, section, key string) int {
	lines := strings.Split(string(data), "\n")
	from := 0
	if section != "" {
		if from = findKey(lines, 0, section); from < 0 {
			return 0
		}
	}
	return findKey(lines, from, key) + 1
}

// findKey is the index of the first line at or after from holding key as
// a mapping key, -1 if none.
func findKey(lines []string, from int, key string) int {
	re := regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(key) + `\s*:`)
	for i := from; i < len(lines); i++ {
		l, _, _ := strings.Cut(lines[i], "#")
		if re.MatchString(l) {
			return i
		}
	}
	return -1
}

// jsonFields are the JSON names of t's fields, in declaration order.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

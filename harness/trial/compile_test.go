package trial_test

import (
	"errors"
	"io/fs"
	"regexp"
	"testing"

	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestValidScenarioCompilesUnderEveryPolicy: what validate accepts, a
// trial can run. Every shipped scenario (large ones too: only compiled)
// under each policy family (the kep753 baselines, every gate, every bug
// replica, every workaround) either is refused by validation, with a
// field error, or compiles for every policy. A workaround policy over a
// sidecar with restartPolicyRules used to pass validation and fail at its
// first trial (exit 3, after the other policies' trials).
func TestValidScenarioCompilesUnderEveryPolicy(t *testing.T) {
	policies := []string{"kep753", "kep753-2019", "none"}
	for _, g := range api.GateNames {
		policies = append(policies, "kep753+"+g)
	}
	for _, b := range api.BugNames() {
		policies = append(policies, "kep753+bug:"+b)
	}
	for _, w := range api.WorkaroundNames() {
		policies = append(policies, "workaround:"+w)
	}
	// The criteria may judge policies the replacement removes.
	policiesBlock := regexp.MustCompile(`(?m)^policies:.*(\n- .*)*`)
	judged := regexp.MustCompile(`(?m)^  policies:.*(\n  - .*)*\n`)
	refused, compiled := 0, 0
	for _, name := range scenario.ShippedNames() {
		data, err := fs.ReadFile(scenario.ShippedFS, name+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range policies {
			text := judged.ReplaceAllString(policiesBlock.ReplaceAllString(string(data), "policies: ["+p+"]"), "")
			s, err := scenario.LoadBytes(name+".yaml", []byte(text))
			if err != nil {
				var list scenario.ErrorList
				if !errors.As(err, &list) {
					t.Errorf("%s under %s: %v (not a field error)", name, p, err)
				}
				refused++
				continue
			}
			for _, tr := range scenario.ExpandRange(s, 0, 1) {
				if _, err := trial.Compile(tr); err != nil {
					t.Errorf("%s under %s: validate accepts it, but the trial does not compile: %v", name, p, err)
				}
			}
			compiled++
		}
	}
	if compiled == 0 || refused == 0 {
		t.Errorf("%d compiled, %d refused: the test exercises nothing", compiled, refused)
	}
	t.Logf("%d scenario × policy pairs compiled, %d refused by validation", compiled, refused)
}

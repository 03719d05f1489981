package scenario

import (
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestWorkaroundPolicyThatCannotRunIsRefused: a workaround policy runs the
// sidecars as regular containers; a sidecar with restartPolicyRules cannot
// run that way (INV-RR2). validate refuses the policy, naming it; it used
// to pass, and `run` ended with exit 3 when the policy's first trial
// started, after the other policies' trials.
func TestWorkaroundPolicyThatCannotRunIsRefused(t *testing.T) {
	data, err := fs.ReadFile(ShippedFS, "rules-restart-all-sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const policies = "policies:\n- kep753+ContainerRestartRules+RestartAllContainersOnContainerExits\n"
	text := strings.Replace(string(data), policies, policies+"- workaround:job-quit-signal\n", 1)
	if text == string(data) {
		t.Fatal("the shipped scenario's policies changed; update the test")
	}
	_, err = LoadBytes("rules.yaml", []byte(text))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("got %v; want one error", err)
	}
	if fe := list[0]; fe.Path != "policies[1]" || fe.Line != 15 || !strings.Contains(fe.Msg, "workaround:job-quit-signal runs the sidecars as regular containers") ||
		!strings.Contains(fe.Msg, "INV-RR2") {
		t.Errorf("error %+v", fe)
	}
	// The same pod without restartPolicyRules runs under the workaround.
	plain := regexp.MustCompile(`(?ms)^        restartPolicyRules:\n(        [ -].*?\n)+`).ReplaceAllString(text, "")
	if plain == text {
		t.Fatal("no restartPolicyRules removed; update the test")
	}
	if _, err := LoadBytes("plain.yaml", []byte(plain)); err != nil {
		t.Errorf("without the rules: %v", err)
	}
}

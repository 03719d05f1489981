package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeHost points the shared host state at a temporary /proc/sys and
// record dir, with the kubelets' settings at a stock host's values.
func fakeHost(t *testing.T) (sys string) {
	t.Helper()
	sys = filepath.Join(t.TempDir(), "sys")
	oldSys, oldDir := procSys, HostStateDir
	procSys, HostStateDir = sys, filepath.Join(t.TempDir(), "run")
	t.Cleanup(func() { procSys, HostStateDir = oldSys, oldDir })
	for k, v := range map[string]string{
		"kernel/panic": "1", "kernel/panic_on_oops": "0", "vm/overcommit_memory": "0",
		"fs/inotify/max_user_instances": "128",
	} {
		setSys(t, k, v)
	}
	return sys
}

func setSys(t *testing.T, k, v string) {
	t.Helper()
	p := filepath.Join(procSys, k)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getSys(t *testing.T, k string) string {
	t.Helper()
	v, err := readSysctl(k)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fakeCluster is a cluster as the host record sees it: a state file.
func fakeCluster(t *testing.T, id string, nodes int) Holder {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := (&State{RunDir: dir, ID: id, HostHeld: true}).save(); err != nil {
		t.Fatal(err)
	}
	start, _ := procStartTicks(os.Getpid())
	return Holder{RunDir: dir, ID: id, Nodes: nodes, OwnerPID: os.Getpid(), OwnerStart: start, Started: time.Unix(0, 0)}
}

var testWants = hostWants{
	Sysctls: []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory"},
	Limits: []hostLimit{{Sysctl: "fs/inotify/max_user_instances", Why: "test",
		Need: func(n int) int64 { return 100 + 10*int64(n) }}},
}

// kubeletStarts does what a kubelet does to the host (setupKernelTunables).
func kubeletStarts(t *testing.T) {
	setSys(t, "kernel/panic", "10")
	setSys(t, "kernel/panic_on_oops", "1")
	setSys(t, "vm/overcommit_memory", "1")
}

// TestSharedHostStateOverlappingClusters is issue 15 item 11's
// reproduction: cluster A starts, cluster B starts (its kubelets see A's
// rewritten settings), A goes first. Before the shared record, A restored
// its own recording under B's running kubelets, and B, going last,
// restored A's kubelet values (panic_on_oops=1 left on the machine).
func TestSharedHostStateOverlappingClusters(t *testing.T) {
	fakeHost(t)
	var log bytes.Buffer
	a, b := fakeCluster(t, "aaaaaa", 20), fakeCluster(t, "bbbbbb", 30)
	missingPath := filepath.Join(t.TempDir(), "var-lib-kubelet")
	presentPath := t.TempDir()
	w := testWants
	w.Paths = []string{missingPath, presentPath}

	if err := acquireHost(a, w, &log); err != nil {
		t.Fatal(err)
	}
	// 128 < 100+10*20: raised for A's 20 kubelets.
	if got := getSys(t, "fs/inotify/max_user_instances"); got != "300" {
		t.Errorf("max_user_instances %s after A, want 300", got)
	}
	kubeletStarts(t)
	for _, p := range []string{missingPath, filepath.Join(presentPath, "device-plugins")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := acquireHost(b, w, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "fs/inotify/max_user_instances"); got != "600" {
		t.Errorf("max_user_instances %s with A and B, want 600 (50 kubelets)", got)
	}
	hs, err := Clusters()
	if err != nil || len(hs) != 2 || hs[0].ID != "aaaaaa" || hs[1].ID != "bbbbbb" {
		t.Fatalf("Clusters() = %+v, %v", hs, err)
	}

	// A goes: nothing is restored under B's kubelets.
	if err := releaseHost(a.RunDir, a.ID, &log); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"kernel/panic": "10", "kernel/panic_on_oops": "1", "vm/overcommit_memory": "1", "fs/inotify/max_user_instances": "600"} {
		if got := getSys(t, k); got != want {
			t.Errorf("after A went, B still running: %s=%s, want %s (left in place)", k, got, want)
		}
	}
	if _, err := os.Stat(missingPath); err != nil {
		t.Errorf("A's teardown removed %s under B: %v", missingPath, err)
	}
	if !strings.Contains(log.String(), "1 other cluster(s) hold it") {
		t.Errorf("log does not say why nothing was restored:\n%s", log.String())
	}

	// B goes last: the values from before A.
	if err := releaseHost(b.RunDir, b.ID, &log); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"kernel/panic": "1", "kernel/panic_on_oops": "0", "vm/overcommit_memory": "0", "fs/inotify/max_user_instances": "128"} {
		if got := getSys(t, k); got != want {
			t.Errorf("after the last cluster: %s=%s, want %s", k, got, want)
		}
	}
	if _, err := os.Stat(missingPath); !os.IsNotExist(err) {
		t.Errorf("%s (created by the kubelets) left: %v", missingPath, err)
	}
	if _, err := os.Stat(presentPath); err != nil {
		t.Errorf("%s existed before and was removed: %v", presentPath, err)
	}
	if _, err := os.Stat(filepath.Join(HostStateDir, hostRecordFile)); !os.IsNotExist(err) {
		t.Errorf("host record left after the last cluster: %v", err)
	}
}

// TestSharedHostStateLimitNotLowered: a limit already above what the
// kubelets need is neither raised nor rewritten.
func TestSharedHostStateLimitNotLowered(t *testing.T) {
	fakeHost(t)
	setSys(t, "fs/inotify/max_user_instances", "8192")
	a := fakeCluster(t, "aaaaaa", 3)
	var log bytes.Buffer
	if err := acquireHost(a, testWants, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "fs/inotify/max_user_instances"); got != "8192" {
		t.Errorf("max_user_instances %s, want 8192 untouched", got)
	}
	if strings.Contains(log.String(), "raised") {
		t.Errorf("log claims a raise: %s", log.String())
	}
	if err := releaseHost(a.RunDir, a.ID, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "fs/inotify/max_user_instances"); got != "8192" {
		t.Errorf("max_user_instances %s after release, want 8192", got)
	}
}

// TestSharedHostStateVanishedHolder: a cluster whose run dir was removed
// without a teardown no longer holds anything: the next cluster's acquire
// restores what it left, then records afresh.
func TestSharedHostStateVanishedHolder(t *testing.T) {
	fakeHost(t)
	var log bytes.Buffer
	a := fakeCluster(t, "aaaaaa", 1)
	if err := acquireHost(a, testWants, &log); err != nil {
		t.Fatal(err)
	}
	kubeletStarts(t)
	if err := os.RemoveAll(a.RunDir); err != nil {
		t.Fatal(err)
	}
	b := fakeCluster(t, "bbbbbb", 1)
	if err := acquireHost(b, testWants, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "kernel/panic_on_oops"); got != "0" {
		t.Errorf("panic_on_oops %s after the vanished cluster was pruned, want 0 restored", got)
	}
	hs, _ := Clusters()
	if len(hs) != 1 || hs[0].ID != "bbbbbb" {
		t.Errorf("holders %+v, want only bbbbbb", hs)
	}
	if !strings.Contains(log.String(), "forgetting cluster aaaaaa") {
		t.Errorf("log: %s", log.String())
	}
	// A cluster whose state file is there but whose processes died still
	// holds the state: only its teardown releases it.
	kubeletStarts(t)
	c := fakeCluster(t, "cccccc", 1)
	if err := acquireHost(c, testWants, &log); err != nil {
		t.Fatal(err)
	}
	if err := releaseHost(c.RunDir, c.ID, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "kernel/panic_on_oops"); got != "1" {
		t.Errorf("panic_on_oops %s restored while bbbbbb holds the state", got)
	}
	if err := releaseHost(b.RunDir, b.ID, &log); err != nil {
		t.Fatal(err)
	}
	if got := getSys(t, "kernel/panic_on_oops"); got != "0" {
		t.Errorf("panic_on_oops %s after the last release, want 0", got)
	}
}

// TestHostLimitsFor80: the limits this package raises for 80 kubelets,
// from the per-kubelet costs; a stock host's inotify instances (128) are
// what stopped 40 kubelets (issue 21).
func TestHostLimitsFor80(t *testing.T) {
	for _, l := range hostLimits {
		need := l.Need(80)
		switch l.Sysctl {
		case "fs/inotify/max_user_instances":
			if need <= 128 {
				t.Errorf("%s: need %d for 80 kubelets, not above the stock 128", l.Sysctl, need)
			}
		}
		if l.Need(1) >= need || l.Why == "" {
			t.Errorf("%s: need(1)=%d need(80)=%d why %q", l.Sysctl, l.Need(1), need, l.Why)
		}
		t.Logf("%s: %s for 80 kubelets", l.Sysctl, strconv.FormatInt(need, 10))
	}
}

// TestReapOrphans: a cluster whose owner is gone and that was not started
// to be kept (a SIGKILLed run) is torn down by the next cluster's start;
// a kept one, one whose owner runs, and one whose state was removed by
// hand are left alone. Before, such a cluster stayed (mounts, cgroups,
// the hold on the shared host state) until someone ran `cluster down`.
func TestReapOrphans(t *testing.T) {
	fakeHost(t)
	self := os.Getpid()
	ticks, err := procStartTicks(self)
	if err != nil {
		t.Fatal(err)
	}
	gone := ticks + 1 // this PID with another start time: a process that is gone
	clusters := []struct {
		name       string
		ownerStart uint64
		keep       bool
		noState    bool
		wantReaped bool
	}{
		{"orphan", gone, false, false, true},
		{"kept", gone, true, false, false},
		{"running", ticks, false, false, false},
		{"removed-by-hand", gone, false, true, false},
	}
	root := t.TempDir()
	dirs := map[string]string{}
	for _, c := range clusters {
		dir := filepath.Join(root, c.name)
		dirs[c.name] = dir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if !c.noState {
			s := &State{RunDir: dir, ID: c.name, RemoveRunDir: true, HostHeld: true}
			if err := s.save(); err != nil {
				t.Fatal(err)
			}
		}
		h := Holder{RunDir: dir, ID: c.name, Nodes: 1, OwnerPID: self, OwnerStart: c.ownerStart, Keep: c.keep, Started: time.Unix(0, 0)}
		if err := withHostLock(func(r *hostRecord) error { r.Holders = append(r.Holders, h); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	reaped, err := ReapOrphans(&log)
	if err != nil {
		t.Fatalf("ReapOrphans: %v\n%s", err, log.String())
	}
	if len(reaped) != 1 || reaped[0] != dirs["orphan"] {
		t.Errorf("reaped %v, want only %s", reaped, dirs["orphan"])
	}
	if !strings.Contains(log.String(), "tearing down "+dirs["orphan"]+": a local cluster left by a process that is gone (pid "+strconv.Itoa(self)) {
		t.Errorf("log does not say what it tears down and why:\n%s", log.String())
	}
	hs, err := Clusters()
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, h := range hs {
		left[h.ID] = true
	}
	for _, c := range clusters {
		_, statErr := os.Stat(dirs[c.name])
		if c.wantReaped && (left[c.name] || !os.IsNotExist(statErr)) {
			t.Errorf("%s: still registered (%v) or its run dir still there (%v)", c.name, left[c.name], statErr)
		}
		if !c.wantReaped && c.name != "removed-by-hand" && (!left[c.name] || statErr != nil) {
			t.Errorf("%s: torn down (registered %v, run dir %v), want it left alone", c.name, left[c.name], statErr)
		}
	}
}

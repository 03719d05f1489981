package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/sidebench/sidebench/harness/behavior"
)

// TestMain lets the test binary act as the agent in a subprocess, for the
// signal tests.
func TestMain(m *testing.M) {
	if os.Getenv("SIDEBENCH_AGENT_TEST_MAIN") == "1" {
		os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func baseEnv(t *testing.T, beh string) map[string]string {
	dir := t.TempDir()
	return map[string]string{
		envBehavior:  beh,
		envSeed:      "42",
		envPod:       "web-0",
		envNamespace: "ns1",
		envPodUID:    "uid-1",
		envContainer: "proxy",
		envLog:       filepath.Join(dir, "log.jsonl"),
		envDir:       filepath.Join(dir, "probe"),
	}
}

func readLog(t *testing.T, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func events(ls []Line) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Event)
	}
	return strings.Join(s, " ")
}

func find(t *testing.T, ls []Line, ev string) Line {
	t.Helper()
	for _, l := range ls {
		if l.Event == ev {
			return l
		}
	}
	t.Fatalf("no %q in %s", ev, events(ls))
	return Line{}
}

func TestLoadConfig(t *testing.T) {
	e := baseEnv(t, `{"startupAfter":"2s","runTime":"uniform(1s, 3s)","exitCode":4}`)
	e[envAttempt] = "3"
	c, err := loadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	want := behavior.Default()
	want.StartupAfter = behavior.MustParse("2s")
	want.RunTime = behavior.MustParse("uniform(1s, 3s)")
	want.ExitCode = 4
	if !reflect.DeepEqual(c.Behavior, want) {
		t.Errorf("behaviour = %+v, want defaults with the given fields: %+v", c.Behavior, want)
	}
	if c.Seed != 42 || c.Attempt != 3 || !c.AttemptSet || c.podKey() != "ns1/web-0" {
		t.Errorf("config = %+v", c)
	}
	// The plan is the one the sim and the CRI server draw for the same keys.
	if got, want := c.plan(), want.Draw(behavior.ContainerKey(42, "ns1/web-0", "proxy", 3).Rand()); got != want {
		t.Errorf("plan = %v, want %v", got, want)
	}

	_, err = loadConfig(env(map[string]string{envBehavior: `{"runTme":"1s"}`, envSeed: "x"}))
	for _, s := range []string{"SIDEBENCH_POD", "SIDEBENCH_CONTAINER", "SIDEBENCH_SEED", `unknown field "runTme"`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v does not mention %s", err, s)
		}
	}
	_, err = loadConfig(env(map[string]string{envPod: "p", envContainer: "c", envBehavior: `{"memoryGrowth":1}`}))
	if err == nil || !strings.Contains(err.Error(), "memoryLimit") {
		t.Errorf("invalid behaviour accepted: %v", err)
	}
}

func TestSteps(t *testing.T) {
	ms := time.Millisecond
	p := behavior.Plan{StartLatency: 10 * ms, StartupAfter: 50 * ms, ReadyAfter: 20 * ms,
		LivenessFailAfter: behavior.Never, Exit: behavior.ExitRunTime, ExitAfter: 20 * ms, TermHandling: ms}
	got := steps(p, false)
	want := []step{{10 * ms, evStart}, {30 * ms, evReady}, {30 * ms, evExit}, {60 * ms, evStarted}}
	if len(got) != len(want) {
		t.Fatalf("steps = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("steps = %v, want %v", got, want)
			break
		}
	}
	// An OOM with memory growth is left to the kernel.
	p.Exit, p.ExitAfter = behavior.ExitOOM, 5*ms
	for _, s := range steps(p, true) {
		if s.ev == evExit {
			t.Errorf("OOM exit scheduled as a step: %v", steps(p, true))
		}
	}
	// Never never overflows into the past.
	p.StartupAfter = behavior.Never
	for _, s := range steps(p, true) {
		if s.ev == evStarted {
			t.Errorf("never startup scheduled: %v", s)
		}
	}
}

// runStepped runs the agent on a fake clock, stepping it 1ms at a time
// whenever the agent waits for its next step: each step is logged at its
// planned instant, however slow the machine.
func runStepped(t *testing.T, a *agent, clk *testingclock.FakeClock) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- a.run(nil, nil) }()
	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a measurement
	for {
		select {
		case code := <-done:
			return code
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("agent did not finish its plan")
		}
		if clk.HasWaiters() {
			clk.Step(time.Millisecond)
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func TestRunTimeline(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"20ms","startupAfter":"30ms","readyAfter":"50ms","runTime":"100ms","exitCode":3,"livenessFailAfter":"60ms"}`)
	c, err := loadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	l, err := openLog(&c, func() int64 { return clk.Now().UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{c: &c, plan: c.plan(), log: l, memTick: time.Millisecond, clk: clk}
	if code := runStepped(t, a, clk); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	l.close()
	ls := readLog(t, e[envLog])
	if got, want := events(ls), "exec start started ready unhealthy exit"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	exec := find(t, ls, evExec).T
	for ev, at := range map[string]time.Duration{evStart: 20, evStarted: 50, evReady: 70, evUnhealthy: 80, evExit: 120} {
		if d := time.Duration(find(t, ls, ev).T - exec); d != at*time.Millisecond {
			t.Errorf("%s at +%v, want +%vms", ev, d, int64(at))
		}
	}
	x := find(t, ls, evExit)
	if x.Code == nil || *x.Code != 3 || x.Detail != "run-time" || x.Pod != "ns1/web-0" || x.UID != "uid-1" || x.Container != "proxy" {
		t.Errorf("exit line %+v", x)
	}
	pe := func(probeKind string) int {
		return realMain([]string{"probe", probeKind}, env(e), &bytes.Buffer{}, &bytes.Buffer{})
	}
	if pe("startup") != 0 || pe("ready") != 0 || pe("live") != 1 {
		t.Errorf("probes after the run: startup=%d ready=%d live=%d, want 0 0 1", pe("startup"), pe("ready"), pe("live"))
	}
	touch(filepath.Join(e[envDir], forceFailPrefix+"ready"))
	if pe("ready") != 1 {
		t.Errorf("forced readiness failure not honoured")
	}
	if pe("bogus") != exitUsage {
		t.Errorf("unknown probe accepted")
	}
}

func TestAttemptFromLog(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"0s","runTime":"0s","exitCode":1}`)
	for i := 0; i < 3; i++ {
		if code := realMain(nil, env(e), &bytes.Buffer{}, &bytes.Buffer{}); code != 1 {
			t.Fatalf("attempt %d exited %d", i, code)
		}
	}
	var atts []uint32
	for _, l := range readLog(t, e[envLog]) {
		if l.Event == evExec {
			atts = append(atts, l.Attempt)
		}
	}
	if len(atts) != 3 || atts[0] != 0 || atts[1] != 1 || atts[2] != 2 {
		t.Errorf("attempts %v, want [0 1 2]", atts)
	}
	var out bytes.Buffer
	want, _ := os.ReadFile(e[envLog])
	if code := realMain([]string{"cat"}, env(e), &out, &bytes.Buffer{}); code != 0 || !bytes.Equal(out.Bytes(), want) {
		t.Errorf("cat: code %d, %d bytes, want the log's %d", code, out.Len(), len(want))
	}
}

func TestMemoryGrowthWithoutLimit(t *testing.T) {
	// 200 MB/s against an unenforced 4 MB limit: the agent grows to 8 MB,
	// then reports that no OOM killer came and exits 137 itself.
	e := baseEnv(t, `{"startLatency":"0s","memoryGrowth":200000000,"memoryLimit":4000000}`)
	c, err := loadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := openLog(&c, nowNS)
	a := &agent{c: &c, plan: c.plan(), log: l, memTick: time.Millisecond}
	if code := a.run(nil, nil); code != 137 {
		t.Fatalf("exit %d, want 137", code)
	}
	if a.hog.size < 8000000 {
		t.Errorf("grew %d bytes, want ≥ 8000000", a.hog.size)
	}
	// started and ready (both at +0) may race the first memory tick.
	if got := events(readLog(t, e[envLog])); !strings.HasPrefix(got, "exec start") || !strings.HasSuffix(got, "oom-not-enforced exit") {
		t.Errorf("events %q", got)
	}
}

func TestHook(t *testing.T) {
	e := baseEnv(t, `{"postStart":"40ms","preStop":"0s"}`)
	c, _ := loadConfig(env(e))
	_ = os.MkdirAll(c.Dir, 0o755)
	if err := writeState(&c, state{Attempt: 5}); err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	hookDone := make(chan int, 1)
	go func() { hookDone <- hook("poststart", env(e), &bytes.Buffer{}, clk) }()
	for deadline := time.Now().Add(30 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("postStart hook never started waiting")
		}
	}
	clk.Step(39 * time.Millisecond)
	select {
	case code := <-hookDone:
		t.Fatalf("postStart hook returned (%d) before its 40ms", code)
	default:
	}
	clk.Step(time.Millisecond)
	if code := <-hookDone; code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	if code := realMain([]string{"hook", "prestop"}, env(e), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	ls := readLog(t, e[envLog])
	if got := events(ls); got != "poststart-begin poststart-end prestop-begin prestop-end" {
		t.Errorf("events %q", got)
	}
	if ls[0].Attempt != 5 {
		t.Errorf("hook attempt %d, want 5 from the state file", ls[0].Attempt)
	}
	if d := ls[1].T - ls[0].T; d != int64(40*time.Millisecond) {
		t.Errorf("hook logged %v, want 40ms", time.Duration(d))
	}
}

// startAgent runs the test binary as the agent and waits for its ready
// line (the last of its start-up lines in these tests).
func startAgent(t *testing.T, e map[string]string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SIDEBENCH_AGENT_TEST_MAIN=1")
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !logHas(e[envLog], `"event":"ready"`, 30*time.Second) {
		_ = cmd.Process.Kill()
		t.Fatal("agent did not start")
	}
	return cmd
}

// logHas waits until the log contains s; within is a hang guard (the
// agents of these tests write their lines in a few milliseconds).
func logHas(path, s string, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(2 * time.Millisecond) {
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(s)) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func waitLog(t *testing.T, path, s string) {
	t.Helper()
	if !logHas(path, s, 30*time.Second) {
		t.Fatalf("no %s in %s", s, path)
	}
}

// waitOpen waits until process pid has file path open: a witness opens a
// peer's lock file before it blocks on the lock.
func waitOpen(t *testing.T, pid int, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == path {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never opened %s", pid, path)
		}
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func TestSigterm(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"0s","termHandling":"80ms","termExitCode":7}`)
	cmd := startAgent(t, e)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 7 {
		t.Errorf("exit %d, want termExitCode 7", code)
	}
	if d := time.Since(sent); d < 80*time.Millisecond {
		t.Errorf("exited %v after SIGTERM, want ≥ 80ms (termHandling)", d)
	}
	ls := readLog(t, e[envLog])
	if got := events(ls); got != "exec start started ready sigterm exit" {
		t.Errorf("events %q", got)
	}
	if d := find(t, ls, evExit).T - find(t, ls, evSigterm).T; d < int64(80*time.Millisecond) {
		t.Errorf("sigterm→exit %v in the log, want ≥ 80ms", time.Duration(d))
	}
}

func TestSigtermIgnored(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"0s","termHandling":"never"}`)
	cmd := startAgent(t, e)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	// The agent logs that it ignores the signal; it must still run after
	// that (order, not time: the log line comes after the signal was
	// handled).
	waitLog(t, e[envLog], `"event":"sigterm-ignored"`)
	done := make(chan int, 1)
	go func() { done <- exitCode(t, cmd) }()
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("agent gone after ignoring SIGTERM: %v", err)
	}
	select {
	case code := <-done:
		t.Fatalf("agent exited %d on SIGTERM with termHandling never", code)
	default:
	}
	_ = cmd.Process.Kill() // what the kubelet does at the end of the grace period
	<-done
	if got := events(readLog(t, e[envLog])); got != "exec start started ready sigterm sigterm-ignored" {
		t.Errorf("events %q", got)
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain([]string{"frobnicate"}, env(nil), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "allowed: run, probe, hook, plan, cat") {
		t.Errorf("code %d, stderr %q", code, errb.String())
	}
	if code := realMain(nil, env(nil), &out, &errb); code != exitConfig {
		t.Errorf("run without config: code %d, want %d", code, exitConfig)
	}
	e := baseEnv(t, `{"runTime":"1s"}`)
	out.Reset()
	if code := realMain([]string{"plan"}, env(e), &out, &errb); code != 0 || !strings.Contains(out.String(), "pod=ns1/web-0 container=proxy attempt=0 seed=42") {
		t.Errorf("plan: code %d, out %q", code, out.String())
	}
}

// TestProbeLogsChanges: the probe command logs a line only when its
// result differs from the last one logged for the container instance,
// with the attempt from the main process's state file.
func TestProbeLogsChanges(t *testing.T) {
	e := baseEnv(t, `{}`)
	c, _ := loadConfig(env(e))
	_ = os.MkdirAll(c.Dir, 0o755)
	steps := []struct {
		probe string
		touch string // file created before the call ("" none)
		rm    string // file removed before the call
		code  int
		want  string // detail of the new line, "" for none
	}{
		{"startup", "", "", 1, ""}, // failing as assumed: nothing
		{"ready", "", "", 1, ""},
		{"live", "", "", 0, ""}, // passing as assumed
		{"startup", fileStarted, "", 0, "startup success"},
		{"startup", "", "", 0, ""},
		{"ready", fileReady, "", 0, "ready success"},
		{"ready", forceFailPrefix + "ready", "", 1, "ready failure forced"},
		{"ready", "", forceFailPrefix + "ready", 0, "ready success"},
		{"live", fileUnhealthy, "", 1, "live failure"},
		{"live", "", "", 1, ""},
		{"live", forceFailPrefix + "live", "", 1, "live failure forced"}, // a forced failure is its own result
		{"live", "", forceFailPrefix + "live", 1, "live failure"},
		{"startup", forceFailPrefix + "startup", "", 1, "startup failure forced"},
		{"startup", "", forceFailPrefix + "startup", 0, "startup success"},
	}
	// Before the main process wrote its state, nothing is logged (and
	// nothing remembered).
	touch(c.path(fileStarted))
	if code := realMain([]string{"probe", "startup"}, env(e), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("probe exit %d", code)
	}
	if _, err := os.Stat(e[envLog]); err == nil {
		t.Fatal("probe logged before the main process's state existed")
	}
	_ = os.Remove(c.path(fileStarted))
	if err := writeState(&c, state{Attempt: 3}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, s := range steps {
		if s.touch != "" {
			touch(c.path(s.touch))
		}
		if s.rm != "" {
			_ = os.Remove(c.path(s.rm))
		}
		if code := realMain([]string{"probe", s.probe}, env(e), &bytes.Buffer{}, &bytes.Buffer{}); code != s.code {
			t.Fatalf("step %d: probe %s exit %d, want %d", i, s.probe, code, s.code)
		}
		if s.want != "" {
			want = append(want, s.want)
		}
	}
	var got []string
	for _, l := range readLog(t, e[envLog]) {
		if l.Event != evProbe || l.Attempt != 3 {
			t.Errorf("line %+v, want event probe attempt 3", l)
		}
		got = append(got, l.Detail)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("probe lines %q, want %q", got, want)
	}
}

// TestOOMTrigger: `sidebench-agent oom` makes the main process grow its
// memory; with no memory limit to stop it (as here), the agent gives up at
// twice the configured limit and says so.
func TestOOMTrigger(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"0s","runTime":"never","memoryGrowth":1,"memoryLimit":33554432}`)
	cmd := startAgent(t, e)
	if code := realMain([]string{"oom"}, env(e), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		_ = cmd.Process.Kill()
		t.Fatalf("oom exit %d", code)
	}
	if code := exitCode(t, cmd); code != int(behavior.OOMExitCode) {
		t.Errorf("exit %d, want %d", code, behavior.OOMExitCode)
	}
	if got := events(readLog(t, e[envLog])); got != "exec start started ready oom-trigger oom-not-enforced exit" {
		t.Errorf("events %q", got)
	}
	// Without a main process's state, the trigger fails clearly.
	var errb bytes.Buffer
	if code := realMain([]string{"oom"}, env(baseEnv(t, `{}`)), &bytes.Buffer{}, &errb); code != 1 || !strings.Contains(errb.String(), "no main process state") {
		t.Errorf("oom without state: code %d, stderr %q", code, errb.String())
	}
}

// TestWitnessPeerExit: when an agent is SIGKILLed (it cannot log its own
// exit), another agent of the pod logs peer-exit within milliseconds; an
// agent started after that death does not report it again.
func TestWitnessPeerExit(t *testing.T) {
	e := baseEnv(t, `{"startLatency":"0s","runTime":"never"}`)
	victim := startAgent(t, e)
	w := map[string]string{}
	for k, v := range e {
		w[k] = v
	}
	w[envContainer] = "app"
	w[envDir] = filepath.Join(filepath.Dir(e[envLog]), "probe-app")
	witness := startAgent(t, w)
	defer func() { _ = witness.Process.Kill(); _ = witness.Wait() }()
	locks := filepath.Join(filepath.Dir(e[envLog]), "locks")
	waitOpen(t, witness.Process.Pid, filepath.Join(locks, lockName("proxy", 0)))
	killed := time.Now().UnixNano()
	_ = victim.Process.Kill()
	_ = victim.Wait()
	var pe Line
	deadline := time.Now().Add(5 * time.Second)
	for pe.T == 0 && time.Now().Before(deadline) {
		for _, l := range readLog(t, e[envLog]) {
			if l.Event == evPeerExit {
				pe = l
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pe.T == 0 {
		t.Fatal("no peer-exit line after SIGKILL")
	}
	if pe.Container != "app" || pe.Detail != "proxy 0" {
		t.Errorf("peer-exit %+v, want from app about \"proxy 0\"", pe)
	}
	if pe.T < killed {
		t.Errorf("peer-exit logged %v before the kill", time.Duration(killed-pe.T))
	}
	// A later agent skips the dead lock.
	l3 := map[string]string{}
	for k, v := range e {
		l3[k] = v
	}
	l3[envContainer] = "worker"
	l3[envDir] = filepath.Join(filepath.Dir(e[envLog]), "probe-worker")
	late := startAgent(t, l3)
	// Proof that the late agent's witness scanned the lock dir after
	// proxy's death: it opens the lock of an agent started after it (the
	// same scan lists proxy's dead lock, which it must skip).
	l4 := map[string]string{}
	for k, v := range e {
		l4[k] = v
	}
	l4[envContainer] = "sidecar2"
	l4[envDir] = filepath.Join(filepath.Dir(e[envLog]), "probe-sidecar2")
	fourth := startAgent(t, l4)
	defer func() { _ = fourth.Process.Kill(); _ = fourth.Wait() }()
	waitOpen(t, late.Process.Pid, filepath.Join(locks, lockName("sidecar2", 0)))
	_ = late.Process.Kill()
	_ = late.Wait()
	n := 0
	for _, l := range readLog(t, e[envLog]) {
		if l.Event == evPeerExit && l.Detail == "proxy 0" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d peer-exit lines for proxy 0, want 1", n)
	}
}

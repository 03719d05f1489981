package history

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the output (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

// sampleRun is a small but complete two-run history: one pod with an init
// container, a sidecar and a main container going through start-up, a
// kubelet crash fault, deletion and removal; a second pod on another node
// cut short by the end of the run; a cluster-wide fault; and a second,
// crashed run (no run.end). Together the events use every kind and every
// field, which TestSampleCoversEverything checks.
func sampleRun() []Event {
	spec := &PodSpec{
		Init: []ContainerSpec{
			{Name: "setup", Role: "init", Image: "busybox:1.36"},
			{Name: "proxy", Role: "sidecar", Image: "envoy:v1.30", Startup: true, Readiness: true, Liveness: true, PostStart: true, PreStop: true,
				CPURequest: 100, MemRequest: 64 << 20, MemLimit: 128 << 20,
				StartupSpec:  &ProbeSpec{Period: sec, Success: 1, Failure: 30},
				LivenessSpec: &ProbeSpec{InitialDelay: 5 * sec, Period: 10 * sec, Success: 1, Failure: 3, Grace: 5 * sec}},
		},
		Main: []ContainerSpec{{Name: "app", Role: "main", Image: "app:1", Readiness: true,
			CPURequest: 500, CPULimit: 1000, MemRequest: 256 << 20, MemLimit: 256 << 20, CPUResizeRestart: true, MemResizeRestart: true,
			ReadinessSpec: &ProbeSpec{Period: 2 * sec, Success: 2, Failure: 1}}},
		RestartPolicy: "Always",
		Grace:         30 * sec,
		Critical:      true,
		QOSClass:      "Burstable",
		OverheadCPU:   10,
		OverheadMem:   16 << 20,
		Labels:        map[string]string{"app": "web", "tier": "front"},
		Workload:      "web",
	}
	const p1, p2, n1, n2 = "default/web-0", "default/web-1", "node-1", "node-2"
	return []Event{
		{T: 0, Kind: RunMeta, Meta: &Meta{
			Scenario: "basic", ScenarioHash: "sha256:1f2e", Seed: 42, Trial: 0, Policy: "kep753",
			Backend: "sim", Version: "v0.1.0", StartUnixNano: 1_780_000_000_000_000_000,
			ToleranceNanos: ms, Extra: map[string]string{"nodes": "2", "kubelet": "reference"},
		}},
		{T: 0, Kind: PodCreated, Pod: p1, Spec: spec},
		{T: 0, Kind: PodCreated, Pod: p2, Spec: &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Never"}},
		{T: 5 * ms, Kind: PodScheduled, Pod: p1, Node: n1, CPU: 610, Mem: 336 << 20},
		{T: 5 * ms, Kind: PodScheduled, Pod: p2, Node: n2},
		{T: 7 * ms, Kind: PodPhase, Pod: p1, Node: n1, Phase: "Pending"},
		{T: 10 * ms, Kind: SandboxCreated, Pod: p1, Node: n1, Attempt: 0},
		{T: 12 * ms, Kind: ContainerStartRequested, Pod: p1, Node: n1, Container: "setup"},
		{T: 110 * ms, Kind: ContainerRunning, Pod: p1, Node: n1, Container: "setup"},
		{T: 110 * ms, Kind: ContainerStarted, Pod: p1, Node: n1, Container: "setup", Value: true},
		{T: 300 * ms, Kind: ContainerExited, Pod: p1, Node: n1, Container: "setup", Code: 0, Reason: "Completed"},
		{T: 302 * ms, Kind: ContainerStartRequested, Pod: p1, Node: n1, Container: "proxy", OOMScoreAdj: 995, CPUs: "2-3,6"},
		{T: 400 * ms, Kind: ContainerRunning, Pod: p1, Node: n1, Container: "proxy"},
		{T: 450 * ms, Kind: ContainerPostStartDone, Pod: p1, Node: n1, Container: "proxy", Value: false, Msg: "hook exited 1"},
		{T: 460 * ms, Kind: ProbeResult, Pod: p1, Node: n1, Container: "proxy", Probe: "startup", Result: "failure"},
		{T: 470 * ms, Kind: ContainerBackoff, Pod: p1, Node: n1, Container: "proxy", Attempt: 1, Grace: 10 * sec},
		{T: 10*sec + 470*ms, Kind: ContainerStartRequested, Pod: p1, Node: n1, Container: "proxy", Attempt: 1},
		{T: 10*sec + 480*ms, Kind: ContainerStartFailed, Pod: p1, Node: n1, Container: "proxy", Attempt: 1, Msg: "image \"envoy:v1.30\" not present\n(pull failed)"},
		{T: 10*sec + 490*ms, Kind: ContainerImageChanged, Pod: p1, Node: n1, Container: "proxy", Msg: "envoy:v1.31"},
		{T: 10*sec + 500*ms, Kind: ContainerStartRequested, Pod: p1, Node: n1, Container: "proxy", Attempt: 2},
		{T: 10*sec + 600*ms, Kind: ContainerRunning, Pod: p1, Node: n1, Container: "proxy", Attempt: 2},
		{T: 10*sec + 700*ms, Kind: ContainerPostStartDone, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Value: true},
		{T: 10*sec + 800*ms, Kind: ContainerStarted, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Value: true},
		{T: 10*sec + 900*ms, Kind: ContainerReady, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Value: true},
		{T: 10*sec + 900*ms, Kind: PodCondition, Pod: p1, Node: n1, Cond: "Initialized", Value: true},
		{T: 11 * sec, Kind: FaultBegin, Node: n1, Fault: "kubelet-crash", FaultID: 1, Target: "node-1/kubelet"},
		{T: 11 * sec, Kind: KubeletDown, Node: n1},
		{T: 11 * sec, Kind: FaultEffect, Node: n1, Fault: "kubelet-crash", FaultID: 1},
		{T: 12 * sec, Kind: KubeletUp, Node: n1},
		{T: 12 * sec, Kind: FaultEnd, Node: n1, Fault: "kubelet-crash", FaultID: 1},
		{T: 12 * sec, Kind: RuntimeDown, Node: n2},
		{T: 12*sec + 1, Kind: RuntimeUp, Node: n2},
		{T: 13 * sec, Kind: FaultBegin, Fault: "apiserver-down", FaultID: 2, Target: "apiserver"},
		{T: 13 * sec, Kind: FaultNotApplied, Fault: "apiserver-down", FaultID: 2, Msg: "backend sim has no apiserver"},
		{T: 13 * sec, Kind: FaultBegin, Pod: p1, Node: n1, Container: "app", Fault: "oom", FaultID: 3, Target: "default/web-0/app"},
		{T: 14 * sec, Kind: ContainerStartRequested, Pod: p1, Node: n1, Container: "app"},
		{T: 14*sec + 100*ms, Kind: ContainerRunning, Pod: p1, Node: n1, Container: "app"},
		{T: 14*sec + 100*ms, Kind: ContainerStarted, Pod: p1, Node: n1, Container: "app", Value: true},
		{T: 14*sec + 200*ms, Kind: ContainerServing, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Value: true},
		{T: 14*sec + 300*ms, Kind: ContainerAppStarted, Pod: p1, Node: n1, Container: "app", Value: true},
		{T: 15 * sec, Kind: ContainerExited, Pod: p1, Node: n1, Container: "app", Code: 137, Reason: "OOMKilled"},
		{T: 15 * sec, Kind: FaultEffect, Pod: p1, Node: n1, Container: "app", Fault: "oom", FaultID: 3},
		{T: 15 * sec, Kind: ContainerReady, Pod: p1, Node: n1, Container: "app", Value: false},
		{T: 15 * sec, Kind: PodCondition, Pod: p1, Node: n1, Cond: "Ready", Value: false},
		{T: 15*sec + 500*ms, Kind: ContainerResize, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, CPU: 200, Mem: 64 << 20, MemLimit: 128 << 20},
		{T: 15*sec + 600*ms, Kind: ContainerResized, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, CPU: 200, Mem: 64 << 20, CPULimit: 400, MemLimit: 128 << 20},
		{T: 15*sec + 700*ms, Kind: ContainerUnknown, Pod: p1, Node: n1, Container: "proxy", Attempt: 2},
		{T: 16 * sec, Kind: PodDeleted, Pod: p1, Grace: 30 * sec},
		{T: 16*sec + ms, Kind: PodTerminating, Pod: p1, Node: n1, Reason: "PodDeleted", Grace: 30 * sec, Value: true},
		{T: 16*sec + 2*ms, Kind: ContainerStopRequested, Pod: p1, Node: n1, Container: "app", Reason: "PodDeleted", Grace: 30 * sec},
		{T: 16*sec + 50*ms, Kind: ContainerExited, Pod: p1, Node: n1, Container: "app", Code: 143, Reason: "Error"},
		{T: 16*sec + 51*ms, Kind: ContainerPreStopBegin, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Reason: "PodDeleted"},
		{T: 18*sec + 51*ms, Kind: ContainerPreStopEnd, Pod: p1, Node: n1, Container: "proxy", Attempt: 2},
		{T: 18*sec + 52*ms, Kind: ContainerStopRequested, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Reason: "PodDeleted", Grace: 28 * sec},
		{T: 46 * sec, Kind: ContainerKilled, Pod: p1, Node: n1, Container: "proxy", Attempt: 2},
		{T: 46 * sec, Kind: ContainerExited, Pod: p1, Node: n1, Container: "proxy", Attempt: 2, Code: 137, Reason: "Error"},
		{T: 46*sec + ms, Kind: PodPhase, Pod: p1, Node: n1, Phase: "Failed"},
		{T: 46*sec + 2*ms, Kind: SandboxStopped, Pod: p1, Node: n1},
		{T: 46*sec + 3*ms, Kind: ContainerRemoved, Pod: p1, Node: n1, Container: "app"},
		{T: 46*sec + 4*ms, Kind: PodRemoved, Pod: p1},
		{T: 47 * sec, Kind: NodeShutdown, Node: n2, Grace: 20 * sec, CritGrace: 5 * sec},
		{T: 48 * sec, Kind: NodeDown, Node: n2},
		{T: 48 * sec, Kind: SandboxLost, Pod: p2, Node: n2},
		{T: 49 * sec, Kind: NodeUp, Node: n2},
		{T: 50 * sec, Kind: PodPhase, Pod: p2, Node: n2, Phase: "Failed", Reason: "Terminated"},
		{T: 60 * sec, Kind: RunEnd, Msg: "complete"},
		// A second run in the same file that crashed: no run.end.
		{T: 0, Kind: RunMeta, Meta: &Meta{Scenario: "basic", Seed: 43, Trial: 1, Policy: "kep753", Backend: "sim", Version: "v0.1.0"}},
		{T: 0, Kind: PodCreated, Pod: p1, Spec: &PodSpec{Main: []ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Never"}},
		{T: 3 * ms, Kind: PodScheduled, Pod: p1, Node: n2},
		{T: 9 * ms, Kind: NodeDown, Node: n2},
	}
}

package kubelet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// makeBasePodAndObs returns a running pod in the style of the kubelet's
// makeBasePodAndStatus: init container "setup" completed, sidecars "proxy"
// (startup probe, preStop) and "logs" running and started, mains "app"
// (preStop) and "worker" running, all in sandbox attempt 0.
func makeBasePodAndObs() (*api.PodSpec, *api.Observed) {
	probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	spec := &api.PodSpec{
		Init: []api.Container{
			{Name: "setup", Image: "setup:v1", Role: api.RoleInit},
			{Name: "proxy", Image: "proxy:v1", Role: api.RoleSidecar, StartupProbe: probe, LivenessProbe: probe, PreStop: true},
			{Name: "logs", Image: "logs:v1", Role: api.RoleSidecar, ReadinessProbe: probe},
		},
		Main: []api.Container{
			{Name: "app", Image: "app:v1", Role: api.RoleMain, PreStop: true, LivenessProbe: probe},
			{Name: "worker", Image: "worker:v1", Role: api.RoleMain},
		},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
	obs := &api.Observed{Sandbox: api.Sandbox{State: api.SandboxReady}, Containers: make([]api.ContainerObs, spec.Len())}
	for i := range obs.Containers {
		c := spec.At(i)
		r := api.ContainerRecord{State: api.StateRunning, Image: c.Image, StartedAt: 1, CreatedAt: 1}
		if c.Role == api.RoleInit {
			r.State, r.ExitCode, r.Reason, r.FinishedAt = api.StateExited, 0, api.ReasonCompleted, 2
		}
		obs.Containers[i].Record = r
	}
	obs.Containers[1].Probe[api.ProbeStartup] = api.ProbeSuccess
	obs.Containers[2].Probe[api.ProbeReadiness] = api.ProbeSuccess
	return spec, obs
}

const (
	iSetup = iota
	iProxy
	iLogs
	iApp
	iWorker
)

// summary renders the parts of a plan the tests compare.
func summary(spec *api.PodSpec, p api.Plan) []string {
	var out []string
	for _, a := range p.Actions {
		switch a.Kind {
		case api.ActCreateSandbox:
			out = append(out, fmt.Sprintf("create-sandbox %d", a.Attempt))
		case api.ActStartContainer:
			out = append(out, fmt.Sprintf("start %s#%d", spec.At(a.Container).Name, a.Attempt))
		case api.ActRunPreStop:
			out = append(out, fmt.Sprintf("prestop %s %s", spec.At(a.Container).Name, a.Reason))
		case api.ActStopContainer:
			out = append(out, fmt.Sprintf("stop %s %v %s", spec.At(a.Container).Name, a.Grace, a.Reason))
		case api.ActStopSandbox:
			out = append(out, "stop-sandbox")
		case api.ActRemoveContainer:
			out = append(out, "remove "+spec.At(a.Container).Name)
		}
	}
	if p.KillPod {
		out = append(out, "kill-pod "+p.KillReason.String())
	}
	if p.TermComplete {
		out = append(out, "term-complete")
	}
	return out
}

func exited(obs *api.Observed, i int, code int32, at api.Time) {
	r := &obs.Containers[i].Record
	r.State, r.ExitCode, r.FinishedAt = api.StateExited, code, at
	r.Reason = api.ReasonCompleted
	if code != 0 {
		r.Reason = api.ReasonError
	}
	obs.Containers[i].Probe = [3]api.ProbeResult{}
}

func terminating(obs *api.Observed, start api.Time, grace time.Duration) {
	var running api.Set
	for i := range obs.Containers {
		if obs.Containers[i].Record.State == api.StateRunning {
			running = running.With(i)
		}
	}
	obs.Pod.Deleted = true
	obs.Term = api.Termination{Active: true, Reason: api.KillPodDeleted, Start: start, Grace: grace, Ordered: true, RunningAtStart: running}
}

// rulesOnWorker gives the worker a container-level policy Never with
// restartPolicyRules: retry on 42, reset the pod on 88.
func rulesOnWorker(s *api.PodSpec) {
	never := api.RestartNever
	s.Main[1].RestartPolicy = &never
	s.Main[1].RestartRules = []api.RestartRule{
		{Action: api.RuleRestart, Operator: api.OpIn, Values: []int32{42}},
		{Action: api.RuleRestartAllContainers, Operator: api.OpIn, Values: []int32{88}},
	}
}

func TestComputePlan(t *testing.T) {
	sec := func(n int) api.Time { return api.Time(time.Duration(n) * time.Second) }
	for name, tc := range map[string]struct {
		mutateSpec func(*api.PodSpec)
		mutateObs  func(*api.Observed)
		gates      api.Gates
		now        api.Time
		want       []string
		wantStatus func(t *testing.T, st api.PodStatus)
	}{
		"steady state: nothing to do": {
			want: nil,
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseRunning || !st.Initialized || !st.Ready {
					t.Errorf("status = %+v, want Running, Initialized, Ready", st)
				}
			},
		},
		"create the first sandbox": {
			mutateObs: func(o *api.Observed) { *o = api.Observed{Containers: make([]api.ContainerObs, 5)} },
			want:      []string{"create-sandbox 0"},
		},
		"INV-S1/start the first init container in a new sandbox": {
			mutateObs: func(o *api.Observed) {
				for i := range o.Containers {
					o.Containers[i] = api.ContainerObs{}
				}
			},
			want: []string{"start setup#0"},
		},
		"INV-S1/next init container waits for the regular one to exit 0": {
			mutateObs: func(o *api.Observed) {
				for i := range o.Containers {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iSetup].Record = api.ContainerRecord{State: api.StateRunning}
			},
			want: nil,
		},
		"INV-S1/sidecar starts after the regular init container exits 0": {
			mutateObs: func(o *api.Observed) {
				for i := iProxy; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
			},
			want: []string{"start proxy#0"},
		},
		"INV-S2/next init container waits for the sidecar startup probe": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iProxy].Probe[api.ProbeStartup] = api.ProbeUnknown
			},
			want: nil,
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhasePending || st.Initialized || st.Started.Has(iProxy) {
					t.Errorf("status = %+v, want Pending, not initialized, proxy not started", st)
				}
			},
		},
		"INV-S2/failed sidecar startup probe kills (preStop) and restarts it, nothing else starts": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iProxy].Probe[api.ProbeStartup] = api.ProbeFailure
			},
			want: []string{"prestop proxy StartupProbe"},
		},
		"INV-S3/postStart in flight gates the next container": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iProxy].PostStart = api.HookRunning
			},
			want: nil,
		},
		"INV-S4/sidecar readiness does not gate the next container": {
			mutateObs: func(o *api.Observed) {
				for i := iApp; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iLogs].Probe[api.ProbeReadiness] = api.ProbeFailure
			},
			want: []string{"start app#0"},
		},
		"INV-S5/mains start once every sidecar started, the first one first": {
			mutateObs: func(o *api.Observed) {
				for i := iApp; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
			},
			want: []string{"start app#0"},
		},
		// Issue 16 A1: SyncPod starts containers one by one and
		// startContainer returns only after the runtime started the process
		// and the postStart hook returned (kuberuntime_manager.go SyncPod
		// step 9, kuberuntime_container.go startContainer step 4).
		"INV-S3/the next main waits while the previous main's start is in flight": {
			mutateObs: func(o *api.Observed) {
				for i := iApp; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iApp].StartPending = true
			},
			want: nil,
		},
		"INV-S3/the next main waits for the previous main's postStart hook": {
			mutateSpec: func(s *api.PodSpec) { s.Main[0].PostStart = true },
			mutateObs: func(o *api.Observed) {
				o.Containers[iWorker] = api.ContainerObs{}
				o.Containers[iApp].PostStart = api.HookRunning
			},
			want: nil,
		},
		"INV-S3/the next main starts once the previous one runs and its postStart returned": {
			mutateSpec: func(s *api.PodSpec) { s.Main[0].PostStart = true },
			mutateObs: func(o *api.Observed) {
				o.Containers[iWorker] = api.ContainerObs{}
				o.Containers[iApp].PostStart = api.HookDone
			},
			want: []string{"start worker#0"},
		},
		"INV-S3/a restarting sidecar's postStart holds back a main restart": {
			mutateSpec: func(s *api.PodSpec) { s.Init[2].PostStart = true },
			mutateObs: func(o *api.Observed) {
				o.Containers[iLogs].PostStart = api.HookRunning
				exited(o, iWorker, 1, sec(10))
			},
			now:  sec(10),
			want: nil,
		},
		"INV-S6/failed init container under Never kills the pod": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever; s.Init[0], s.Init[1] = s.Init[1], s.Init[0] },
			mutateObs: func(o *api.Observed) {
				o.Containers[0].Record, o.Containers[1].Record = o.Containers[1].Record, o.Containers[0].Record
				o.Containers[0].Probe[api.ProbeStartup] = api.ProbeSuccess
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				exited(o, 1, 3, sec(5))
			},
			want: []string{"kill-pod InitFailed"},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseFailed {
					t.Errorf("phase = %v, want Failed", st.Phase)
				}
			},
		},
		"INV-S6/failed init container under OnFailure is retried, later ones wait": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartOnFailure },
			mutateObs: func(o *api.Observed) {
				for i := iProxy; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				exited(o, iSetup, 1, sec(2))
			},
			want: []string{"start setup#1"},
		},
		"INV-R1/exited sidecar is restarted under restartPolicy Never": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs:  func(o *api.Observed) { exited(o, iLogs, 0, sec(10)) },
			now:        sec(10),
			want:       []string{"start logs#1"},
		},
		"INV-R2/second restart waits for the backoff": {
			mutateObs: func(o *api.Observed) {
				exited(o, iLogs, 1, sec(10))
				o.Containers[iLogs].Backoff = 10 * time.Second
			},
			now:  sec(15),
			want: nil,
		},
		"INV-R2/restart after the backoff expired": {
			mutateObs: func(o *api.Observed) {
				exited(o, iLogs, 1, sec(10))
				o.Containers[iLogs].Backoff = 10 * time.Second
			},
			now:  sec(20),
			want: []string{"start logs#1"},
		},
		"INV-R3/sidecar restart does not re-run init containers or restart mains": {
			mutateObs: func(o *api.Observed) { exited(o, iProxy, 137, sec(10)) },
			now:       sec(10),
			want:      []string{"start proxy#1"},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseRunning || !st.Initialized {
					t.Errorf("status = %+v, want Running and Initialized during a sidecar restart (INV-P1, P2)", st)
				}
			},
		},
		"INV-R4/main container follows pod restartPolicy OnFailure (exit 0 not restarted)": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartOnFailure },
			mutateObs:  func(o *api.Observed) { exited(o, iWorker, 0, sec(10)) },
			now:        sec(10),
			want:       nil,
		},
		"INV-R4/main container restarted under Always without re-running init": {
			mutateObs: func(o *api.Observed) { exited(o, iWorker, 0, sec(10)) },
			now:       sec(10),
			want:      []string{"start worker#1"},
		},
		"INV-R6/no main running or restartable: kill the pod, do not restart sidecars": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				exited(o, iApp, 0, sec(10))
				exited(o, iWorker, 0, sec(10))
				exited(o, iLogs, 1, sec(10))
			},
			now:  sec(10),
			want: []string{"kill-pod PodCompleted"},
		},
		"INV-C2/sidecar exit codes do not decide the phase": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				for _, i := range []int{iProxy, iLogs} {
					exited(o, i, 137, sec(12))
				}
				exited(o, iApp, 0, sec(10))
				exited(o, iWorker, 0, sec(10))
				o.Pod.Done = true
			},
			now: sec(12),
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseSucceeded {
					t.Errorf("phase = %v, want Succeeded", st.Phase)
				}
			},
		},
		"INV-C2/a failed main makes a completed Never pod Failed": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				for _, i := range []int{iProxy, iLogs, iApp} {
					exited(o, i, 0, sec(12))
				}
				exited(o, iWorker, 2, sec(10))
				o.Pod.Done = true
			},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseFailed {
					t.Errorf("phase = %v, want Failed", st.Phase)
				}
			},
		},
		// Issue 16 A6: a main whose record is Created (start requested,
		// never ran) is "waiting" in getPhase, so a pod deleted in that
		// state is never Succeeded; TerminatePod turns the non-terminal
		// phase into Failed.
		"INV-T8/deleted during re-initialization with a main that never ran: Failed": {
			mutateObs: func(o *api.Observed) {
				o.Sandbox = api.Sandbox{State: api.SandboxReady, Attempt: 1}
				for i := iSetup; i < iApp; i++ {
					o.Containers[i].Record.SandboxAttempt = 1
				}
				for _, i := range []int{iProxy, iLogs} {
					exited(o, i, 0, sec(60))
				}
				o.Containers[iApp].Record = api.ContainerRecord{State: api.StateCreated, CreatedAt: sec(20)}
				exited(o, iWorker, 0, sec(30))
				o.Containers[iWorker].Record.SandboxAttempt = 0
				o.Pod.Deleted, o.Pod.Done = true, true
			},
			now: sec(60),
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseFailed {
					t.Errorf("phase = %v, want Failed (app never ran)", st.Phase)
				}
			},
		},
		// A main killed by its liveness probe with a restart planned, then
		// the pod deleted before the kill completed: a terminating pod
		// restarts nothing (SyncTerminatingPod), so the exit 0 is a
		// success and the terminal phase is Succeeded (getPhase). Found as
		// a false INV-C2/T8 at 100k faulted lifecycles.
		"INV-T8/probe-killed main, pod deleted before the restart, exit 0: Succeeded": {
			mutateObs: func(o *api.Observed) {
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 0, sec(50))
				}
				o.Containers[iApp].KillRestart = true
				o.Pod.Deleted, o.Pod.Done = true, true
			},
			now: sec(51),
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseSucceeded {
					t.Errorf("phase = %v, want Succeeded (every main exited 0; no restart while terminating)", st.Phase)
				}
			},
		},
		// Issue 16 A7: getPhase during re-initialization. Terminated
		// statuses of the lost sandbox carry over (convertToAPIContainer-
		// Statuses keeps an old Terminated state), so completed inits are
		// not pending and the lost mains count as stopped; a terminated
		// sidecar is "not taken into account"; podHasInitialized
		// (HasAnyActiveRegularContainerStarted) is false. Initialized stays
		// True (GeneratePodInitializedCondition: a main has a Terminated
		// status).
		"INV-F3/new sandbox before the first init runs: the kubelet's phase stays Running": {
			mutateObs: func(o *api.Observed) {
				o.Sandbox = api.Sandbox{State: api.SandboxReady, Attempt: 1}
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
			},
			now:  sec(51),
			want: []string{"start setup#1"},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseRunning || !st.Initialized {
					t.Errorf("status = %+v, want Running and Initialized (getPhase with the lost sandbox's statuses)", st)
				}
			},
		},
		"INV-F3/re-initialization: a regular init running in the new sandbox makes it Pending": {
			mutateObs: func(o *api.Observed) {
				o.Sandbox = api.Sandbox{State: api.SandboxReady, Attempt: 1}
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
				o.Containers[iSetup].Record = api.ContainerRecord{State: api.StateRunning, Attempt: 1, SandboxAttempt: 1, StartedAt: sec(51)}
			},
			now: sec(52),
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhasePending || !st.Initialized {
					t.Errorf("status = %+v, want Pending (regular init running) and still Initialized", st)
				}
			},
		},
		"INV-F3/re-initialization: a sidecar OOM-killed while the others started": {
			mutateObs: func(o *api.Observed) {
				o.Sandbox = api.Sandbox{State: api.SandboxReady, Attempt: 1}
				for i := iApp; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
				o.Containers[iSetup].Record.SandboxAttempt = 1
				o.Containers[iProxy].Record.SandboxAttempt = 1
				exited(o, iLogs, 137, sec(55))
				o.Containers[iLogs].Record.SandboxAttempt, o.Containers[iLogs].Record.Reason = 1, api.ReasonOOMKilled
			},
			now:  sec(55),
			want: []string{"start logs#1"},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Phase != api.PhaseRunning {
					t.Errorf("phase = %v, want Running (a terminated sidecar is not counted by getPhase)", st.Phase)
				}
			},
		},
		// Issue 16 A8: podHasInitialized is HasAnyActiveRegularContainer-
		// Started, true for a main status of ANY state in the current
		// sandbox (v1.37.2), so an exited main keeps the pod initialized
		// after its init records were garbage-collected: nothing re-runs.
		"INV-F1/init records GC'd, then every main exits: only the mains restart": {
			mutateSpec: func(s *api.PodSpec) { s.Init[2] = api.Container{Name: "logs", Image: "logs:v1", Role: api.RoleInit} },
			mutateObs: func(o *api.Observed) {
				o.Containers[iSetup] = api.ContainerObs{Gone: true}
				o.Containers[iLogs] = api.ContainerObs{Gone: true}
				exited(o, iApp, 1, sec(10))
				exited(o, iWorker, 1, sec(10))
			},
			now:  sec(10),
			want: []string{"start app#1"},
		},
		"INV-P3/a failing sidecar readiness probe makes the pod NotReady without restarts": {
			mutateObs: func(o *api.Observed) { o.Containers[iLogs].Probe[api.ProbeReadiness] = api.ProbeFailure },
			want:      nil,
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if st.Ready || st.ContainersReady || st.ReadySet.Has(iLogs) {
					t.Errorf("status = %+v, want not ready", st)
				}
			},
		},
		"INV-P5/liveness failure restarts only that sidecar (preStop runs)": {
			mutateObs: func(o *api.Observed) { o.Containers[iProxy].Probe[api.ProbeLiveness] = api.ProbeFailure },
			want:      []string{"prestop proxy LivenessProbe"},
		},
		"INV-P5/probe-level grace overrides the pod's for a liveness kill": {
			mutateSpec: func(s *api.PodSpec) {
				s.Main[1].LivenessProbe = &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriod: 5 * time.Second}
			},
			mutateObs: func(o *api.Observed) { o.Containers[iWorker].Probe[api.ProbeLiveness] = api.ProbeFailure },
			want:      []string{"stop worker 5s LivenessProbe"},
		},
		"bug probe-grace-ignored/a liveness kill gets the pod's grace": {
			gates: api.Gates{Bug: api.BugProbeGraceIgnored},
			mutateSpec: func(s *api.PodSpec) {
				s.Main[1].LivenessProbe = &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriod: 5 * time.Second}
			},
			mutateObs: func(o *api.Observed) { o.Containers[iWorker].Probe[api.ProbeLiveness] = api.ProbeFailure },
			want:      []string{"stop worker 30s LivenessProbe"},
		},
		"INV-T1/preStop hooks of mains and sidecars start together": {
			mutateObs: func(o *api.Observed) { terminating(o, sec(100), 30*time.Second) },
			now:       sec(100),
			want:      []string{"prestop proxy PodDeleted", "prestop app PodDeleted", "stop worker 30s PodDeleted"},
		},
		"INV-T2/a main is signalled after its own preStop, not delayed by others": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iApp].PreStop = api.HookDone
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iWorker].StopRequested = true
			},
			now:  sec(101),
			want: []string{"stop app 29s PodDeleted"},
		},
		"INV-T3/sidecars wait for every main": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookDone
				o.Containers[iApp].PreStop, o.Containers[iApp].StopRequested = api.HookDone, true
				exited(o, iWorker, 0, sec(101))
			},
			now:  sec(102),
			want: nil,
		},
		"INV-T4/reverse order: the last sidecar goes first once the mains exited": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookDone
				exited(o, iApp, 0, sec(103))
				exited(o, iWorker, 0, sec(101))
			},
			now:  sec(104),
			want: []string{"stop logs 26s PodDeleted"},
		},
		"INV-T4/the first sidecar goes last": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookDone
				exited(o, iApp, 0, sec(103))
				exited(o, iWorker, 0, sec(101))
				exited(o, iLogs, 0, sec(105))
			},
			now:  sec(105),
			want: []string{"stop proxy 25s PodDeleted"},
		},
		"INV-T5/at the deadline everything left is stopped with 2 s": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iApp].PreStop = api.HookRunning
				o.Containers[iWorker].StopRequested = true
			},
			now:  sec(130),
			want: []string{"stop proxy 2s PodDeleted", "stop logs 2s PodDeleted", "stop app 2s PodDeleted"},
		},
		"INV-T6/a running preStop holds back its own SIGTERM": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iApp].PreStop = api.HookRunning
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iWorker].StopRequested = true
			},
			now:  sec(110),
			want: nil,
		},
		"INV-T8/deleted pod with a main killed by SIGKILL ends Failed": {
			mutateObs: func(o *api.Observed) {
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 0, sec(130))
				}
				exited(o, iApp, 137, sec(132))
				terminating(o, sec(100), 30*time.Second)
			},
			now:  sec(132),
			want: []string{"stop-sandbox", "term-complete"},
		},
		"INV-T9/containers that never started are ignored by ordering": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iProxy].Probe[api.ProbeStartup] = api.ProbeUnknown
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookDone
			},
			now:  sec(101),
			want: []string{"stop proxy 29s PodDeleted"},
		},
		"INV-T10/nothing is started or restarted during termination": {
			mutateObs: func(o *api.Observed) {
				exited(o, iLogs, 1, sec(101))
				exited(o, iWorker, 1, sec(101))
				terminating(o, sec(100), 30*time.Second)
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iApp].PreStop = api.HookRunning
			},
			now:  sec(102),
			want: nil,
		},
		"INV-R5/exited sidecar not restarted during termination (gate off)": {
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				exited(o, iLogs, 1, sec(101))
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iApp].PreStop = api.HookRunning
				o.Containers[iWorker].StopRequested = true
			},
			now:  sec(102),
			want: nil,
		},
		"KEP-4438/exited sidecar restarted during termination with the gate on": {
			gates: api.Gates{SidecarsRestartableDuringPodTermination: true},
			mutateObs: func(o *api.Observed) {
				terminating(o, sec(100), 30*time.Second)
				exited(o, iLogs, 1, sec(101))
				o.Containers[iProxy].PreStop = api.HookRunning
				o.Containers[iApp].PreStop = api.HookRunning
				o.Containers[iWorker].StopRequested = true
			},
			now:  sec(102),
			want: []string{"start logs#1"},
		},
		"INV-F1/kubelet restart with the init record GC'd re-runs nothing": {
			mutateObs: func(o *api.Observed) {
				o.Containers[iSetup] = api.ContainerObs{}
				for i := range o.Containers {
					o.Containers[i].Probe = [3]api.ProbeResult{}
				}
				o.Containers[iProxy].StartedSeen = true
			},
			want: nil,
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if !st.Started.Has(iProxy) || st.Phase != api.PhaseRunning {
					t.Errorf("status = %+v, want proxy still started and Running", st)
				}
			},
		},
		"INV-F1/records lost during initialization: resume from the last visible one": {
			mutateObs: func(o *api.Observed) {
				o.Containers[iSetup] = api.ContainerObs{}
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
			},
			want: []string{"start logs#0"},
		},
		"INV-F2/kubelet restart during initialization does not re-run completed inits": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iProxy].Probe = [3]api.ProbeResult{}
				o.Containers[iProxy].StartedSeen = true
			},
			want: []string{"start logs#0"},
		},
		"INV-F3/sandbox lost: create a new one (Always)": {
			mutateObs: func(o *api.Observed) {
				o.Sandbox.State = api.SandboxLost
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
			},
			now:  sec(50),
			want: []string{"create-sandbox 1"},
		},
		"INV-F3/sandbox lost under Never with containers created: the pod ends": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				o.Sandbox.State = api.SandboxLost
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
			},
			now:  sec(50),
			want: []string{"kill-pod PodCompleted"},
		},
		"INV-F7/container stuck in Created is started again": {
			mutateObs: func(o *api.Observed) {
				for i := iLogs; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iLogs].Record = api.ContainerRecord{State: api.StateCreated}
			},
			want: []string{"start logs#1"},
		},
		"INV-F8/sidecar in Unknown state is killed and recreated even under Never": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs:  func(o *api.Observed) { o.Containers[iLogs].Record.State = api.StateUnknown },
			want:       []string{"stop logs 30s UnknownState"},
		},
		"INV-F8/regular init container in Unknown state kills the pod under Never": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				for i := iProxy; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iSetup].Record.State = api.StateUnknown
			},
			want: []string{"kill-pod InitFailed"},
		},
		"INV-U1/sidecar image change restarts only that sidecar": {
			mutateSpec: func(s *api.PodSpec) { s.Init[2].Image = "logs:v2" },
			want:       []string{"stop logs 30s SpecChanged"},
		},
		"INV-U1/completed init container image change re-runs nothing": {
			mutateSpec: func(s *api.PodSpec) { s.Init[0].Image = "setup:v2" },
			want:       nil,
		},
		"INV-U1/main image change restarts that main whatever the policy": {
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever; s.Main[1].Image = "worker:v2" },
			want:       []string{"stop worker 30s SpecChanged"},
		},
		"policy none/sidecar treated as an ordinary container keeps a Job pod alive": {
			gates:      api.Gates{Policy: api.PolicyNone},
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs: func(o *api.Observed) {
				exited(o, iApp, 0, sec(10))
				exited(o, iWorker, 0, sec(10))
			},
			want: nil,
		},
		"policy kep753-2019/mains wait for sidecar readiness": {
			gates: api.Gates{Policy: api.PolicyKEP753v2019},
			mutateObs: func(o *api.Observed) {
				for i := iApp; i < len(o.Containers); i++ {
					o.Containers[i] = api.ContainerObs{}
				}
				o.Containers[iLogs].Probe[api.ProbeReadiness] = api.ProbeUnknown
			},
			want: nil,
		},
		"policy kep753-2019/sidecars obey restartPolicy Never": {
			gates:      api.Gates{Policy: api.PolicyKEP753v2019},
			mutateSpec: func(s *api.PodSpec) { s.RestartPolicy = api.RestartNever },
			mutateObs:  func(o *api.Observed) { exited(o, iLogs, 1, sec(10)) },
			want:       nil,
		},
		"INV-RR1/first matching rule restarts the main in a Never pod": {
			gates:      api.Gates{ContainerRestartRules: true},
			mutateSpec: rulesOnWorker,
			mutateObs:  func(o *api.Observed) { exited(o, iWorker, 42, sec(10)) },
			now:        sec(10),
			want:       []string{"start worker#1"},
		},
		"INV-RR2/no rule matches: the container policy Never holds": {
			gates:      api.Gates{ContainerRestartRules: true},
			mutateSpec: rulesOnWorker,
			mutateObs:  func(o *api.Observed) { exited(o, iWorker, 0, sec(10)) },
			now:        sec(10),
			want:       nil,
		},
		"INV-RR/gate off: the pod policy (Never) decides, rules are ignored": {
			mutateSpec: func(s *api.PodSpec) { rulesOnWorker(s); s.RestartPolicy = api.RestartNever },
			mutateObs:  func(o *api.Observed) { exited(o, iWorker, 42, sec(10)) },
			now:        sec(10),
			want:       nil,
		},
		"INV-RA2/trigger exit stops every other container with 2 s, no preStop, removes exited ones": {
			gates:      api.Gates{ContainerRestartRules: true, RestartAllContainersOnContainerExits: true},
			mutateSpec: rulesOnWorker,
			mutateObs:  func(o *api.Observed) { exited(o, iWorker, 88, sec(10)) },
			now:        sec(10),
			want:       []string{"stop app 2s RestartAllContainers", "stop logs 2s RestartAllContainers", "stop proxy 2s RestartAllContainers", "remove setup"},
			wantStatus: func(t *testing.T, st api.PodStatus) {
				if !st.AllContainersRestarting {
					t.Errorf("AllContainersRestarting = false during a reset")
				}
			},
		},
		"INV-RA3/the trigger is removed last": {
			gates:      api.Gates{ContainerRestartRules: true, RestartAllContainersOnContainerExits: true},
			mutateSpec: rulesOnWorker,
			mutateObs: func(o *api.Observed) {
				exited(o, iWorker, 88, sec(10))
				for _, i := range []int{iSetup, iProxy, iLogs, iApp} {
					o.Containers[i] = api.ContainerObs{}
				}
			},
			now:  sec(11),
			want: []string{"remove worker"},
		},
		"INV-RA4/nothing starts before the reset finished; then init re-runs from the first container": {
			gates:      api.Gates{ContainerRestartRules: true, RestartAllContainersOnContainerExits: true},
			mutateSpec: rulesOnWorker,
			mutateObs: func(o *api.Observed) {
				for i := range o.Containers {
					o.Containers[i] = api.ContainerObs{NextAttempt: 1}
				}
			},
			now:  sec(12),
			want: []string{"start setup#1"},
		},
		"bug reinit-mains-first/mains start with the sidecars in a new sandbox": {
			gates: api.Gates{Bug: api.BugReinitMainsFirst},
			mutateObs: func(o *api.Observed) {
				o.Sandbox = api.Sandbox{State: api.SandboxReady, Attempt: 1}
				for i := iProxy; i < len(o.Containers); i++ {
					exited(o, i, 137, sec(50))
				}
			},
			now: sec(51),
			// Serial starts: proxy first; the mains follow as soon as the
			// sidecars run, without waiting for them to be Started.
			want: []string{"start proxy#1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec, obs := makeBasePodAndObs()
			if tc.mutateSpec != nil {
				tc.mutateSpec(spec)
			}
			if tc.mutateObs != nil {
				tc.mutateObs(obs)
			}
			if err := spec.Validate(); err != nil {
				t.Fatalf("invalid test spec: %v", err)
			}
			p := Plan(spec, obs, tc.gates, tc.now)
			if got := summary(spec, p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan = [%s], want [%s]", strings.Join(got, ", "), strings.Join(tc.want, ", "))
			}
			if tc.wantStatus != nil {
				tc.wantStatus(t, p.Status)
			}
		})
	}
}

func TestValidateNamesContainerAndRule(t *testing.T) {
	probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	for name, tc := range map[string]struct {
		mutate func(*api.PodSpec)
		want   string
	}{
		"probe on a regular init container": {func(s *api.PodSpec) { s.Init[0].ReadinessProbe = probe }, `container "setup": INV-P4`},
		"hook on a regular init container":  {func(s *api.PodSpec) { s.Init[0].PreStop = true }, `container "setup": INV-P4`},
		"duplicate names":                   {func(s *api.PodSpec) { s.Main[1].Name = "proxy" }, `container "proxy": unique-names`},
		"negative grace":                    {func(s *api.PodSpec) { s.TerminationGracePeriod = -time.Second }, "terminationGracePeriodSeconds"},
		"no main container":                 {func(s *api.PodSpec) { s.Main = nil }, "at least one main container"},
		"zero probe period":                 {func(s *api.PodSpec) { s.Init[1].StartupProbe = &api.Probe{SuccessThreshold: 1, FailureThreshold: 1} }, "startupProbe.periodSeconds"},
		"sidecar role on a main":            {func(s *api.PodSpec) { s.Main[0].Role = api.RoleSidecar }, "restartPolicy: Always is only allowed on init containers"},
		"startup success threshold not 1": {func(s *api.PodSpec) {
			s.Init[1].StartupProbe = &api.Probe{Period: 1, SuccessThreshold: 2, FailureThreshold: 1}
		}, "must be 1"},
	} {
		t.Run(name, func(t *testing.T) {
			spec, _ := makeBasePodAndObs()
			tc.mutate(spec)
			err := spec.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := NewMachine(spec, api.Gates{}); err == nil {
				t.Fatal("NewMachine accepted an invalid spec")
			}
		})
	}
}

package kubelet

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestPropertyRandomPods drives machines for random pod shapes through
// random runtime behaviour and faults (exits, probe failures, deletions,
// kubelet restarts, record GC, sandbox loss). It checks that the machine's
// own actions never break a HARD start or termination invariant, and that
// the same seed always gives the same transcript.
func TestPropertyRandomPods(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		a, errA := runRandomPod(seed, api.Gates{})
		if errA != nil {
			t.Fatalf("seed %d: %v\ntranscript:\n%s", seed, errA, a)
		}
		b, _ := runRandomPod(seed, api.Gates{})
		if a != b {
			t.Fatalf("seed %d: same inputs gave different outputs", seed)
		}
	}
}

// TestPropertyCatchesBugReplicas proves the property checks can fail: the
// bug replicas that break start or termination ordering are caught.
func TestPropertyCatchesBugReplicas(t *testing.T) {
	for _, tc := range []struct {
		bug  api.Bug
		want string
	}{
		{api.BugReinitMainsFirst, "INV-S1/S5"},
		{api.BugSidecarsWithMains, "INV-T3"},
	} {
		t.Run(tc.bug.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 2000; seed++ {
				if _, err := runRandomPod(seed, api.Gates{Bug: tc.bug}); err != nil {
					if !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("seed %d: caught %v, want %s", seed, err, tc.want)
					}
					return
				}
			}
			t.Fatalf("bug replica %s was never caught", tc.bug)
		})
	}
}

// newMachineForTest makes the machines of the random runs; the Reset test
// swaps in a pool.
var newMachineForTest = NewMachine

// TestResetEqualsNew: a pooled machine that is Reset behaves exactly like a
// new one, over the random pods and their kubelet restarts.
func TestResetEqualsNew(t *testing.T) {
	var want []string
	for seed := uint64(1); seed <= 100; seed++ {
		out, _ := runRandomPod(seed, api.Gates{})
		want = append(want, out)
	}
	var pool []*Machine
	newMachineForTest = func(spec *api.PodSpec, g api.Gates) (*Machine, error) {
		if len(pool) > 0 {
			m := pool[0]
			pool = pool[1:]
			return m, m.Reset(spec, g)
		}
		m, err := NewMachine(spec, g)
		pool = append(pool, m) // reused (and reset) by the next request
		return m, err
	}
	defer func() { newMachineForTest = NewMachine }()
	for i, seed := 0, uint64(1); seed <= 100; i, seed = i+1, seed+1 {
		got, _ := runRandomPod(seed, api.Gates{})
		if got != want[i] {
			t.Fatalf("seed %d: a reset machine behaved differently from a new one", seed)
		}
	}
}

func randomSpec(r *rand.Rand) *api.PodSpec {
	spec := &api.PodSpec{
		RestartPolicy:          api.RestartPolicy(r.IntN(3)),
		TerminationGracePeriod: time.Duration(r.IntN(20)+1) * time.Second,
	}
	probe := func() *api.Probe {
		if r.IntN(2) == 0 {
			return nil
		}
		return &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	}
	nInit := r.IntN(5)
	for i := 0; i < nInit; i++ {
		c := api.Container{Name: fmt.Sprintf("i%d", i), Image: "img:v1", Role: api.RoleInit}
		if r.IntN(2) == 0 {
			c.Name, c.Role = fmt.Sprintf("s%d", i), api.RoleSidecar
			c.StartupProbe, c.ReadinessProbe, c.LivenessProbe = probe(), probe(), probe()
			c.PostStart, c.PreStop = r.IntN(3) == 0, r.IntN(2) == 0
		}
		spec.Init = append(spec.Init, c)
	}
	for j := 0; j < 1+r.IntN(3); j++ {
		spec.Main = append(spec.Main, api.Container{Name: fmt.Sprintf("m%d", j), Image: "img:v1", Role: api.RoleMain, PreStop: r.IntN(2) == 0, StartupProbe: probe(), ReadinessProbe: probe()})
	}
	return spec
}

// randomEnv is a tiny discrete-event runtime for one pod.
type randomEnv struct {
	gates api.Gates
	r     *rand.Rand
	spec  *api.PodSpec
	m     *Machine
	now   api.Time
	queue []pending
	seq   int

	sandbox api.Sandbox
	records []api.ContainerRecord
	// ground truth kept by the runtime, per container of the current sandbox
	completed   []bool // a regular init exited 0 in this sandbox
	startedOnce []bool // the container was started in this sandbox
	startupOK   []bool // startup probe passed for the current attempt
	everStarted []bool // the container was Started at some point in this sandbox
	postStartOK []bool
	preStopBusy []bool
	initialized bool // a main started in this sandbox
	deleted     bool
	deleteGrace time.Duration
	log         strings.Builder
}

type pending struct {
	at  api.Time
	seq int
	fn  func() error
}

func (e *randomEnv) after(d time.Duration, fn func() error) {
	e.seq++
	e.queue = append(e.queue, pending{at: e.now.Add(d), seq: e.seq, fn: fn})
}

func (e *randomEnv) rnd(max time.Duration) time.Duration {
	return time.Duration(e.r.Int64N(int64(max)))
}

func runRandomPod(seed uint64, gates api.Gates) (string, error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	spec := randomSpec(r)
	m, err := newMachineForTest(spec, gates)
	if err != nil {
		return "", fmt.Errorf("random spec invalid: %v", err)
	}
	n := spec.Len()
	e := &randomEnv{r: r, spec: spec, m: m, gates: gates, records: make([]api.ContainerRecord, n)}
	e.resetSandboxTruth()
	fmt.Fprintf(&e.log, "spec: init=%d main=%d restart=%s grace=%v\n", len(spec.Init), len(spec.Main), spec.RestartPolicy, spec.TerminationGracePeriod)
	if err := e.step(api.Input{Kind: api.InRelist, Records: e.records}); err != nil {
		return e.log.String(), err
	}
	// Faults and the deletion, at random times.
	if r.IntN(2) == 0 {
		e.after(e.rnd(20*time.Second), func() error { return e.restartKubelet() })
	}
	if r.IntN(3) == 0 {
		e.after(e.rnd(20*time.Second), func() error { return e.gcInits() })
	}
	if r.IntN(4) == 0 {
		e.after(e.rnd(20*time.Second), func() error { return e.loseSandbox() })
	}
	e.after(5*time.Second+e.rnd(40*time.Second), func() error {
		e.deleted, e.deleteGrace = true, time.Duration(r.IntN(10))*time.Second
		return e.step(api.Input{Kind: api.InDelete, Grace: e.deleteGrace})
	})
	for steps := 0; len(e.queue) > 0 && steps < 5000; steps++ {
		sort.Slice(e.queue, func(i, j int) bool {
			if e.queue[i].at != e.queue[j].at {
				return e.queue[i].at < e.queue[j].at
			}
			return e.queue[i].seq < e.queue[j].seq
		})
		p := e.queue[0]
		e.queue = e.queue[1:]
		e.now = p.at
		if err := p.fn(); err != nil {
			return e.log.String(), err
		}
		if e.m.Done() && e.deleted {
			break
		}
	}
	return e.log.String(), nil
}

func (e *randomEnv) resetSandboxTruth() {
	n := e.spec.Len()
	e.completed, e.startedOnce = make([]bool, n), make([]bool, n)
	e.startupOK, e.postStartOK, e.preStopBusy = make([]bool, n), make([]bool, n), make([]bool, n)
	e.everStarted = make([]bool, n)
	e.initialized = false
}

func (e *randomEnv) step(in api.Input) error {
	for j := range e.everStarted {
		e.everStarted[j] = e.everStarted[j] || e.startedNow(j)
	}
	if err := e.m.Step(e.now, in); err != nil {
		return err
	}
	for e.m.HasReady() {
		rd := e.m.Ready()
		for _, a := range rd.Actions {
			fmt.Fprintf(&e.log, "%v %s\n", time.Duration(e.now), a)
			if err := e.checkAction(a); err != nil {
				return err
			}
			e.execute(a)
		}
		if w := rd.WakeAt; w != api.Never {
			e.after(w.Sub(e.now), func() error { return e.step(api.Input{Kind: api.InTick}) })
		}
		e.m.Advance(rd)
	}
	return nil
}

// startedNow is the ground truth of the Started flag.
func (e *randomEnv) startedNow(i int) bool {
	r := &e.records[i]
	c := e.spec.At(i)
	return r.State == api.StateRunning && r.SandboxAttempt == e.sandbox.Attempt &&
		(c.StartupProbe == nil || e.startupOK[i]) && (!c.PostStart || e.postStartOK[i])
}

func (e *randomEnv) checkAction(a api.Action) error {
	o := e.m.Observed()
	switch a.Kind {
	case api.ActStartContainer:
		if o.Term.Active && o.Term.Reason != api.KillSandboxLost {
			return fmt.Errorf("INV-T10: start of %s during termination", e.spec.At(a.Container).Name)
		}
		i := a.Container
		c := e.spec.At(i)
		if e.initialized || (c.Role != api.RoleMain && e.startedOnce[i]) {
			return nil // restarts after initialization carry no ordering
		}
		limit := i
		if c.Role == api.RoleMain {
			limit = len(e.spec.Init)
		}
		for j := 0; j < limit; j++ {
			switch e.spec.At(j).Role {
			case api.RoleInit:
				if !e.completed[j] {
					return fmt.Errorf("INV-S1/S5: start of %s before init container %s completed", c.Name, e.spec.At(j).Name)
				}
			case api.RoleSidecar:
				// A sidecar that started once in this sandbox and is now
				// restarting does not hold back later containers (INV-R3).
				if !e.startedNow(j) && !e.everStarted[j] {
					return fmt.Errorf("INV-S1/S5: start of %s before sidecar %s started", c.Name, e.spec.At(j).Name)
				}
			}
		}
	case api.ActStopContainer:
		t := o.Term
		if !t.Active || !t.Ordered || e.now >= t.Deadline() {
			return nil
		}
		i := a.Container
		if e.preStopBusy[i] {
			return fmt.Errorf("INV-T6: %s signalled while its preStop runs", e.spec.At(i).Name)
		}
		if e.spec.At(i).Role != api.RoleSidecar || !t.RunningAtStart.Has(i) {
			return nil
		}
		for j := len(e.spec.Init); j < e.spec.Len(); j++ {
			if t.RunningAtStart.Has(j) && e.records[j].State == api.StateRunning {
				return fmt.Errorf("INV-T3: sidecar %s signalled while main %s runs", e.spec.At(i).Name, e.spec.At(j).Name)
			}
		}
		// The kubelet chains each sidecar to the next one in spec order
		// only (newTerminationOrdering): not to a later one past a
		// sidecar that was not running at kill time.
		for j := i + 1; j < len(e.spec.Init); j++ {
			if e.spec.At(j).Role != api.RoleSidecar {
				continue
			}
			if t.RunningAtStart.Has(j) && e.records[j].State == api.StateRunning {
				return fmt.Errorf("INV-T4: sidecar %s signalled before the next sidecar %s exited", e.spec.At(i).Name, e.spec.At(j).Name)
			}
			break
		}
	}
	return nil
}

func (e *randomEnv) execute(a api.Action) {
	switch a.Kind {
	case api.ActCreateSandbox:
		attempt := a.Attempt
		e.after(e.rnd(time.Second), func() error {
			e.sandbox = api.Sandbox{State: api.SandboxReady, Attempt: attempt}
			e.resetSandboxTruth()
			return e.step(api.Input{Kind: api.InSandbox, Sandbox: e.sandbox})
		})
	case api.ActStartContainer:
		i, attempt, sb := a.Container, a.Attempt, e.sandbox.Attempt
		e.after(e.rnd(2*time.Second), func() error {
			if e.sandbox.Attempt != sb || e.sandbox.State != api.SandboxReady {
				return e.step(api.Input{Kind: api.InActionFailed, Action: api.ActStartContainer, Container: i})
			}
			e.records[i] = api.ContainerRecord{State: api.StateRunning, Attempt: attempt, SandboxAttempt: sb, Image: e.m.Spec().At(i).Image, StartedAt: e.now}
			e.startedOnce[i] = true
			e.startupOK[i], e.postStartOK[i] = false, false
			if e.spec.At(i).Role == api.RoleMain {
				e.initialized = true
			}
			if err := e.step(api.Input{Kind: api.InContainer, Container: i, Record: e.records[i]}); err != nil {
				return err
			}
			e.scheduleLife(i, attempt)
			return nil
		})
	case api.ActRunPreStop:
		i := a.Container
		e.preStopBusy[i] = true
		e.after(e.rnd(5*time.Second), func() error {
			e.preStopBusy[i] = false
			return e.step(api.Input{Kind: api.InPreStopDone, Container: i})
		})
	case api.ActStopContainer:
		i, attempt := a.Container, e.records[a.Container].Attempt
		handling := e.rnd(4 * time.Second)
		code := int32(0)
		if handling > a.Grace {
			handling, code = a.Grace, 137
		}
		e.after(handling, func() error { return e.exit(i, attempt, code) })
	}
}

// scheduleLife plans what a freshly started container does on its own.
func (e *randomEnv) scheduleLife(i int, attempt uint32) {
	c := e.spec.At(i)
	alive := func() bool { return e.records[i].State == api.StateRunning && e.records[i].Attempt == attempt }
	if c.PostStart {
		e.after(e.rnd(time.Second), func() error {
			if !alive() {
				return nil
			}
			e.postStartOK[i] = true
			return e.step(api.Input{Kind: api.InPostStartDone, Container: i, OK: true})
		})
	}
	if c.StartupProbe != nil {
		fail := e.r.IntN(8) == 0
		e.after(e.rnd(3*time.Second), func() error {
			if !alive() {
				return nil
			}
			res := api.ProbeSuccess
			if fail {
				res = api.ProbeFailure
			} else {
				e.startupOK[i] = true
			}
			return e.step(api.Input{Kind: api.InProbe, Container: i, Probe: api.ProbeStartup, Result: res})
		})
	}
	if c.ReadinessProbe != nil {
		e.after(e.rnd(4*time.Second), func() error {
			if !alive() {
				return nil
			}
			return e.step(api.Input{Kind: api.InProbe, Container: i, Probe: api.ProbeReadiness, Result: api.ProbeSuccess})
		})
	}
	var runFor time.Duration
	switch c.Role {
	case api.RoleInit:
		runFor = e.rnd(3 * time.Second)
	case api.RoleSidecar:
		if e.r.IntN(4) != 0 {
			return
		}
		runFor = e.rnd(30 * time.Second)
	default:
		runFor = e.rnd(40 * time.Second)
	}
	code := int32(0)
	if e.r.IntN(5) == 0 {
		code = 1
	}
	e.after(runFor, func() error {
		if !alive() {
			return nil
		}
		return e.exit(i, attempt, code)
	})
}

func (e *randomEnv) exit(i int, attempt uint32, code int32) error {
	r := &e.records[i]
	if r.State != api.StateRunning || r.Attempt != attempt {
		return nil
	}
	r.State, r.ExitCode, r.FinishedAt = api.StateExited, code, e.now
	r.Reason = api.ReasonCompleted
	if code != 0 {
		r.Reason = api.ReasonError
	}
	if e.spec.At(i).Role == api.RoleInit && code == 0 && r.SandboxAttempt == e.sandbox.Attempt {
		e.completed[i] = true
	}
	return e.step(api.Input{Kind: api.InContainer, Container: i, Record: *r})
}

func (e *randomEnv) restartKubelet() error {
	last := e.m.Status()
	m, err := newMachineForTest(e.spec, e.gates)
	if err != nil {
		return err
	}
	e.m = m
	// Hooks in flight died with the old kubelet.
	for i := range e.preStopBusy {
		e.preStopBusy[i] = false
	}
	fmt.Fprintf(&e.log, "%v restart-kubelet\n", time.Duration(e.now))
	return e.step(api.Input{Kind: api.InRelist, Sandbox: e.sandbox, Records: append([]api.ContainerRecord(nil), e.records...), Status: last, Deleted: e.deleted, Grace: e.deleteGrace})
}

func (e *randomEnv) gcInits() error {
	fmt.Fprintf(&e.log, "%v gc\n", time.Duration(e.now))
	for i := range e.spec.Init {
		if e.spec.Init[i].Role == api.RoleInit && e.records[i].State == api.StateExited {
			e.records[i] = api.ContainerRecord{}
			if err := e.step(api.Input{Kind: api.InContainer, Container: i}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *randomEnv) loseSandbox() error {
	if e.sandbox.State != api.SandboxReady {
		return nil
	}
	fmt.Fprintf(&e.log, "%v sandbox-lost\n", time.Duration(e.now))
	e.sandbox.State = api.SandboxLost
	for i := range e.records {
		if e.records[i].State == api.StateRunning {
			e.records[i].State, e.records[i].ExitCode, e.records[i].Reason, e.records[i].FinishedAt = api.StateExited, 137, api.ReasonError, e.now
		}
		e.preStopBusy[i] = false
	}
	return e.step(api.Input{Kind: api.InRelist, Sandbox: e.sandbox, Records: append([]api.ContainerRecord(nil), e.records...), Status: e.m.Status(), Deleted: e.deleted, Grace: e.deleteGrace})
}

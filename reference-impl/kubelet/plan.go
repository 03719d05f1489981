package kubelet

import (
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Timing constants of the kubelet that the invariants name.
const (
	// MinimumGracePeriod is minimumGracePeriodInSeconds in
	// kuberuntime_container.go: a stop never gets less (INV-T5).
	MinimumGracePeriod = 2 * time.Second
	// InitialBackoff and MaxBackoff are the crash-loop backoff bounds
	// (INV-R2): 10 s doubling to 300 s.
	InitialBackoff = 10 * time.Second
	MaxBackoff     = 300 * time.Second
	// BackoffResetAfter: a container that ran this long restarts without
	// backoff (INV-R2 "reset after 10 min of running").
	BackoffResetAfter = 10 * time.Minute
	// InitialImageBackoff and MaxImageBackoff bound the image pull
	// back-off (kubelet.go imageBackOffPeriod, MaxImageBackOff); an entry
	// unused for 2 × MaxImageBackoff starts over (flowcontrol.Backoff
	// hasExpired).
	InitialImageBackoff = 10 * time.Second
	MaxImageBackoff     = 300 * time.Second
	// KubeletRestartGracePeriod: a container that started at least this
	// long before the kubelet did keeps its Ready across the kubelet
	// restart (prober_manager.go kubeletRestartGracePeriod).
	KubeletRestartGracePeriod = 10 * time.Second
)

// kind is the part a container plays under the active policy. Policies map
// spec roles onto kinds once per machine, so the planner branches on kinds
// and never re-derives policy semantics per container per step.
type kind uint8

const (
	kindInit kind = iota
	kindSidecar
	kindMain
	// kindSidecar2019 is a sidecar under the 2019 proposal: a container with
	// lifecycle.type Sidecar, started after init containers and before mains.
	kindSidecar2019
)

// kindsFor maps the spec's roles to kinds under gates.
func kindsFor(spec *api.PodSpec, g api.Gates) []kind {
	return appendKinds(make([]kind, 0, spec.Len()), spec, g)
}

// setKinds stores kindsFor(spec, g) in dst (spec is valid: at most
// api.MaxContainers containers).
func setKinds(dst *[api.MaxContainers]kind, spec *api.PodSpec, g api.Gates) {
	appendKinds(dst[:0], spec, g)
}

// appendKinds is kindsFor appending to dst (storage reuse).
func appendKinds(dst []kind, spec *api.PodSpec, g api.Gates) []kind {
	ks := dst[:0]
	for range spec.Len() {
		ks = append(ks, kindMain)
	}
	for i := range ks {
		switch spec.At(i).Role {
		case api.RoleInit:
			ks[i] = kindInit
		case api.RoleMain:
			ks[i] = kindMain
		case api.RoleSidecar:
			switch g.Policy {
			case api.PolicyNone:
				// No sidecar support: the sidecar is an ordinary container.
				ks[i] = kindMain
			case api.PolicyKEP753v2019:
				ks[i] = kindSidecar2019
			default:
				ks[i] = kindSidecar
			}
		}
	}
	return ks
}

// planner holds the arguments of one planning step. It is a value on the
// caller's stack; nothing escapes, so planning does not allocate.
type planner struct {
	spec  *api.PodSpec
	kinds []kind
	obs   *api.Observed
	g     api.Gates
	now   api.Time
	out   *api.Plan
	// startAsked says this plan already asks for a container start: the
	// kubelet starts one container at a time (see start).
	startAsked bool
}

// Plan computes what the kubelet should do for one pod from the spec and
// the observed state alone, like computePodActions. A restarted kubelet is
// Plan with an Observed whose kubelet-local fields are zero.
func Plan(spec *api.PodSpec, obs *api.Observed, g api.Gates, now api.Time) api.Plan {
	var out api.Plan
	PlanInto(&out, spec, kindsFor(spec, g), obs, g, now)
	return out
}

// PlanInto is Plan writing into out, reusing out.Actions' storage. kinds
// must come from kindsFor(spec, g).
func PlanInto(out *api.Plan, spec *api.PodSpec, kinds []kind, obs *api.Observed, g api.Gates, now api.Time) {
	out.Actions = out.Actions[:0]
	out.KillPod, out.KillReason, out.TermComplete = false, api.KillNone, false
	out.WakeAt = api.Never
	p := planner{spec: spec, kinds: kinds, obs: obs, g: g, now: now, out: out}
	p.plan()
	out.Status = p.status()
}

func (p *planner) wake(t api.Time) {
	if t < p.out.WakeAt {
		p.out.WakeAt = t
	}
}

func (p *planner) act(a api.Action) { p.out.Actions = append(p.out.Actions, a) }

// rec returns container i's record if it belongs to the current sandbox;
// records of earlier sandboxes are purged init containers or dead mains
// (INV-F3) and never count as progress in the current one.
func (p *planner) rec(i int) *api.ContainerRecord {
	r := &p.obs.Containers[i].Record
	if r.State == api.StateNone || r.SandboxAttempt != p.obs.Sandbox.Attempt {
		return nil
	}
	return r
}

func (p *planner) running(i int) bool {
	r := p.rec(i)
	return r != nil && r.State == api.StateRunning
}

func (p *planner) restartOnFailure() bool { return p.spec.RestartPolicy != api.RestartNever }

// probeKillRestart reports whether running main i, killed for a failed
// liveness or startup probe, is started again (computePodActions):
// shouldRestartOnFailure(pod), or under ContainerRestartRules the
// container's own restartPolicy when it has one ("for probe failures, use
// container-level restart policy only"; its rules are not evaluated: the
// container was running).
func (p *planner) probeKillRestart(i int) bool {
	return p.restartPolicyOf(i) != api.RestartNever
}

// restartPolicyOf is container i's restart policy: its own under
// ContainerRestartRules when it has one, else the pod's.
func (p *planner) restartPolicyOf(i int) api.RestartPolicy {
	if rp := p.spec.At(i).RestartPolicy; p.g.ContainerRestartRules && rp != nil {
		return *rp
	}
	return p.spec.RestartPolicy
}

func (p *planner) plan() {
	o := p.obs
	if o.Pod.Done {
		return
	}
	if o.Term.Active {
		p.planTermination()
		return
	}
	if o.Pod.Deleted {
		// The host begins termination on delete; a plan without it is a
		// host bug, but do not start anything for a deleted pod.
		p.out.KillPod, p.out.KillReason = true, api.KillPodDeleted
		return
	}
	if p.mainRecordGone() && p.phase(p.startedSet()).Terminal() {
		// SyncPod returns before computePodActions when the status it
		// generated has a terminal phase ("If the pod is terminal, we
		// don't need to continue to setup the pod", kubelet.go), and the
		// pod worker kills the pod. The rules below reach the same end
		// from the records, except for a main whose record is gone
		// (container GC; removed while no kubelet ran), which they start
		// again (no status: ShouldContainerBeRestarted) although its API
		// status ends the pod: a Never pod whose last main vanished while
		// the kubelet was down is Failed (main_gone_while_kubelet_down.txt).
		p.out.KillPod, p.out.KillReason = true, api.KillPodCompleted
		return
	}
	switch o.Sandbox.State {
	case api.SandboxNone:
		if !o.Pod.SandboxRequested {
			p.act(api.Action{Kind: api.ActCreateSandbox, Attempt: 0})
		}
		return
	case api.SandboxLost:
		p.planSandboxLost()
		return
	}
	if o.Pod.SandboxRequested {
		return
	}
	if p.resetTriggered() && p.resetDecided(p.phase(p.startedSet())) {
		p.planReset()
		return
	}
	// A reset not decided yet (a start in flight) leaves this sync to go
	// on as it would (no start: one is in flight).
	p.planSingleKills()
	var initialized bool
	if p.g.Policy == api.PolicyKEP753v2019 {
		initialized = p.planInit2019()
	} else {
		initialized = p.planInit()
	}
	if p.out.KillPod || !initialized {
		return
	}
	p.planMains()
}

// planSandboxLost implements INV-F3: kill what still runs, then create a
// new sandbox and re-run initialization from the first init container, or
// end the pod under restartPolicy Never once containers were created.
func (p *planner) planSandboxLost() {
	o := p.obs
	anyRunning := false
	anyRecord := false
	for i := range o.Containers {
		r := &o.Containers[i].Record
		if r.State != api.StateNone {
			anyRecord = true
		}
		if r.State == api.StateRunning {
			anyRunning = true
		}
	}
	if anyRunning {
		p.out.KillPod, p.out.KillReason = true, api.KillSandboxLost
		return
	}
	if !p.restartOnFailure() && anyRecord {
		// Never: do not create a sandbox; the pod ends (computePodActions:
		// !shouldRestartOnFailure && attempt != 0 && statuses != 0).
		p.out.KillPod, p.out.KillReason = true, api.KillPodCompleted
		return
	}
	if p.noMainToStart() {
		// computePodActions: "We should not create a sandbox, and just
		// kill the pod if initialization is done and there is no container
		// to start": every main ran once and succeeded, init containers or
		// not (the inits are not re-run for nothing).
		p.out.KillPod, p.out.KillReason = true, api.KillPodCompleted
		return
	}
	if !o.Pod.SandboxRequested {
		p.act(api.Action{Kind: api.ActCreateSandbox, Attempt: o.Sandbox.Attempt + 1})
	}
}

// mainRecordGone reports whether a main container's record is gone while
// its API status keeps its termination (Gone): the one case where the
// phase can be terminal while the planner would start a main.
func (p *planner) mainRecordGone() bool {
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		if c := &p.obs.Containers[i]; c.Gone && c.Record.State == api.StateNone && p.kinds[i] == kindMain {
			return true
		}
	}
	return false
}

// noMainToStart reports whether a lost sandbox has no main left to start
// (computePodActions' containersToStart stays empty): every main runs
// once and has succeeded.
func (p *planner) noMainToStart() bool {
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		if p.kinds[i] != kindMain {
			continue
		}
		// runOnce: OnFailure, the pod's or the container's own.
		runOnce := p.restartPolicyOf(i) == api.RestartOnFailure
		r := &p.obs.Containers[i].Record
		if !runOnce || r.State != api.StateExited || r.ExitCode != 0 {
			return false
		}
	}
	return true
}

// planSingleKills continues single-container kills (probe failure, spec
// change, failed postStart, unknown state): preStop first, then stop with
// what remains of the container's own budget, never less than 2 s. These
// kills carry no ordering (SEMANTICS.md §2.5).
func (p *planner) planSingleKills() {
	for i := range p.obs.Containers {
		c := &p.obs.Containers[i]
		if c.PostStart == api.HookFailed && !c.Killing && !c.StopRequested && p.running(i) {
			// startContainer step 4 (kuberuntime_container.go): a failed
			// postStart hook kills the container with killContainer(...,
			// reasonFailedPostStartHook, nil, nil): the preStop hook runs
			// if the spec has one, with the grace of setTerminationGrace-
			// Period (the deletion grace once the pod is deleted, else
			// the pod's); the restart policy decides what follows.
			grace := p.podGrace()
			if p.obs.Pod.Deleted {
				grace = p.obs.Pod.DeleteGrace
			}
			p.beginKill(i, api.KillFailedPostStartHook, grace, false)
			continue
		}
		if !c.Killing || c.StopRequested {
			continue
		}
		r := p.rec(i)
		if r == nil || (r.State != api.StateRunning && r.State != api.StateUnknown) {
			continue
		}
		p.advanceKill(i, c.KillDeadline, c.KillReason)
	}
}

// advanceKill moves container i's kill forward: run its preStop, then stop
// it once the preStop is done or its deadline passed.
func (p *planner) advanceKill(i int, deadline api.Time, reason api.KillReason) {
	c := &p.obs.Containers[i]
	spec := p.spec.At(i)
	if spec.PreStop && c.PreStop == api.HookNone && p.now < deadline && p.running(i) {
		p.act(api.Action{Kind: api.ActRunPreStop, Container: i, Reason: reason})
		p.wake(deadline)
		return
	}
	if c.PreStop == api.HookRunning && p.now < deadline {
		p.wake(deadline)
		return
	}
	p.act(api.Action{Kind: api.ActStopContainer, Container: i, Grace: stopGrace(deadline, p.now), Reason: reason})
}

// stopGrace is G_final = max(G_remaining, 2 s).
func stopGrace(deadline, now api.Time) time.Duration {
	g := deadline.Sub(now)
	if g < MinimumGracePeriod {
		return MinimumGracePeriod
	}
	return g
}

// beginKill starts a single-container kill of i (the host records it when
// it sees the action; see Machine.issue).
func (p *planner) beginKill(i int, reason api.KillReason, grace time.Duration, restart bool) {
	c := &p.obs.Containers[i]
	if c.Killing || c.StopRequested {
		return
	}
	deadline := p.now.Add(grace)
	spec := p.spec.At(i)
	// killContainer runs the preStop hook only "if there is enough time
	// to run it": a grace of 0 stops the container at once, with 2 s.
	if spec.PreStop && p.running(i) && grace > 0 {
		p.act(api.Action{Kind: api.ActRunPreStop, Container: i, Reason: reason, Grace: grace, Restart: restart})
		p.wake(deadline)
		return
	}
	p.act(api.Action{Kind: api.ActStopContainer, Container: i, Grace: stopGrace(deadline, p.now), Reason: reason, Restart: restart})
}

func (p *planner) podGrace() time.Duration { return p.spec.TerminationGracePeriod }

func (p *planner) probeGrace(i int, k api.ProbeKind) time.Duration {
	if pr := p.spec.At(i).Probe(k); pr != nil && pr.TerminationGracePeriod > 0 && p.g.Bug != api.BugProbeGraceIgnored {
		return pr.TerminationGracePeriod
	}
	return p.podGrace()
}

// start asks for container i to be started unless a start is in flight or
// crash-loop backoff holds it back (INV-R2).
//
// The kubelet starts containers one by one: SyncPod loops over
// InitContainersToStart, then ContainersToStart (kuberuntime_manager.go,
// steps 8 and 9), and startContainer (kuberuntime_container.go) returns
// only once the runtime started the process and the postStart hook
// returned (INV-S3). So while any container of the pod is being started
// or runs its postStart hook, nothing else is started, and one plan asks
// for one start; the planner is called in the kubelet's order (init
// containers in spec order, then mains), so the first start asked for is
// the kubelet's first. The next start follows when the runtime reports
// the container running (InContainer) or its hook done (InPostStartDone).
func (p *planner) start(i int) {
	c := &p.obs.Containers[i]
	if c.StartPending || c.Killing || p.startAsked || p.startInFlight() {
		return
	}
	r := &c.Record
	attempt := c.NextAttempt
	if r.State != api.StateNone && r.Attempt+1 > attempt {
		attempt = r.Attempt + 1
	}
	if until, wait := p.backoffUntil(i); wait {
		p.wake(until)
		return
	}
	if until, wait := p.pullBackoffUntil(i); wait {
		// EnsureImageExists fails at once with ImagePullBackOff: the
		// start fails, nothing is created, and SyncPod goes on with the
		// next main (a regular init or sidecar holds everything after it:
		// nothing after it is in InitContainersToStart).
		p.wake(until)
		return
	}
	p.act(api.Action{Kind: api.ActStartContainer, Container: i, Attempt: attempt})
	p.startAsked = true
}

// startInFlight reports whether the pod worker is still inside a
// container start: a start requested and not yet reported, or a postStart
// hook of a running container in this sandbox.
func (p *planner) startInFlight() bool {
	for i := range p.obs.Containers {
		c := &p.obs.Containers[i]
		if c.StartPending || ((c.PostStart == api.HookRunning || c.PostStart == api.HookFailed) && p.running(i)) {
			return true
		}
	}
	return false
}

// backoffUntil reports whether a restart of i must wait, and until when.
// The first restart after an exit is immediate; later ones wait 10 s,
// 20 s, ... 300 s after the exit, as the kubelet's backOff does.
func (p *planner) backoffUntil(i int) (api.Time, bool) {
	c := &p.obs.Containers[i]
	r := &c.Record
	if r.State != api.StateExited || c.Backoff == 0 || p.purged(i) {
		return 0, false
	}
	if r.FinishedAt.Sub(r.StartedAt) >= BackoffResetAfter {
		return 0, false
	}
	until := r.FinishedAt.Add(c.Backoff)
	if p.now < until {
		return until, true
	}
	return 0, false
}

// pullBackoffUntil reports whether the image pull back-off of container i
// still runs, and until when.
func (p *planner) pullBackoffUntil(i int) (api.Time, bool) {
	c := &p.obs.Containers[i]
	if c.PullBackoff == 0 {
		return 0, false
	}
	until := c.PullFailedAt.Add(c.PullBackoff)
	return until, p.now < until
}

// NextImageBackoff is the image back-off after a failed pull at now, given
// the entry's current delay and its last failure (flowcontrol.Backoff.Next:
// 10 s, then doubling up to 300 s; an entry older than 2 × 300 s starts
// over).
func NextImageBackoff(cur time.Duration, last, now api.Time) time.Duration {
	if cur == 0 || now.Sub(last) > 2*MaxImageBackoff {
		return InitialImageBackoff
	}
	return min(2*cur, MaxImageBackoff)
}

// purged reports whether container i is an init container whose record
// belongs to an earlier sandbox: the kubelet removed it when it recreated
// the sandbox (SyncPod: purgeInitContainers), so doBackOff finds no exited
// container to measure a backoff from.
func (p *planner) purged(i int) bool {
	r := &p.obs.Containers[i].Record
	return i < len(p.spec.Init) && r.State != api.StateNone && r.SandboxAttempt != p.obs.Sandbox.Attempt
}

// nextBackoff is the delay that will hold back the restart after the one
// being issued now, given the current delay and how long the container ran.
func nextBackoff(cur time.Duration, ranFor time.Duration) time.Duration {
	if cur == 0 || ranFor >= BackoffResetAfter {
		return InitialBackoff
	}
	if n := 2 * cur; n < MaxBackoff {
		return n
	}
	return MaxBackoff
}

// mainsSayInitialized is computeInitContainerActions' podHasInitialized
// seed, kubecontainer.HasAnyActiveRegularContainerStarted: a main
// container record of any state in the current sandbox means every init
// container ran at some point, even if its record is gone (INV-F1). Mains
// of an earlier sandbox do not count (kubernetes#120247: after a node
// reboot they belong to the old sandbox).
func (p *planner) mainsSayInitialized() bool {
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		r := p.rec(i)
		if p.g.Bug == api.BugReinitMainsFirst {
			// Bug replica: any main record, from any sandbox, counts.
			r = &p.obs.Containers[i].Record
			if r.State != api.StateNone {
				return true
			}
			continue
		}
		if r != nil && p.kinds[i] == kindMain {
			return true
		}
		// SyncPod creates containers synchronously, so the kubelet never
		// sees a main start in flight: a requested start counts as Created.
		if p.kinds[i] == kindMain && p.obs.Containers[i].StartPending {
			return true
		}
	}
	return false
}

// planInit is computeInitContainerActions for the final design: it scans
// init containers in reverse (completed ones may have been garbage
// collected), starts the next one, restarts sidecars that are not running,
// and kills sidecars whose startup or liveness probe failed. It reports
// whether the pod has initialized.
func (p *planner) planInit() bool {
	spec := p.spec
	first, last := p.nextInit(-1), p.lastInit()
	podHasInitialized := p.mainsSayInitialized()
	if p.g.Bug == api.BugRerunInitAfterGC && p.rerunMissingInit() {
		return false
	}
	if first < 0 {
		return true // no init containers under this policy
	}
	prev := podHasInitialized
	// toStart collects init containers to start; the scan is in reverse.
	var toStart api.Set
	for i := last; i >= 0; i-- {
		k := p.kinds[i]
		if k == kindMain {
			// PolicyNone: the "sidecar" is an ordinary container, started
			// with the mains.
			continue
		}
		c := &p.obs.Containers[i]
		r := p.rec(i)
		if r == nil && c.StartPending {
			// The kubelet's SyncPod starts containers synchronously, so it
			// never sees a start in flight; here a requested start counts
			// as the latest init container the runtime knows of, and
			// nothing before it is re-run (INV-F1 edge, F2).
			prev = true
			continue
		}
		if r == nil {
			if k == kindInit && c.Gone && c.GoneExitCode != 0 && p.initFailureEndsPod(i, c.GoneExitCode) {
				// Its record is gone but the API status shows it failed:
				// the status SyncPod generates first is terminal (getPhase),
				// and SyncPod returns before computePodActions, which sees
				// only the runtime and would start it again.
				p.out.KillPod, p.out.KillReason = true, api.KillInitFailed
				return false
			}
			if prev && k == kindSidecar {
				toStart = toStart.With(i)
			}
			continue
		}
		if prev && k != kindSidecar {
			continue
		}
		next := p.nextInit(i)
		switch r.State {
		case api.StateCreated:
			// Stuck in Created after a transient runtime failure: start it
			// again (INV-F7, PR #126543).
			if !c.StartPending {
				toStart = toStart.With(i)
			}
		case api.StateRunning:
			if k == kindInit && !c.Killing {
				// A regular init container: wait for it to finish; it is
				// resized in place (InPlacePodVerticalScalingInitContainers,
				// GA in 1.37), never restarted for it.
				p.resize(i)
				break
			}
			if k != kindSidecar || c.Killing {
				break
			}
			if spec.Init[i].StartupProbe != nil && !c.StartedSeen {
				res := c.Probe[api.ProbeStartup]
				if res != api.ProbeSuccess {
					if res == api.ProbeFailure {
						p.beginKill(i, api.KillStartupProbe, p.probeGrace(i, api.ProbeStartup), true)
					}
					break
				}
			}
			if !p.postStartDone(i) {
				break
			}
			if next < 0 {
				podHasInitialized = true
			} else if !prev {
				toStart = toStart.With(next)
			}
			if c.Probe[api.ProbeLiveness] == api.ProbeFailure {
				p.beginKill(i, api.KillLivenessProbe, p.probeGrace(i, api.ProbeLiveness), true)
				break
			}
			if img := spec.Init[i].Image; img != "" && r.Image != "" && img != r.Image {
				// Restart running sidecars whose definition changed (INV-U1).
				p.beginKill(i, api.KillSpecChanged, p.podGrace(), true)
				break
			}
			p.resize(i)
		case api.StateExited:
			if k == kindSidecar {
				if p.g.Bug == api.BugNoSidecarRestart && p.spec.RestartPolicy == api.RestartNever {
					break
				}
				toStart = toStart.With(i)
				break
			}
			// isInitContainerFailed: a non-zero exit, or OOMKilled
			// whatever the exit code.
			if r.ExitCode != 0 || r.Reason == api.ReasonOOMKilled {
				if !p.containerShouldRestart(i, r.ExitCode) {
					p.out.KillPod, p.out.KillReason = true, api.KillInitFailed
					return false
				}
				toStart = toStart.With(i)
				break
			}
			if next < 0 {
				podHasInitialized = true
			} else {
				toStart = toStart.With(next)
			}
		default: // Unknown (INV-F8)
			// A regular init in Unknown state restarts by its own
			// restartPolicy under ContainerRestartRules, never by its rules
			// (no exit code to match), else by the pod's.
			if k != kindSidecar && p.restartPolicyOf(i) == api.RestartNever {
				p.out.KillPod, p.out.KillReason = true, api.KillInitFailed
				return false
			}
			p.beginKill(i, api.KillUnknownState, p.podGrace(), true)
		}
		prev = true
	}
	if !prev {
		// No init container has started yet: start the first one.
		toStart = toStart.With(first)
	}
	for i := first; i >= 0; i = p.nextInit(i) {
		if toStart.Has(i) {
			p.start(i)
		}
	}
	return podHasInitialized
}

// nextInit returns the index of the first init container after i that is
// an init container under the policy, or -1.
func (p *planner) nextInit(i int) int {
	for j := i + 1; j < len(p.spec.Init); j++ {
		if p.kinds[j] != kindMain {
			return j
		}
	}
	return -1
}

// lastInit returns the index of the last init container under the policy,
// or -1.
func (p *planner) lastInit() int {
	for j := len(p.spec.Init) - 1; j >= 0; j-- {
		if p.kinds[j] != kindMain {
			return j
		}
	}
	return -1
}

// rerunMissingInit is bug replica BugRerunInitAfterGC: a regular init
// container without a record is started again even though the pod has
// initialized, as kubelets before PR #96572 did after container GC.
func (p *planner) rerunMissingInit() bool {
	if !p.mainsSayInitialized() {
		return false
	}
	for i := range p.spec.Init {
		if p.kinds[i] == kindInit && p.rec(i) == nil {
			p.start(i)
			return true
		}
	}
	return false
}

func (p *planner) postStartDone(i int) bool {
	h := p.obs.Containers[i].PostStart
	return h != api.HookRunning && h != api.HookFailed
}

// started is the Started flag: running, postStart returned and the startup
// probe (if any) succeeded.
func (p *planner) started(i int) bool {
	if !p.running(i) || !p.postStartDone(i) {
		return false
	}
	c := &p.obs.Containers[i]
	if p.spec.At(i).StartupProbe == nil || c.StartedSeen {
		return true
	}
	return c.Probe[api.ProbeStartup] == api.ProbeSuccess
}

// ready is the Ready flag: started and the readiness probe (if any)
// succeeded; a restarted kubelet keeps the published Ready until the
// first readiness result (ReadySeen, INV-F1).
func (p *planner) ready(i int) bool {
	if !p.started(i) {
		return false
	}
	if p.spec.At(i).ReadinessProbe == nil {
		return true
	}
	c := &p.obs.Containers[i]
	switch c.Probe[api.ProbeReadiness] {
	case api.ProbeSuccess:
		return true
	case api.ProbeUnknown:
		return c.ReadySeen
	}
	return false
}

// planInit2019 is initialization under the 2019 proposal: regular init
// containers in order, then every sidecar at once, then the mains once all
// sidecars are Ready. Sidecars obey the pod restart policy.
func (p *planner) planInit2019() bool {
	n := len(p.spec.Init)
	for i := 0; i < n; i++ {
		if p.kinds[i] != kindInit {
			continue
		}
		if p.mainsSayInitialized() {
			break
		}
		r := p.rec(i)
		if r == nil || r.State == api.StateCreated {
			p.start(i)
			return false
		}
		switch r.State {
		case api.StateRunning:
			return false
		case api.StateExited:
			if r.ExitCode == 0 {
				continue
			}
			if !p.restartOnFailure() {
				p.out.KillPod, p.out.KillReason = true, api.KillInitFailed
				return false
			}
			p.start(i)
			return false
		default:
			p.beginKill(i, api.KillUnknownState, p.podGrace(), true)
			return false
		}
	}
	allReady := true
	mainsUp := p.anyMainStarted()
	for i := 0; i < n; i++ {
		if p.kinds[i] != kindSidecar2019 {
			continue
		}
		c := &p.obs.Containers[i]
		r := p.rec(i)
		switch {
		case r == nil || r.State == api.StateCreated:
			p.start(i)
			allReady = false
		case r.State == api.StateExited:
			if p.shouldRestart(i) {
				p.start(i)
			}
			allReady = false
		case r.State == api.StateRunning:
			if c.Probe[api.ProbeStartup] == api.ProbeFailure && !c.Killing {
				p.beginKill(i, api.KillStartupProbe, p.probeGrace(i, api.ProbeStartup), p.restartOnFailure())
			} else if c.Probe[api.ProbeLiveness] == api.ProbeFailure && !c.Killing {
				p.beginKill(i, api.KillLivenessProbe, p.probeGrace(i, api.ProbeLiveness), p.restartOnFailure())
			}
			if !p.ready(i) {
				allReady = false
			}
		default:
			p.beginKill(i, api.KillUnknownState, p.podGrace(), true)
			allReady = false
		}
	}
	// Ordering is enforced only at startup (KEP-20 "only on startup"):
	// once mains run, a sidecar restart does not hold them back.
	return allReady || mainsUp
}

// shouldRestart is ShouldContainerBeRestarted for a container that is not
// running.
func (p *planner) shouldRestart(i int) bool {
	c := &p.obs.Containers[i]
	r := &c.Record
	switch r.State {
	case api.StateNone, api.StateCreated, api.StateUnknown:
		return true
	case api.StateRunning:
		return false
	}
	if c.KillRestart {
		return true
	}
	return p.containerShouldRestart(i, r.ExitCode)
}

// containerShouldRestart is ContainerShouldRestart: with the
// ContainerRestartRules gate and a container-level policy, the first
// matching restartPolicyRules entry decides (INV-RR1), else the container
// policy (INV-RR2); otherwise the pod policy.
func (p *planner) containerShouldRestart(i int, code int32) bool {
	c := p.spec.At(i)
	if p.g.ContainerRestartRules && c.RestartPolicy != nil {
		if r := c.MatchRule(code); r != nil {
			switch r.Action {
			case api.RuleRestart:
				return true
			case api.RuleRestartAllContainers:
				if p.g.RestartAllContainersOnContainerExits {
					return true
				}
			}
		}
	}
	switch p.restartPolicyOf(i) {
	case api.RestartNever:
		return false
	case api.RestartOnFailure:
		return code != 0
	}
	return true
}

// planMains is the second half of computePodActions: start or restart
// main containers, kill those that failed probes or changed, and kill the
// pod when no main container is running or will be restarted, so that
// sidecars do not keep it alive (INV-R6).
func (p *planner) planMains() {
	keep := 0
	toStart := 0
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		p.planMain(i, &keep, &toStart)
	}
	if p.g.Policy == api.PolicyNone {
		// Sidecars demoted to ordinary containers live in Init but behave
		// as mains.
		for i := range p.spec.Init {
			if p.kinds[i] == kindMain {
				p.planMain(i, &keep, &toStart)
			}
		}
	}
	// Under the 2019 proposal sidecars do not keep the pod alive either:
	// only mains are counted here.
	if keep == 0 && toStart == 0 {
		p.out.KillPod, p.out.KillReason = true, api.KillPodCompleted
		p.out.Actions = p.out.Actions[:0]
	}
}

func (p *planner) planMain(i int, keep, toStart *int) {
	c := &p.obs.Containers[i]
	r := &c.Record
	if r.State != api.StateRunning {
		if r.State == api.StateUnknown && !c.Killing && !c.StopRequested {
			p.beginKill(i, api.KillUnknownState, p.podGrace(), true)
			*toStart++
			return
		}
		if p.shouldRestart(i) {
			*toStart++
			p.start(i)
		}
		return
	}
	if c.Killing {
		if c.KillRestart || p.restartOnFailure() {
			*toStart++
		}
		return
	}
	spec := p.spec.At(i)
	restart := p.probeKillRestart(i)
	var reason api.KillReason
	grace := p.podGrace()
	switch {
	case spec.Image != "" && r.Image != "" && spec.Image != r.Image:
		reason, restart = api.KillSpecChanged, true
	case c.Probe[api.ProbeLiveness] == api.ProbeFailure:
		reason, grace = api.KillLivenessProbe, p.probeGrace(i, api.ProbeLiveness)
	case c.Probe[api.ProbeStartup] == api.ProbeFailure:
		reason, grace = api.KillStartupProbe, p.probeGrace(i, api.ProbeStartup)
	case !p.resize(i):
		// A resize restart: the container is started again whatever the
		// restart policy (computePodResizeAction puts it in
		// ContainersToStart).
		*toStart++
		return
	default:
		*keep++
		return
	}
	if restart {
		*toStart++
	}
	p.beginKill(i, reason, grace, restart)
}

// resize is computePodResizeAction for running container i: when its
// spec resources differ from what the runtime applied, it is resized in
// place (CRI UpdateContainerResources), or, if a changed resource's
// resizePolicy is RestartContainer, killed and restarted (INV-U2; a
// regular init container cannot have that policy). It reports whether the
// container is kept.
func (p *planner) resize(i int) bool {
	c := &p.obs.Containers[i]
	r := p.rec(i)
	want := p.spec.At(i).Resources
	if r == nil || r.State != api.StateRunning || c.Killing || c.StopRequested || r.Resources == want {
		return true
	}
	if p.spec.At(i).ResizePolicy.RestartFor(r.Resources, want) && p.kinds[i] != kindInit {
		p.beginKill(i, api.KillResize, p.podGrace(), true)
		return false
	}
	if !c.ResizePending {
		p.act(api.Action{Kind: api.ActResizeContainer, Container: i, Resources: want})
	}
	return true
}

// anyMainStarted reports whether a main container has a record in the
// current sandbox (it started at some point in this sandbox).
func (p *planner) anyMainStarted() bool {
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		if p.kinds[i] == kindMain && p.rec(i) != nil {
			return true
		}
	}
	return false
}

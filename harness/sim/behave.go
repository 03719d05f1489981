package sim

import (
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
)

// Random streams. Every entity draws from its own stream, derived with
// harness/behavior's stream keys from the trial seed and the entity's
// names, never from a shared RNG: adding a node, a pod, a workload or a
// fault does not perturb the draws of the others.
//
//	container attempt  behavior.ContainerKey(seed, pod, container, attempt)
//	pod lifetime       behavior.LifetimeKey(seed, pod)
//	arrivals           behavior.ArrivalKey(seed, workload)
//	fault selection    behavior.FaultKey(seed, label, index)

// drawAttempt samples container c's behaviour for one attempt into its
// compact plan (cs.plan and the fields of cs that go with it) and returns
// the start latency. It reuses the engine's RNG
// (reseeded), so it does not allocate.
func (e *engine) drawAttempt(p *pod, c int, attempt uint32, cs *ctr) time.Duration {
	ws := &e.wls[p.wl]
	p.key.Container(p.spec.At(c).Name, attempt).Reseed(e.pcg) // behavior.ContainerKey
	b := &defaultBehavior
	if j := ws.beh[c]; j >= 0 {
		b = &ws.cfg.Behavior[j].Behavior
	}
	d := b.ForAttempt(attempt).Draw(e.rnd)
	cs.plan = plan{
		startupAfter: d.StartupAfter, readyAfter: d.ReadyAfter, livenessFailAfter: d.LivenessFailAfter,
		termHandling: d.TermHandling, preStop: d.PreStop, postStart: d.PostStart, exitAfter: d.ExitAfter,
		exitCode: d.ExitCode, termExitCode: d.TermExitCode,
	}
	cs.exitReason, cs.postStartFails, cs.preStopFails = reasonOf(d.ExitReason), d.PostStartFails, d.PreStopFails
	e.wireDraw(p, c, &cs.plan)
	return d.StartLatency
}

// drawLifetime samples a pod's lifetime.
func (e *engine) drawLifetime(p *pod) int64 {
	p.key.Lifetime().Reseed(e.pcg) // behavior.LifetimeKey
	return int64(e.wls[p.wl].cfg.Lifetime.Sample(e.rnd))
}

var defaultBehavior = behavior.Default()

// distIsZero: the zero Dist (fixed 0) and never both mean "not set" for a
// lifetime.
func distIsZero(d *behavior.Dist) bool { return d.IsZero() || d.IsNever() }

func validateBehavior(b *behavior.Container) error { return b.Validate() }

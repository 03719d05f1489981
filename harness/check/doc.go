// Package check decides the sidecar invariants of SEMANTICS.md §2 (all 47:
// INV-S*, R*, C*, P*, T*, H*, Q*, F*, U*) and the restart-rule ones (RR,
// RA) over recorded histories, in the style of
// porcupine and Jepsen's checker: history in, verdict out, nothing else;
// and three user-level guarantees (user.go: what the user of a sidecar
// wanted, judged the same way for the native design and the workarounds
// it replaced), whose findings are unmet, never a violation.
//
// The unit of work is one pod (porcupine's P-compositionality): its own
// events interleaved with the node-level and fault events of its node, as
// history.Partitioner delivers them. BuildPod digests that slice once into
// a Pod view (per-container attempts, sandboxes, termination windows, fault
// windows) so that the 54 checkers do not each rescan raw events. While
// it reads them it notes what the history holds (Pod.feat: a kill, an
// outage, a restart, a probe kill...), and the worker skips the checkers
// whose precondition (inv.needs) the pod rules out: most checkers find
// nothing to judge on a typical pod. The skip changes no finding; the
// differential tests (gating_test.go here, and internal/integration on
// every shipped scenario) run every pod both ways.
//
// Every Checker is a pure function of a Pod. It reports Hits; the framework
// classifies each hit using the fault context (SEMANTICS.md §5):
//
//	violation    a guarantee broken with no excusing fault;
//	degradation  broken while a fault that voids it was active (an event
//	             inside the outage), or, for a missed deadline, active or
//	             just over (kubelet/runtime/node down, GC, OOM per
//	             invariant), or past the grace budget (T3/T4);
//	bound        a timing bound missed (BEST-EFFORT timing, or a HARD
//	             guarantee that a history can only check as a bound);
//	unmet        a user-level guarantee (Level USER) not met: counted,
//	             attributed, never excused and never part of a verdict.
//
// docs/checker.md lists every checker: what it decides, what it cannot,
// and which faults excuse it.
//
// Verdicts compose with Jepsen's priority: Invalid > Unknown > Valid. A
// checker that panics on a pod yields Unknown for that pod with the error
// attached; it never crashes the run.
//
// The package imports the standard library and harness/history only: it
// must never peek into the simulator's or the planner's state (the
// history is the contract).
package check

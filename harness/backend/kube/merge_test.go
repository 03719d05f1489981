package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/agentlog"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/history/hspec"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

const ms = int64(time.Millisecond)

// sidecarSpec: a sidecar "proxy" gated by a startup probe, a main "app".
func sidecarSpec(t *testing.T, restart corev1.RestartPolicy) *api.PodSpec {
	t.Helper()
	always := corev1.ContainerRestartPolicyAlways
	grace := int64(30)
	v1 := &corev1.PodSpec{RestartPolicy: restart, TerminationGracePeriodSeconds: &grace,
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always,
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}}},
		Containers: []corev1.Container{{Name: "app"}}}
	s, err := convert.PodSpecFromV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// ln builds an agent line at t ms.
func ln(tms int64, c string, attempt uint32, ev string, detail string, code ...int32) agentlog.Line {
	l := agentlog.Line{T: tms * ms, Pod: "default/p", UID: "u1", Container: c, Attempt: attempt, Event: ev, Detail: detail}
	if len(code) > 0 {
		l.Code = &code[0]
	}
	return l
}

func ob(tms int64, k history.Kind, f func(*history.Event)) history.Event {
	e := history.Event{T: tms * ms, Kind: k, Pod: "default/p", Node: "n1"}
	if f != nil {
		f(&e)
	}
	return e
}

func describe(evs []history.Event) string {
	var b strings.Builder
	for i := range evs {
		b.WriteString(strings.TrimSpace(history.Describe(&evs[i])))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestMerge: the watch's events and the agent's lines become one history
// in time order, with the events only one of them can give: Started from
// the probe line, exits the agent could not log from the status (clamped
// between the attempt's last line and the next attempt), SIGKILL after an
// ignored SIGTERM, and pod.terminating inferred from the deletion or the
// Job's completion.
func TestMerge(t *testing.T) {
	cases := []struct {
		name  string
		rp    corev1.RestartPolicy
		obs   []history.Event
		exits []statusExit
		lines []agentlog.Line
		want  string
		// oomAt, if set, is the exact time the OOMKilled exit must have
		// (Describe shows milliseconds only).
		oomAt int64
	}{{
		name: "start ordering and deletion",
		rp:   corev1.RestartPolicyAlways,
		obs: []history.Event{
			ob(0, history.PodCreated, nil),
			ob(5, history.PodScheduled, nil),
			ob(400, history.ContainerReady, func(e *history.Event) { e.Container, e.Value = "app", true }),
			ob(1000, history.PodDeleted, func(e *history.Event) { e.Grace = 2e9 }),
			ob(1500, history.PodRemoved, nil),
		},
		lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(101, "proxy", 0, agentlog.Start, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(350, "app", 0, agentlog.Exec, ""),
			ln(380, "app", 0, agentlog.Probe, "ready failure forced"), // the probe-failure fault
			ln(1010, "app", 0, agentlog.Sigterm, ""),
			ln(1020, "app", 0, agentlog.Exit, "sigterm", 0),
			ln(1100, "proxy", 0, agentlog.Sigterm, ""),
			ln(1110, "proxy", 0, agentlog.Exit, "sigterm", 143),
		},
		want: `0.000s  pod.created
0.005s  pod.scheduled
0.100s  container.running proxy
0.300s  probe.result proxy startup=success
0.300s  container.started proxy value=true
0.350s  container.running app
0.350s  container.started app value=true
0.380s  probe.result app readiness=failure
0.400s  container.ready app value=true
1.000s  pod.deleted grace=2.000s
1.010s  pod.terminating value=true reason=PodDeleted grace=2.000s
1.010s  container.stop-requested app
1.020s  container.exited app code=0 reason=Completed msg="sigterm"
1.020s  container.started app value=false
1.100s  container.stop-requested proxy
1.110s  container.exited proxy code=143 reason=Error msg="sigterm"
1.110s  container.started proxy value=false
1.500s  pod.removed
`,
	}, {
		name: "OOM kill seen only in the status, after the restart",
		rp:   corev1.RestartPolicyAlways,
		obs:  []history.Event{ob(0, history.PodCreated, nil)},
		exits: []statusExit{
			// Received after attempt 1 began: clamped just before it.
			{Container: "proxy", Attempt: 0, Code: 137, Reason: "OOMKilled", T: 2500 * ms},
		},
		lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(2000, "proxy", 1, agentlog.Exec, ""),
		},
		oomAt: 2000*ms - 1,
		want: `0.000s  pod.created
0.100s  container.running proxy
0.300s  probe.result proxy startup=success
0.300s  container.started proxy value=true
2.000s  container.exited proxy code=137 reason=OOMKilled msg="from the pod status"
2.000s  container.started proxy value=false
2.000s  container.running proxy attempt=1
`,
	}, {
		name: "OOM kill timed by a witness in the pod",
		rp:   corev1.RestartPolicyAlways,
		obs:  []history.Event{ob(0, history.PodCreated, nil)},
		exits: []statusExit{
			{Container: "proxy", Attempt: 0, Code: 137, Reason: "OOMKilled", T: 2500 * ms},
		},
		lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(350, "app", 0, agentlog.Exec, ""),
			ln(1201, "app", 0, agentlog.PeerExit, "proxy 0"),
			ln(1202, "proxy", 0, agentlog.PeerExit, "app 0"), // stale witness line about a live container: no status exit, ignored
		},
		want: `0.000s  pod.created
0.100s  container.running proxy
0.300s  probe.result proxy startup=success
0.300s  container.started proxy value=true
0.350s  container.running app
0.350s  container.started app value=true
1.201s  container.exited proxy code=137 reason=OOMKilled msg="from the pod status, timed by a witness"
1.201s  container.started proxy value=false
`,
		oomAt: 1201 * ms,
	}, {
		name: "status received a few ms before the agent's line it reports: moved after it",
		rp:   corev1.RestartPolicyAlways,
		obs: []history.Event{
			ob(0, history.PodCreated, nil),
			ob(290, history.PodCondition, func(e *history.Event) { e.Cond, e.Value = "Initialized", true }),
			ob(340, history.ContainerReady, func(e *history.Event) { e.Container, e.Value = "app", true }),
			ob(340, history.PodCondition, func(e *history.Event) { e.Cond, e.Value = "ContainersReady", true }), // same update: moves with it
			ob(900, history.ContainerReady, func(e *history.Event) { e.Container, e.Value = "proxy", true }),
		},
		lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(350, "app", 0, agentlog.Exec, ""),
			ln(2000, "proxy", 1, agentlog.Exec, ""), // a later restart
		},
		want: `0.000s  pod.created
0.100s  container.running proxy
0.300s  probe.result proxy startup=success
0.300s  container.started proxy value=true
0.300s  pod.condition Initialized=true
0.350s  container.running app
0.350s  container.started app value=true
0.350s  container.ready app value=true
0.350s  pod.condition ContainersReady=true
0.900s  container.ready proxy value=true
2.000s  container.running proxy attempt=1
`,
	}, {
		name: "SIGTERM ignored: killed at the end of the grace",
		rp:   corev1.RestartPolicyAlways,
		obs: []history.Event{
			ob(0, history.PodCreated, nil),
			ob(1000, history.PodDeleted, func(e *history.Event) { e.Grace = 1e9 }),
		},
		exits: []statusExit{{Container: "app", Attempt: 0, Code: 137, Reason: "Error", T: 2100 * ms}},
		lines: []agentlog.Line{
			ln(350, "app", 0, agentlog.Exec, ""),
			ln(1005, "app", 0, agentlog.Sigterm, ""),
			ln(1006, "app", 0, agentlog.SigtermIgnored, ""),
			ln(1007, "nope", 0, agentlog.Exec, ""), // not in the spec: ignored
		},
		want: `0.000s  pod.created
0.350s  container.running app
0.350s  container.started app value=true
1.000s  pod.deleted grace=1.000s
1.005s  pod.terminating value=true reason=PodDeleted grace=1.000s
1.005s  container.stop-requested app
2.100s  container.killed app
2.100s  container.exited app code=137 reason=Error msg="from the pod status"
2.100s  container.started app value=false
`,
	}, {
		name: "Job completion: the sidecar is stopped once the main exited",
		rp:   corev1.RestartPolicyNever,
		obs:  []history.Event{ob(0, history.PodCreated, nil), ob(900, history.PodPhase, func(e *history.Event) { e.Phase = "Succeeded" })},
		lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(350, "app", 0, agentlog.Exec, ""),
			ln(600, "app", 0, agentlog.Exit, "run-time", 0),
			ln(700, "proxy", 0, agentlog.PreStopBegin, ""),
			ln(750, "proxy", 0, agentlog.PreStopEnd, ""),
			ln(760, "proxy", 0, agentlog.Sigterm, ""),
			ln(770, "proxy", 0, agentlog.Exit, "sigterm", 0),
		},
		want: `0.000s  pod.created
0.100s  container.running proxy
0.300s  probe.result proxy startup=success
0.300s  container.started proxy value=true
0.350s  container.running app
0.350s  container.started app value=true
0.600s  container.exited app code=0 reason=Completed msg="run-time"
0.600s  container.started app value=false
0.700s  pod.terminating value=true reason=PodCompleted grace=30.000s
0.700s  container.prestop-begin proxy
0.750s  container.prestop-end proxy
0.760s  container.stop-requested proxy
0.770s  container.exited proxy code=0 reason=Completed msg="sigterm"
0.770s  container.started proxy value=false
0.900s  pod.phase Succeeded
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &podRecord{Name: "default/p", Node: "n1", Spec: sidecarSpec(t, tc.rp), Observed: tc.obs, Exits: tc.exits, Lines: tc.lines}
			evs := r.merge()
			if got := describe(evs); got != tc.want {
				t.Errorf("merge:\n%s\nwant:\n%s", got, tc.want)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i].T < evs[i-1].T {
					t.Errorf("event %d (%s) goes back in time", i, evs[i].Kind)
				}
			}
			for i := range evs {
				if tc.oomAt != 0 && evs[i].Kind == history.ContainerExited && evs[i].Reason == "OOMKilled" && evs[i].T != tc.oomAt {
					t.Errorf("OOM exit at %d, want %d", evs[i].T, tc.oomAt)
				}
			}
		})
	}
}

// TestMergedHistoryChecked: the checker judges a merged history like any
// other, and catches an ordering break in it (a main started before its
// sidecar's startup probe passed: INV-S5), while the same pod in
// the right order passes.
func TestMergedHistoryChecked(t *testing.T) {
	spec := sidecarSpec(t, corev1.RestartPolicyAlways)
	run := func(mainAt int64) *check.Report {
		r := &podRecord{Name: "default/p", Node: "n1", Spec: spec, Observed: []history.Event{
			ob(0, history.PodCreated, func(e *history.Event) { e.Spec = hspecOf(spec) }),
			ob(1, history.PodScheduled, nil),
		}, Lines: []agentlog.Line{
			ln(100, "proxy", 0, agentlog.Exec, ""),
			ln(300, "proxy", 0, agentlog.Probe, "startup success"),
			ln(mainAt, "app", 0, agentlog.Exec, ""),
		}}
		evs := []history.Event{{T: 0, Kind: history.RunMeta, Meta: &history.Meta{Scenario: "s", Policy: "kep753", Backend: "kube", ToleranceNanos: int64(DefaultTolerance)}}}
		evs = append(evs, r.merge()...)
		evs = append(evs, history.Event{T: 5000 * ms, Kind: history.RunEnd, Msg: "complete"})
		return check.CheckEvents(evs)
	}
	if rep := run(350); rep.Violations() != 0 {
		t.Errorf("right order: %d violations: %+v", rep.Violations(), rep.Findings)
	}
	rep := run(200) // the main runs before the sidecar is started
	if rep.Violations() == 0 {
		t.Fatal("main started before the sidecar's startup probe passed: no violation")
	}
	ids := map[string]bool{}
	for _, f := range rep.Findings {
		ids[f.ID] = true
	}
	if !ids["INV-S5"] {
		t.Errorf("findings %v, want INV-S5 (a main started before every sidecar was started)", ids)
	}
}

func hspecOf(s *api.PodSpec) *history.PodSpec { return hspec.Of("w", nil, s) }

package drive

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
)

const triggerScenario = `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: triggers}
seed: 5
cluster: {nodes: 1}
workloads:
- name: web
  count: 3
  template:
    spec:
      initContainers: [{name: proxy, image: envoy:1, restartPolicy: Always}]
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: 100ms}}
  lifetime: 10s
- name: other
  count: 1
  template:
    spec:
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: 100ms}}
  lifetime: 10s
faults:
- name: oom-after-proxy
  type: oom-kill
  schedule: {type: on-container, container: proxy, event: started, delay: 200ms, max: 2}
  target: {workload: web, container: app}
- name: crash-at-app
  type: kubelet-crash
  downtime: 1s
  schedule: {type: on-container, container: app, event: running, delay: 50ms}
  target: {workload: web}
`

// TestTriggers: an on-container fault fires its delay after the matching
// container event of a matching pod (exact timing from observed events),
// within max, and not for other containers, events, values or workloads;
// ScheduleFaults leaves them to the triggers when asked to.
func TestTriggers(t *testing.T) {
	s, err := scenario.LoadBytes("t.yaml", []byte(triggerScenario))
	if err != nil {
		t.Fatal(err)
	}
	p, err := trial.Compile(scenario.Expand(s)[0])
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTriggers(p)
	if !tr.Any() {
		t.Fatal("no on-container fault found")
	}
	web := faults.WorldOf("web", nil, &p.Workloads[0].Spec)
	other := faults.WorldOf("other", nil, &p.Workloads[1].Spec)
	ev := func(pod, c string, k history.Kind, v bool) *history.Event {
		return &history.Event{Pod: pod, Container: c, Kind: k, Value: v}
	}
	var got []string
	observe := func(e *history.Event, at time.Duration, w *faults.Workload) {
		for _, d := range tr.Observe(e, at, w) {
			got = append(got, d.Label+"@"+d.At.String()+"/"+d.Pod)
		}
	}
	observe(ev("default/web-0", "proxy", history.ContainerStarted, false), time.Second, &web)  // not Started
	observe(ev("default/web-0", "proxy", history.ContainerRunning, true), time.Second, &web)   // wrong event
	observe(ev("default/web-0", "proxy", history.ContainerStarted, true), 2*time.Second, &web) // fires
	observe(ev("default/other-0", "app", history.ContainerRunning, true), 3*time.Second, &other)
	observe(ev("default/web-1", "proxy", history.ContainerStarted, true), 4*time.Second, &web) // fires
	observe(ev("default/web-2", "proxy", history.ContainerStarted, true), 5*time.Second, &web) // past max
	observe(ev("default/web-2", "app", history.ContainerRunning, true), 6*time.Second, &web)
	want := "oom-after-proxy@2.2s/default/web-0 oom-after-proxy@4.2s/default/web-1 crash-at-app@6.05s/default/web-2"
	if strings.Join(got, " ") != want {
		t.Errorf("firings:\n got %s\nwant %s", strings.Join(got, " "), want)
	}

	// ScheduleFaults: on-container faults are the triggers' (true) or
	// recorded not applied (false).
	for _, onContainer := range []bool{true, false} {
		var mu sync.Mutex
		var notApplied int
		log := &FaultLog{Emit: func(e history.Event) {
			mu.Lock()
			if e.Kind == history.FaultNotApplied {
				notApplied++
			}
			mu.Unlock()
		}}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		ScheduleFaults(ctx, clocktesting.NewFakeClock(time.Unix(0, 0)), &wg, time.Unix(0, 0), p, "test", log, func() bool { return false }, onContainer, func(Firing) {})
		cancel()
		wg.Wait()
		if want := map[bool]int{true: 0, false: 2}[onContainer]; notApplied != want {
			t.Errorf("onContainer=%v: %d not applied, want %d", onContainer, notApplied, want)
		}
	}
}

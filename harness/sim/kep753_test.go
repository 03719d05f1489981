package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// orderSink checks, while the history streams, the KEP-753 start and stop
// ordering of the bench pod (init, proxy, logs sidecars, app main):
// sidecars are started before the main starts (INV-S1, S5), and on
// deletion the main exits before any sidecar is signalled, the later
// sidecar before the earlier one (INV-T3, T4). It keeps state for live
// pods only.
type orderSink struct {
	pods         map[string]*podOrder
	completed    int
	mainStarts   int
	sidecarStops int
	errs         []string
	// noStopOrder disables the termination-order checks (faults such as
	// an exhausted node-shutdown budget void them: INV-T5).
	noStopOrder bool
}

type podOrder struct {
	begun       map[string]bool // start requested once in the current sandbox
	wasStarted  map[string]bool // Started once in the current sandbox
	running     map[string]bool
	started     map[string]bool
	initDone    bool
	terminating bool
}

func (s *orderSink) fail(e *history.Event, format string, args ...any) {
	if len(s.errs) < 20 {
		s.errs = append(s.errs, fmt.Sprintf("t=%d %s %s: ", e.T, e.Pod, e.Kind)+fmt.Sprintf(format, args...))
	}
}

func (s *orderSink) Write(e *history.Event) error {
	if e.Pod == "" {
		return nil
	}
	p := s.pods[e.Pod]
	if p == nil {
		p = &podOrder{running: map[string]bool{}, started: map[string]bool{}, begun: map[string]bool{}, wasStarted: map[string]bool{}}
		s.pods[e.Pod] = p
	}
	switch e.Kind {
	case history.ContainerRunning:
		p.running[e.Container] = true
	case history.ContainerExited:
		p.running[e.Container] = false
		if e.Container == "init" && e.Code == 0 {
			p.initDone = true
		}
	case history.ContainerStarted:
		p.started[e.Container] = e.Value
		if e.Value {
			p.wasStarted[e.Container] = true
		}
	case history.SandboxCreated:
		p.initDone = false
		clear(p.begun)
		clear(p.wasStarted)
	case history.PodTerminating:
		p.terminating = true
	case history.ContainerStartRequested:
		// Start ordering (INV-S1, S5) applies to the initialization of a
		// sandbox: later restarts of a sidecar or main are not ordered.
		first := !p.begun[e.Container]
		p.begun[e.Container] = true
		if !first {
			break
		}
		switch e.Container {
		case "proxy":
			if !p.initDone {
				s.fail(e, "sidecar proxy started before init completed")
			}
		case "logs":
			if !p.wasStarted["proxy"] {
				s.fail(e, "sidecar logs started before proxy was started")
			}
		case "app":
			s.mainStarts++
			// Each sidecar was Started in this sandbox. (A sidecar that
			// restarts while a later one initializes need not be Started
			// again: the kubelet scans init containers from the last one.)
			if !p.wasStarted["proxy"] || !p.wasStarted["logs"] {
				s.fail(e, "main started before the sidecars were started: %v", p.wasStarted)
			}
		}
	case history.ContainerStopRequested:
		if !p.terminating || s.noStopOrder {
			break
		}
		switch e.Container {
		case "proxy", "logs":
			s.sidecarStops++
			if p.running["app"] {
				s.fail(e, "sidecar %s signalled while the main runs", e.Container)
			}
			if e.Container == "proxy" && p.running["logs"] {
				s.fail(e, "sidecar proxy signalled before the later sidecar logs exited")
			}
		}
	case history.PodRemoved:
		s.completed++
		delete(s.pods, e.Pod)
	}
	return nil
}

// TestKEP753Ordering runs 10,000 pod lifecycles under the kep753 policy
// and checks start and stop ordering on every pod.
func TestKEP753Ordering(t *testing.T) {
	const n = 10_000
	cfg := benchConfig(n, 2_000)
	s := &orderSink{pods: map[string]*podOrder{}}
	res, err := Run(context.Background(), cfg, 753, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.errs {
		t.Error(e)
	}
	if s.completed != n || res.PodsCompleted != n {
		t.Fatalf("completed %d lifecycles (result %+v), want %d", s.completed, res, n)
	}
	if s.mainStarts < n || s.sidecarStops < 2*n {
		t.Fatalf("main starts %d, sidecar stops %d: the lifecycles did not run fully", s.mainStarts, s.sidecarStops)
	}
	if len(s.pods) != 0 {
		t.Fatalf("%d pods left in the checker", len(s.pods))
	}
	t.Logf("%+v", res)
}

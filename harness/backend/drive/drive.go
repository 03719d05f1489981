// Package drive holds what the backends that run scenarios through a real
// apiserver (local, kube) share: the pods' arrival times, drawn like the
// sim draws them; the history's form of a pod spec; and a pod watch that
// survives closed streams.
package drive

import (
	"context"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// HistorySpec is the history's form of a pod spec (as the sim writes it).
func HistorySpec(workload string, labels map[string]string, s *api.PodSpec) *history.PodSpec {
	hs := &history.PodSpec{
		RestartPolicy: s.RestartPolicy.String(),
		Grace:         int64(s.TerminationGracePeriod),
		Critical:      s.Critical,
		Labels:        labels,
		Workload:      workload,
	}
	conv := func(c *api.Container) history.ContainerSpec {
		hc := history.ContainerSpec{Name: c.Name, Role: c.Role.String(), Image: c.Image,
			Startup: c.StartupProbe != nil, Readiness: c.ReadinessProbe != nil, Liveness: c.LivenessProbe != nil,
			PostStart: c.PostStart, PreStop: c.PreStop}
		// Container-level restartPolicy and restartPolicyRules
		// (ContainerRestartRules), as the sim writes them: the checker
		// judges every restart decision against them (INV-RR*, INV-RA*).
		if c.RestartPolicy != nil {
			hc.RestartPolicy = c.RestartPolicy.String()
		}
		for _, r := range c.RestartRules {
			hc.Rules = append(hc.Rules, history.RestartRule{Action: r.Action.String(), Operator: r.Operator.String(), Values: append([]int32(nil), r.Values...)})
		}
		return hc
	}
	for i := range s.Init {
		hs.Init = append(hs.Init, conv(&s.Init[i]))
	}
	for i := range s.Main {
		hs.Main = append(hs.Main, conv(&s.Main[i]))
	}
	return hs
}

// Arrivals returns the creation offsets of a workload's pods, drawn like
// the sim does (stream Seed(seed).Str("arrival").Str(workload)).
func Arrivals(seed uint64, w *scenario.Workload) []time.Duration {
	a := &w.Arrival
	r := behavior.Seed(seed).Str("arrival").Str(w.Name).Rand()
	out := make([]time.Duration, 0, w.Count)
	t := a.Start.D()
	for len(out) < w.Count {
		switch a.Type {
		case "poisson":
			out = append(out, t)
			u := r.Float64()
			t += time.Duration(-math.Log1p(-u) / a.Rate * float64(time.Second))
		case "burst":
			n := a.Size
			if n <= 0 {
				n = w.Count
			}
			for i := 0; i < n && len(out) < w.Count; i++ {
				out = append(out, t)
			}
			t += a.Every.D()
		default:
			if a.Rate > 0 {
				out = append(out, a.Start.D()+time.Duration(math.Round(float64(len(out))*float64(time.Second)/a.Rate)))
			} else {
				out = append(out, t)
			}
		}
	}
	return out
}

// SleepUntil waits until t; false if ctx ended first.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SplitName splits "namespace/name" ("default" without a namespace).
func SplitName(full string) (string, string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[:i], full[i+1:]
		}
	}
	return "default", full
}

// WatchPods lists and then watches the pods matching the label selector
// sel until ctx ends, re-watching from the last resource version when the
// server closes the stream and relisting when it is too old. observe
// receives every pod notification (deleted: the object is gone) from one
// goroutine, stamped by the caller on receipt. synced is closed once the
// initial list is handled.
func WatchPods(ctx context.Context, pods typedcorev1.PodInterface, sel string, observe func(p *corev1.Pod, deleted bool)) (<-chan struct{}, error) {
	l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	synced := make(chan struct{})
	go func() {
		rv := l.ResourceVersion
		close(synced)
		for ctx.Err() == nil {
			w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					if p, ok := ev.Object.(*corev1.Pod); ok {
						rv = p.ResourceVersion
						observe(p, ev.Type == watch.Deleted)
					}
				case watch.Bookmark:
					if p, ok := ev.Object.(*corev1.Pod); ok {
						rv = p.ResourceVersion
					}
				case watch.Error:
					// Too old a resource version: relist.
					if l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
						rv = l.ResourceVersion
						for i := range l.Items {
							observe(&l.Items[i], false)
						}
					}
				}
			}
			w.Stop()
		}
	}()
	return synced, nil
}

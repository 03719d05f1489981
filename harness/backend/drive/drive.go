// Package drive holds what the backends that run scenarios through a real
// apiserver (local, kube) share: driving a compiled trial's pods and faults
// on a clock (arrival, lifetime deletion, fault firing: all from the
// harness/trial plan, so they match the sim's for the same seed), fault
// bookkeeping, and a pod watch that survives closed streams. Every wait
// goes through an injected clock (k8s.io/utils/clock), so the timing is
// unit-tested with a fake clock.
package drive

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
)

// SleepUntil waits on clk until t; false if ctx ended first.
func SleepUntil(ctx context.Context, clk clock.Clock, t time.Time) bool {
	d := t.Sub(clk.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := clk.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C():
		return true
	case <-ctx.Done():
		return false
	}
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

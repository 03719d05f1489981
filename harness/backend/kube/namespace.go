package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/sidebench/sidebench/harness/chaos"
)

// createNamespace creates a trial's namespace through e2e-framework,
// labelled with the run and the trial, and makes sure its default service
// account exists (the ServiceAccount admission plugin requires it; a
// cluster without kube-controller-manager, like the local containerd
// tier, never creates it).
func (b *Backend) createNamespace(ctx context.Context, ns, trial string) error {
	if _, err := envfuncs.CreateNamespace(ns, envfuncs.WithLabels(map[string]string{LabelRun: b.runID, LabelTrial: trial}))(ctx, b.env); err != nil {
		return fmt.Errorf("kube backend: %w", err)
	}
	sas := b.cs.CoreV1().ServiceAccounts(ns)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := sas.Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	_, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube backend: creating the default service account of %s: %w", ns, err)
	}
	return nil
}

// deleteNamespace deletes one namespace of the run and waits until it is
// gone: chaos objects first (Chaos Mesh recovers their faults), then the
// pods (grace 0: the trial is over), then the namespace through
// e2e-framework. A namespace left Terminating and empty is finalized here
// after a while, which is what the namespace controller would do: a
// cluster without kube-controller-manager never does it.
func (b *Backend) deleteNamespace(ctx context.Context, ns string) error {
	if err := b.deleteChaos(ctx, ns); err != nil {
		return err
	}
	zero := int64(0)
	pods := b.cs.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube backend: deleting the pods of %s: %w", ns, err)
	}
	res, err := b.resources()
	if err != nil {
		return err
	}
	err = wait.For(conditions.New(res).ResourcesDeleted(&corev1.PodList{Items: b.podsIn(ctx, ns)}), wait.WithTimeout(90*time.Second), wait.WithInterval(200*time.Millisecond), wait.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("kube backend: pods of %s not gone: %w", ns, err)
	}
	if _, err := envfuncs.DeleteNamespace(ns)(ctx, b.env); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube backend: %w", err)
	}
	finalized := false
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := b.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return fmt.Errorf("kube backend: namespace %s: %w", ns, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube backend: namespace %s still %s after 2m", ns, got.Status.Phase)
		}
		// Empty and still there 10 s after deletion: no namespace controller.
		if !finalized && got.DeletionTimestamp != nil && time.Since(got.DeletionTimestamp.Time) > 10*time.Second && len(b.podsIn(ctx, ns)) == 0 {
			got.Spec.Finalizers = nil
			if _, err := b.cs.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err == nil {
				finalized = true
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// deleteChaos deletes the run's Chaos Mesh objects in ns, kind by kind
// (nothing without Chaos Mesh).
func (b *Backend) deleteChaos(ctx context.Context, ns string) error {
	if b.chaos == nil {
		return nil
	}
	var errs []error
	for _, o := range chaos.ListTypes() {
		if err := b.chaos.DeleteAllOf(ctx, o, client.InNamespace(ns), client.MatchingLabels{LabelRun: b.runID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kube backend: deleting %T objects of %s: %w", o, ns, err))
		}
	}
	return errors.Join(errs...)
}

func (b *Backend) podsIn(ctx context.Context, ns string) []corev1.Pod {
	l, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return l.Items
}

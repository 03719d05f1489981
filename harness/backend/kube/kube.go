// Package kube is sidebench's kube backend: scenario trials run on an
// existing cluster (or one it creates through e2e-framework), every
// container running sidebench-agent with its behaviour in the
// environment. Each trial gets its own namespace, labelled with the run
// ID; pods are watched (stamped on receipt), the agents' nanosecond
// lifecycle logs are collected from the container logs and the shared
// emptyDir, and both are merged into the common history (merge.go).
// Faults go through Chaos Mesh when its CRDs are installed, else through
// node-level fallbacks, else are recorded as not applied.
package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/sidebench/sidebench/harness/chaos"
)

// DefaultTolerance is the timing tolerance written into run.meta: the
// API-side events are stamped on receipt of the watch.
const DefaultTolerance = time.Second

// Options configure New.
type Options struct {
	// Kubeconfig and Context select an existing cluster (default: the
	// usual loading rules, $KUBECONFIG then ~/.kube/config).
	Kubeconfig string
	Context    string
	// Cluster, if set, is a cluster the caller brought up (see Provide):
	// it wins over Kubeconfig and may offer node-level operations.
	Cluster *Cluster
	// Image is the agent image every container runs (default DefaultImage);
	// it must be present on the nodes or pullable.
	Image string
	// AltImage is the agent under a second name, for image-change faults
	// (default DefaultAltImage); it must be on the nodes too.
	AltImage string
	// RunID labels everything the run creates (default: random).
	RunID string
	// Horizon caps a trial (default: the scenario's horizon, at most 10m).
	Horizon time.Duration
	// Log receives progress lines (default discarded).
	Log io.Writer
	// PhysicalMachines maps node names to the Chaos Mesh PhysicalMachine
	// ("namespace/name") of the chaosd running on each: kubelet-crash and
	// runtime-restart then go through PhysicalMachineChaos on clusters
	// sidebench does not run.
	PhysicalMachines map[string]string
	// Clock drives pod arrivals, lifetimes and fault firings (default:
	// the real clock; tests use a fake one).
	Clock clock.Clock
}

// NodeOps are node-level actions, available when sidebench runs the
// cluster itself (the local containerd tier): the fallback for faults
// Chaos Mesh would inject.
type NodeOps interface {
	KillKubelet(i int) error
	StartKubelet(ctx context.Context, i int) error
	KillRuntime(i int) error
	StartRuntime(ctx context.Context, i int) error
}

// Cluster is a cluster the backend talks to.
type Cluster struct {
	Kubeconfig string
	Context    string
	// Name describes it in run.meta ("existing", "kind", "local-containerd").
	Name string
	// Nodes names the nodes NodeOps index (nil without NodeOps).
	Nodes []string
	Ops   NodeOps
	// Down tears it down (nil: nothing to do).
	Down func() error
}

// Backend runs trials on one cluster, one trial at a time.
type Backend struct {
	opts  Options
	runID string
	cl    *Cluster
	rest  *rest.Config
	env   *envconf.Config
	cs    kubernetes.Interface
	// chaos is a client for Chaos Mesh objects, nil when its CRDs are not
	// installed.
	chaos client.Client
	run   sync.Mutex
	seq   int
	// clk drives arrivals, lifetimes and fault firings (Options.Clock).
	clk clock.Clock
}

// New connects to the cluster and checks what it offers.
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.AltImage == "" {
		o.AltImage = DefaultAltImage
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.RunID = hex.EncodeToString(b[:])
	}
	cl := o.Cluster
	if cl == nil {
		cl = &Cluster{Kubeconfig: o.Kubeconfig, Context: o.Context, Name: "existing"}
	}
	rc, err := restConfig(cl.Kubeconfig, cl.Context)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 100, 200 // one watch, a create and a few log streams per pod
	kc, err := klient.New(rc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	b := &Backend{opts: o, clk: o.Clock, runID: o.RunID, cl: cl, rest: rc, cs: cs,
		env: envconf.New().WithClient(kc).WithKubeconfigFile(cl.Kubeconfig)}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Nodes().List(cctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("kube backend: cannot list nodes (kubeconfig %q, context %q): %w", cl.Kubeconfig, cl.Context, err)
	}
	if b.chaos, err = chaosClient(cs, rc); err != nil {
		return nil, err
	}
	return b, nil
}

// CheckConfig reports whether a kubeconfig (path, context; empty: the
// usual loading rules) names a cluster, without contacting it.
func CheckConfig(path, context string) error {
	_, err := restConfig(path, context)
	return err
}

// restConfig loads a kubeconfig the way kubectl does.
func restConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	rc, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errors.New("kube backend: no cluster: give --kubeconfig (and --context), set $KUBECONFIG, or let sidebench create one with --provider local|kind")
	}
	if err != nil {
		return nil, fmt.Errorf("kube backend: kubeconfig: %w", err)
	}
	return rc, nil
}

// chaosClient returns a client for Chaos Mesh objects if the cluster
// serves chaos-mesh.org/v1alpha1, else nil.
func chaosClient(cs kubernetes.Interface, rc *rest.Config) (client.Client, error) {
	if _, err := cs.Discovery().ServerResourcesForGroupVersion(chaos.APIVersion); err != nil {
		return nil, nil // not installed (or not visible): fall back
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := chaos.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(rc, client.Options{Scheme: s})
}

// resources returns a new e2e-framework resources client. klient's shared
// Client().Resources() is not safe for concurrent use (it sets the
// namespace on one shared object), and execs and waits run concurrently.
func (b *Backend) resources() (*resources.Resources, error) { return resources.New(b.rest) }

// exec runs cmd in a container through the API (the agent image has no
// shell: cmd is the agent's), as kubectl exec does.
func (b *Backend) exec(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr *bytes.Buffer) error {
	res, err := b.resources()
	if err != nil {
		return err
	}
	return res.ExecInPod(ctx, ns, pod, container, cmd, stdout, stderr)
}

// RunID is the label value on everything this backend creates.
func (b *Backend) RunID() string { return b.runID }

// ChaosMesh reports whether faults go through Chaos Mesh.
func (b *Backend) ChaosMesh() bool { return b.chaos != nil }

// Close deletes whatever the run left (namespaces labelled with the run
// ID, and with them pods and chaos objects), then tears down a cluster the
// backend was given to own. Idempotent.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := b.deleteRun(ctx)
	if b.cl.Down != nil {
		err = errors.Join(err, b.cl.Down())
		b.cl.Down = nil
	}
	return err
}

// deleteRun deletes every namespace carrying the run label and waits until
// they are gone; chaos objects are deleted first so that Chaos Mesh
// recovers the faults while its targets still exist.
func (b *Backend) deleteRun(ctx context.Context) error {
	sel := LabelRun + "=" + b.runID
	l, err := b.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("kube backend: listing the run's namespaces: %w", err)
	}
	var names []string
	for _, ns := range l.Items {
		names = append(names, ns.Name)
	}
	sort.Strings(names)
	var errs []error
	for _, ns := range names {
		errs = append(errs, b.deleteNamespace(ctx, ns))
	}
	return errors.Join(errs...)
}

// Leftovers lists what carries the run label: namespaces, and pods in
// any namespace (a test's and the e2e script's cleanup check).
func Leftovers(ctx context.Context, cs kubernetes.Interface, runID string) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + runID}
	var out []string
	nss, err := cs.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		out = append(out, "namespace/"+ns.Name+" ("+string(ns.Status.Phase)+")")
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Namespace+"/"+p.Name)
	}
	return out, nil
}

// clock is the backend's clock (real unless Options.Clock set one).
func (b *Backend) clock() clock.Clock {
	if b.clk == nil {
		return clock.RealClock{}
	}
	return b.clk
}

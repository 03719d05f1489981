// Package chaos builds Chaos Mesh objects (group chaos-mesh.org/v1alpha1)
// from sidebench faults, for the kube backend. It is the only package
// that imports github.com/chaos-mesh/chaos-mesh/api (internal/importrules
// enforces it); it builds objects and never talks to a cluster.
//
// The backend keeps choosing *what* to hit itself, deterministically from
// the trial seed (harness/faults.Target); the objects here then name those
// pods, containers and machines explicitly, so that Chaos Mesh's own random
// selection modes are never used for a sidebench fault. Every object is
// labelled sidebench.dev/run=<run ID> (and sidebench.dev/fault=<kind>), so
// that the backend can list and delete everything a run created.
//
// What maps to what (see Unsupported for the rest):
//
//	OOMKill                        StressChaos, memory stressor ≥ the container's memory limit
//	KubeletCrash                   PhysicalMachineChaos action process, kubelet, SIGKILL (needs chaosd)
//	RuntimeRestart keep-containers PhysicalMachineChaos action process, containerd, SIGKILL (needs chaosd)
//	(a crash of a named container) PodChaos container-kill (ContainerKill; no catalogue kind of its own)
package chaos

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidebench/sidebench/harness/faults"
)

// Labels on every object this package builds, and on the run's pods.
const (
	LabelRun   = "sidebench.dev/run"
	LabelFault = "sidebench.dev/fault"
)

// APIVersion is the group/version of the objects.
var APIVersion = v1alpha1.SchemeGroupVersion.String() // chaos-mesh.org/v1alpha1

// Resource names of the kinds built here, for a dynamic client or RBAC.
const (
	ResourcePodChaos             = "podchaos"
	ResourceStressChaos          = "stresschaos"
	ResourcePhysicalMachineChaos = "physicalmachinechaos"
)

// SIGKILL is the signal the process kills send.
const SIGKILL = 9

// Object is what the builders return: a typed Chaos Mesh object with its
// TypeMeta set, ready for a controller-runtime client (Create, Delete,
// DeleteAllOf with the run label) or for marshalling. Importing
// controller-runtime here also keeps go.mod's required pin on it direct
// (ECOSYSTEM.md §0: v0.25.2, or the chaos-mesh api does not build).
type Object = client.Object

// Env is the run the objects belong to.
type Env struct {
	// RunID labels every object (sidebench.dev/run); it must be a valid
	// label value.
	RunID string
	// Namespace holds the run's pods and the chaos objects.
	Namespace string
	// PhysicalMachines maps a node name to the PhysicalMachine object
	// ("namespace/name") registered for the chaosd running on it. Nodes
	// without one cannot have process faults.
	PhysicalMachines map[string]string
}

func (e *Env) check() error {
	var errs []error
	if e.RunID == "" {
		errs = append(errs, errors.New("chaos: empty run ID"))
	} else if msgs := validation.IsValidLabelValue(e.RunID); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("chaos: run ID %q is not a label value: %s", e.RunID, strings.Join(msgs, "; ")))
	}
	if e.Namespace == "" {
		errs = append(errs, errors.New("chaos: empty namespace"))
	}
	return errors.Join(errs...)
}

// Pods selects pods of the run: those carrying the run label and Labels,
// narrowed to Names when given. Names are what the backend picked with
// faults.Target; then every named pod is hit (mode all). Without Names,
// Chaos Mesh picks: Count pods (mode fixed), a Percent (fixed-percent), or
// one.
type Pods struct {
	Names   []string
	Labels  map[string]string
	Count   int
	Percent int
}

func (e *Env) podSelector(p Pods) v1alpha1.PodSelector {
	labels := map[string]string{LabelRun: e.RunID}
	for k, v := range p.Labels {
		labels[k] = v
	}
	s := v1alpha1.PodSelector{Selector: v1alpha1.PodSelectorSpec{
		GenericSelectorSpec: v1alpha1.GenericSelectorSpec{Namespaces: []string{e.Namespace}, LabelSelectors: labels},
	}}
	switch {
	case len(p.Names) > 0:
		names := append([]string(nil), p.Names...)
		sort.Strings(names)
		s.Selector.Pods = map[string][]string{e.Namespace: names}
		s.Mode = v1alpha1.AllMode
	case p.Count > 0:
		s.Mode, s.Value = v1alpha1.FixedMode, strconv.Itoa(p.Count)
	case p.Percent > 0:
		s.Mode, s.Value = v1alpha1.FixedPercentMode, strconv.Itoa(p.Percent)
	default:
		s.Mode = v1alpha1.OneMode
	}
	return s
}

func (e *Env) meta(name, fault string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: e.Namespace,
		Labels: map[string]string{LabelRun: e.RunID, LabelFault: fault}}
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a DNS-1123 object name for one firing of a fault of a run:
// "sb-<run>-<fault label>-<firing>", cut to 63 characters.
func Name(runID, label string, firing int) string {
	s := strings.ToLower(fmt.Sprintf("sb-%s-%s-%d", runID, label, firing))
	s = strings.Trim(notDNS.ReplaceAllString(s, "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

func durationString(d time.Duration) *string {
	if d <= 0 {
		return nil
	}
	s := d.String()
	return &s
}

// ContainerKill kills container in the selected pods (PodChaos action
// container-kill: the runtime kills it, exit 137, no preStop hook). It is
// one-shot: Chaos Mesh kills once per selected container.
func ContainerKill(e Env, name string, pods Pods, container string) (*v1alpha1.PodChaos, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if container == "" {
		return nil, errors.New("chaos: container-kill needs a container name (Chaos Mesh would pick the pod's first container)")
	}
	return &v1alpha1.PodChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: v1alpha1.KindPodChaos},
		ObjectMeta: e.meta(name, "container-kill"),
		Spec: v1alpha1.PodChaosSpec{
			Action:            v1alpha1.ContainerKillAction,
			ContainerSelector: v1alpha1.ContainerSelector{PodSelector: e.podSelector(pods), ContainerNames: []string{container}},
		},
	}, nil
}

// DefaultStressDuration is how long a memory stressor stays when the
// caller gives none: long enough to reach the limit, short enough that a
// forgotten object does not stress a restarted container for long.
const DefaultStressDuration = 30 * time.Second

// MemoryStress runs a memory stressor of size bytes inside container of
// the selected pods (StressChaos). With size at or above the container's
// memory limit, the container's memory cgroup runs out. The stressor gets
// oom_score_adj −1000 so that the kernel's OOM killer picks the
// container's own process, not the stressor: the container then exits
// 137 OOMKilled on cgroup v1 too (on cgroup v2 the kubelet's grouped OOM
// kill takes the whole container anyway).
func MemoryStress(e Env, name string, pods Pods, container string, size int64, duration time.Duration) (*v1alpha1.StressChaos, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if container == "" {
		return nil, errors.New("chaos: memory stress needs a container name")
	}
	if size <= 0 {
		return nil, fmt.Errorf("chaos: memory stress size %d must be > 0 bytes", size)
	}
	if duration <= 0 {
		duration = DefaultStressDuration
	}
	return &v1alpha1.StressChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: v1alpha1.KindStressChaos},
		ObjectMeta: e.meta(name, faults.OOMKill.String()),
		Spec: v1alpha1.StressChaosSpec{
			ContainerSelector: v1alpha1.ContainerSelector{PodSelector: e.podSelector(pods), ContainerNames: []string{container}},
			Stressors: &v1alpha1.Stressors{MemoryStressor: &v1alpha1.MemoryStressor{
				Stressor:    v1alpha1.Stressor{Workers: 1},
				Size:        strconv.FormatInt(size, 10) + "B",
				OOMScoreAdj: -1000,
			}},
			Duration: durationString(duration),
		},
	}, nil
}

// ProcessKill sends SIGKILL to process (a name or a PID) on the machines
// running chaosd for nodes (PhysicalMachineChaos action process).
func ProcessKill(e Env, name, fault string, nodes []string, process string) (*v1alpha1.PhysicalMachineChaos, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("chaos: process kill needs at least one node")
	}
	machines := map[string][]string{}
	var missing []string
	for _, n := range nodes {
		ref, ok := e.PhysicalMachines[n]
		ns, pm, cut := strings.Cut(ref, "/")
		if !ok || !cut || ns == "" || pm == "" {
			missing = append(missing, n)
			continue
		}
		machines[ns] = append(machines[ns], pm)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("chaos: no PhysicalMachine (chaosd) registered as namespace/name for node(s) %s", strings.Join(missing, ", "))
	}
	for ns := range machines {
		sort.Strings(machines[ns])
	}
	return &v1alpha1.PhysicalMachineChaos{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: v1alpha1.KindPhysicalMachineChaos},
		ObjectMeta: e.meta(name, fault),
		Spec: v1alpha1.PhysicalMachineChaosSpec{
			Action: v1alpha1.PMProcessAction,
			PhysicalMachineSelector: v1alpha1.PhysicalMachineSelector{
				Selector: v1alpha1.PhysicalMachineSelectorSpec{PhysicalMachines: machines},
				Mode:     v1alpha1.AllMode,
			},
			ExpInfo: v1alpha1.ExpInfo{Process: &v1alpha1.ProcessSpec{Process: process, Signal: SIGKILL}},
		},
	}, nil
}

// KubeletKill is ProcessKill of the kubelet: the KubeletCrash fault.
func KubeletKill(e Env, name string, nodes []string) (*v1alpha1.PhysicalMachineChaos, error) {
	return ProcessKill(e, name, faults.KubeletCrash.String(), nodes, "kubelet")
}

// Unsupported reports whether spec cannot be expressed as Chaos Mesh
// objects, and why (reason, true); ("", false) when ForFault can build it.
// The kube backend must then fall back to a node-level action or record
// the fault as not applied, and say so in the run summary.
func Unsupported(spec faults.Spec) (reason string, ok bool) {
	switch spec.Kind {
	case faults.OOMKill:
		return "", false
	case faults.KubeletCrash:
		if spec.RecoveryCrash {
			return "kubelet-crash with recoveryCrash: Chaos Mesh cannot time a second kill relative to the kubelet coming back", true
		}
		return "", false
	case faults.RuntimeRestart:
		if spec.Mode == faults.KillContainers {
			return "runtime-restart kill-containers: Chaos Mesh can kill containerd, but killing it leaves containers and sandboxes running (that is keep-containers); losing them all needs a node-level action", true
		}
		return "", false
	case faults.NodeShutdown:
		return "node-shutdown: Chaos Mesh has no graceful node shutdown (no NodeChaos; PhysicalMachineChaos cannot trigger the kubelet's shutdown manager); needs a node-level action (systemctl poweroff with an inhibitor, or kind's docker stop)", true
	case faults.NodePoweroff:
		return "node-poweroff: Chaos Mesh has no NodeChaos and PhysicalMachineChaos cannot power a machine off and back on; needs a node-level action (docker kill of a kind node)", true
	case faults.ContainerGC:
		return "container-gc: removing exited container records is runtime-internal; no Chaos Mesh action does it (node-level crictl rm instead)", true
	case faults.ProbeFailure:
		return "probe-failure: no Chaos Mesh action fails a kubelet probe; the kube backend forces it through the agent (exec touching /tmp/sidebench/force-fail-<probe>)", true
	case faults.ImageChange:
		return "image-change: a spec update, not chaos; the kube backend patches the pod through the API", true
	}
	return fmt.Sprintf("%s: not a fault kind sidebench knows", spec.Kind), true
}

// Hit is what the backend picked for one firing of a fault.
type Hit struct {
	// Pods and Container (OOMKill) are the pods and the container hit.
	Pods      Pods
	Container string
	// MemoryLimit (OOMKill) is the target container's memory limit in
	// bytes; the stressor asks for that much.
	MemoryLimit int64
	// Duration (OOMKill) bounds the stressor; 0: DefaultStressDuration.
	Duration time.Duration
	// Nodes (KubeletCrash, RuntimeRestart) are the node names hit.
	Nodes []string
	// Firing numbers the firings of one fault (0, 1, ...), so that each
	// gets its own object name.
	Firing int
}

// ErrUnsupported wraps Unsupported's reason in ForFault's error.
var ErrUnsupported = errors.New("not expressible with Chaos Mesh")

// ForFault builds the objects for one firing of spec (the index-th fault
// of its scenario). Unsupported kinds give an error wrapping
// ErrUnsupported with the reason.
//
// Process kills land on whatever the node's service manager does next:
// the downtime is its restart delay (systemd RestartSec), not
// spec.Downtime, so the backend must record the downtime it observes.
func ForFault(e Env, spec faults.Spec, index int, hit Hit) ([]Object, error) {
	if reason, bad := Unsupported(spec); bad {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, reason)
	}
	name := Name(e.RunID, spec.Label(index), hit.Firing)
	switch spec.Kind {
	case faults.OOMKill:
		if hit.MemoryLimit <= 0 {
			return nil, fmt.Errorf("chaos: oom-kill of container %q needs its memory limit (without one the stressor would exhaust the node, not the container)", hit.Container)
		}
		o, err := MemoryStress(e, name, hit.Pods, hit.Container, hit.MemoryLimit, hit.Duration)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	case faults.KubeletCrash:
		o, err := KubeletKill(e, name, hit.Nodes)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	case faults.RuntimeRestart:
		o, err := ProcessKill(e, name, spec.Kind.String(), hit.Nodes, "containerd")
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	return nil, fmt.Errorf("chaos: %s has no builder", spec.Kind) // unreachable: Unsupported covers it
}

// Injected reports what Chaos Mesh says of o's injection: done is true
// once the AllInjected condition is True, or every record of the last
// experiment is in phase Injected; targets counts the records. An object
// not built here (no Chaos Mesh status) is never injected.
func Injected(o Object) (done bool, targets int) {
	so, ok := o.(interface{ GetStatus() *v1alpha1.ChaosStatus })
	if !ok || so.GetStatus() == nil {
		return false, 0
	}
	st := so.GetStatus()
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionAllInjected && c.Status == corev1.ConditionTrue {
			return true, len(st.Experiment.Records)
		}
	}
	recs := st.Experiment.Records
	if len(recs) == 0 {
		return false, 0
	}
	for _, r := range recs {
		if r == nil || r.Phase != v1alpha1.Injected || r.InjectedCount == 0 {
			return false, len(recs)
		}
	}
	return true, len(recs)
}

// ListTypes returns an empty object of every kind the builders make, for
// deleting a run's objects by label (DeleteAllOf) kind by kind.
func ListTypes() []Object {
	return []Object{&v1alpha1.PodChaos{}, &v1alpha1.StressChaos{}, &v1alpha1.PhysicalMachineChaos{}}
}

// AddToScheme registers the Chaos Mesh types (for a controller-runtime
// client or a codec).
func AddToScheme(s *runtime.Scheme) error { return v1alpha1.AddToScheme(s) }

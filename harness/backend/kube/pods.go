package kube

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/chaos"
)

// Label keys the backend sets on what it creates. The run label selects
// everything one sidebench process created (namespaces, pods, chaos
// objects), for cleanup; the trial and workload labels select pods.
const (
	LabelRun      = chaos.LabelRun
	LabelTrial    = "sidebench.dev/trial"
	LabelWorkload = "sidebench.dev/workload"
)

// DefaultImage is the agent image `make image` builds.
const DefaultImage = "example.local/sidebench-agent:v1"

// DefaultAltImage is the same agent under a second name, which the
// image-change fault switches a container to (and back): a real spec
// change the kubelet must act on, with nothing pulled.
const DefaultAltImage = "example.local/sidebench-agent:v2"

// Agent paths inside the image and the pod.
const (
	agentBinary = "/sidebench-agent"
	logVolume   = "sidebench-log"
	logDir      = "/sidebench"
	logPath     = logDir + "/log.jsonl"
)

// PodTemplate is what agentPod needs of one workload.
type PodTemplate struct {
	// Spec is the scenario's pod spec (container images, commands and
	// probe handlers are replaced).
	Spec *corev1.PodSpec
	// Behaviors gives each container's behaviour by name.
	Behaviors map[string]behavior.Container
	// Seed is the trial seed: the agents draw their plans from it.
	Seed uint64
	// KeyNamespace is the namespace of the pod's behaviour stream key
	// ("namespace/name"): the scenario's namespace, not the run's, so that
	// the same seed draws the same plans as on sim and local.
	KeyNamespace string
	Image        string
}

// agentPodSpec returns the pod spec the kube backend creates: every
// container runs the agent image with its behaviour in the environment,
// probes and hooks exec the agent, and an emptyDir shared by all
// containers holds the lifecycle log.
func agentPodSpec(t PodTemplate) (*corev1.PodSpec, error) {
	out := t.Spec.DeepCopy()
	f := false
	out.AutomountServiceAccountToken = &f
	out.EnableServiceLinks = &f
	for _, v := range out.Volumes {
		if v.Name == logVolume {
			return nil, fmt.Errorf("the pod spec already has a volume named %q (reserved for the agent log)", logVolume)
		}
	}
	out.Volumes = append(out.Volumes, corev1.Volume{Name: logVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	fix := func(c *corev1.Container) error {
		bh, ok := t.Behaviors[c.Name]
		if !ok {
			bh = behavior.Default()
		}
		bj, err := json.Marshal(bh)
		if err != nil {
			return err
		}
		c.Image = t.Image
		c.Command, c.Args = nil, nil
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "SIDEBENCH_BEHAVIOR", Value: string(bj)},
			corev1.EnvVar{Name: "SIDEBENCH_SEED", Value: strconv.FormatUint(t.Seed, 10)},
			corev1.EnvVar{Name: "SIDEBENCH_CONTAINER", Value: c.Name},
			corev1.EnvVar{Name: "SIDEBENCH_NAMESPACE", Value: t.KeyNamespace},
			corev1.EnvVar{Name: "SIDEBENCH_POD", ValueFrom: fieldRef("metadata.name")},
			corev1.EnvVar{Name: "SIDEBENCH_POD_UID", ValueFrom: fieldRef("metadata.uid")},
			corev1.EnvVar{Name: "SIDEBENCH_LOG", Value: logPath},
			corev1.EnvVar{Name: "SIDEBENCH_STDOUT", Value: "1"},
		)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: logVolume, MountPath: logDir})
		// A behaviour that grows its memory needs a real limit to be
		// OOM-killed by the kernel; take the model's when the template
		// sets none.
		if bh.MemoryLimit > 0 {
			if _, set := c.Resources.Limits[corev1.ResourceMemory]; !set {
				if c.Resources.Limits == nil {
					c.Resources.Limits = corev1.ResourceList{}
				}
				c.Resources.Limits[corev1.ResourceMemory] = *resource.NewQuantity(bh.MemoryLimit, resource.BinarySI)
			}
		}
		probe := func(p *corev1.Probe, kind string) {
			if p != nil {
				p.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{agentBinary, "probe", kind}}}
			}
		}
		probe(c.StartupProbe, "startup")
		probe(c.ReadinessProbe, "ready")
		probe(c.LivenessProbe, "live")
		if l := c.Lifecycle; l != nil {
			if l.PostStart != nil {
				l.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{agentBinary, "hook", "poststart"}}}
			}
			if l.PreStop != nil {
				l.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{agentBinary, "hook", "prestop"}}}
			}
		}
		return nil
	}
	for i := range out.InitContainers {
		if err := fix(&out.InitContainers[i]); err != nil {
			return nil, err
		}
	}
	for i := range out.Containers {
		if err := fix(&out.Containers[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

// memoryLimit returns a container's memory limit in bytes (0: none).
func memoryLimit(ps *corev1.PodSpec, name string) int64 {
	for _, cs := range [][]corev1.Container{ps.InitContainers, ps.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				if q, ok := cs[i].Resources.Limits[corev1.ResourceMemory]; ok {
					return q.Value()
				}
			}
		}
	}
	return 0
}

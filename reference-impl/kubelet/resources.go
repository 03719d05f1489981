package kubelet

import "github.com/sidebench/sidebench/reference-impl/api"

// Resource semantics of a pod with sidecars (SEMANTICS.md §2.7). The
// scheduler, the kubelet's admission and its cgroups all count the same
// effective requests; the API server computes the QoS class once; the
// kubelet gives each container an oom_score_adj.

// EffectiveRequests returns the pod's effective CPU (milli) and memory
// (bytes) requests, INV-Q1: max(max_i InitContainerUse(i), Σ sidecars +
// Σ mains) + overhead, where InitContainerUse(i) is the sidecars started
// before init container i plus i's own request (a sidecar counts once).
// k8s.io/component-helpers/resource PodRequests (AggregateContainerRequests
// with restartable init containers).
func EffectiveRequests(spec *api.PodSpec) (cpu, mem int64) {
	var sideCPU, sideMem, initCPU, initMem int64
	for i := range spec.Init {
		r := &spec.Init[i].Resources
		useCPU, useMem := r.CPURequest+sideCPU, r.MemRequest+sideMem
		if spec.Init[i].Role == api.RoleSidecar {
			sideCPU, sideMem = useCPU, useMem
		}
		initCPU, initMem = max(initCPU, useCPU), max(initMem, useMem)
	}
	cpu, mem = sideCPU, sideMem
	for i := range spec.Main {
		cpu += spec.Main[i].Resources.CPURequest
		mem += spec.Main[i].Resources.MemRequest
	}
	return max(cpu, initCPU) + spec.OverheadCPU, max(mem, initMem) + spec.OverheadMem
}

// QOSClass names a pod QoS class.
type QOSClass uint8

const (
	QOSBestEffort QOSClass = iota
	QOSBurstable
	QOSGuaranteed
)

var qosNames = [...]string{"BestEffort", "Burstable", "Guaranteed"}

func (q QOSClass) String() string { return qosNames[q] }

// PodQOS is the pod's QoS class, INV-Q2: computed over init containers
// (sidecars included) and main containers alike (pkg/apis/core/v1/helper/
// qos ComputePodQOS): Guaranteed if every container has CPU and memory
// requests equal to non-zero limits, BestEffort if none has any request
// or limit, Burstable otherwise.
func PodQOS(spec *api.PodSpec) QOSClass {
	first := true
	var pod QOSClass
	for i := 0; i < spec.Len(); i++ {
		q := containerQOS(&spec.At(i).Resources)
		switch {
		case q == QOSBurstable:
			return QOSBurstable
		case first:
			pod, first = q, false
		case q != pod:
			return QOSBurstable
		}
	}
	return pod
}

// containerQOS is requirementsQOS for CPU and memory.
func containerQOS(r *api.Resources) QOSClass {
	cpu := resourceQOS(r.CPURequest, r.CPULimit)
	mem := resourceQOS(r.MemRequest, r.MemLimit)
	if cpu != mem {
		return QOSBurstable
	}
	return cpu
}

func resourceQOS(req, lim int64) QOSClass {
	switch {
	case req != lim:
		return QOSBurstable
	case req == 0:
		return QOSBestEffort
	}
	return QOSGuaranteed
}

// oom_score_adj values of kubelet/qos/policy.go.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// OOMScoreAdj is the oom_score_adj the kubelet gives container i on a node
// with memCapacity bytes, INV-Q3 (kubelet/qos/policy.go
// GetContainerOOMScoreAdjust): -997 for node-critical and Guaranteed pods,
// 1000 for BestEffort; for Burstable 1000 - 1000*request/capacity, within
// [3, 999], where a sidecar uses no more than the main container with the
// smallest memory request gets (isSidecarContainer, PR #128029).
//
// Under bug replica BugOwnOOMScore the sidecar's own request decides.
func OOMScoreAdj(spec *api.PodSpec, i int, memCapacity int64, g api.Gates) int32 {
	if spec.NodeCritical {
		return guaranteedOOMScoreAdj // IsNodeCriticalPod
	}
	switch PodQOS(spec) {
	case QOSGuaranteed:
		return guaranteedOOMScoreAdj
	case QOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memCapacity <= 0 {
		memCapacity = 1
	}
	adj := 1000 - 1000*spec.At(i).Resources.MemRequest/memCapacity
	if spec.At(i).Role == api.RoleSidecar && len(spec.Main) > 0 && g.Bug != api.BugOwnOOMScore {
		minReq := spec.Main[0].Resources.MemRequest
		for j := range spec.Main {
			minReq = min(minReq, spec.Main[j].Resources.MemRequest)
		}
		adj = min(adj, 1000-1000*minReq/memCapacity)
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		return besteffortOOMScoreAdj - 1
	}
	return int32(adj)
}

// CPUSet is a set of CPU ids 0..63.
type CPUSet uint64

// String renders s as a Linux cpuset list ("0-1,4"), the form of CRI
// LinuxContainerResources.CpusetCpus.
func (s CPUSet) String() string {
	var b []byte
	for i := 0; i < 64; {
		if s&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 64 && s&(1<<uint(j+1)) != 0 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, i)
		if j > i {
			b = appendInt(append(b, '-'), j)
		}
		i = j + 1
	}
	return string(b)
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// take returns the n lowest CPUs of s.
func (s CPUSet) take(n int) (CPUSet, bool) {
	var out CPUSet
	for i := 0; i < 64 && n > 0; i++ {
		if s&(1<<uint(i)) != 0 {
			out |= 1 << uint(i)
			n--
		}
	}
	return out, n == 0
}

// AllocateCPUs is the static CPU manager's allocation for a pod admitted
// on a node whose free exclusive CPUs are free (cm/cpumanager
// policy_static.go Allocate, updateCPUsToReuse), INV-Q5. Containers of a
// Guaranteed pod with an integral CPU request get that many exclusive
// CPUs, in spec order (init containers first). The CPUs of a regular init
// container are reusable by the containers after it; a sidecar's are not,
// since it keeps running next to them (KEP-753 §"Topology and CPU
// managers"); a main's are taken out of the reusable set. out[i] receives
// container i's set (0: the shared pool). It returns the CPUs taken from
// free, or ok=false if they do not fit. Bug replica BugSidecarCPUsReused
// reuses a sidecar's CPUs like a regular init container's (the 1.28 alpha
// known issue).
func AllocateCPUs(spec *api.PodSpec, free CPUSet, g api.Gates, out []CPUSet) (taken CPUSet, ok bool) {
	clear(out)
	if PodQOS(spec) != QOSGuaranteed {
		return 0, true
	}
	var reuse CPUSet
	for i := 0; i < spec.Len(); i++ {
		c := spec.At(i)
		if c.Resources.CPURequest <= 0 || c.Resources.CPURequest%1000 != 0 {
			continue // not integral: the shared pool
		}
		n := int(c.Resources.CPURequest / 1000)
		set, enough := reuse.take(n)
		if !enough {
			more, fits := (free &^ taken).take(n - popcount(set))
			if !fits {
				return 0, false
			}
			set |= more
			taken |= more
		}
		out[i] = set
		switch {
		case c.Role == api.RoleInit, c.Role == api.RoleSidecar && g.Bug == api.BugSidecarCPUsReused:
			reuse |= set
		case c.Role == api.RoleSidecar:
			reuse &^= set // it keeps running next to what follows
		default:
			reuse &^= set
		}
	}
	return taken, true
}

func popcount(s CPUSet) int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

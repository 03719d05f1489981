package kubelet

import (
	"testing"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// mem is a memory-only Burstable container (request, limit).
func memCtr(name string, role api.Role, req, lim int64) api.Container {
	return api.Container{Name: name, Role: role, Resources: api.Resources{MemRequest: req, MemLimit: lim}}
}

// The cases of kubelet/qos/policy_test.go (v1.37.2) for sidecars: a node
// of 8e9 bytes, the init and main containers request 1/8 of it.
func TestOOMScoreAdj(t *testing.T) {
	const capacity = 8_000_000_000
	req, lim := int64(capacity/8), int64(1000+capacity/8)
	for name, tc := range map[string]struct {
		sidecarReq int64
		want       map[string]int32
	}{
		// burstableMixedMultiContainerSmallSidecarPod: the small sidecar
		// (950 on its own) gets the main's 875.
		"small sidecar matches the main": {capacity / 20, map[string]int32{"init-container": 875, "sidecar": 875, "main-1": 875}},
		// burstableMixedMultiContainerSameRequestPod.
		"same request": {req, map[string]int32{"init-container": 875, "sidecar": 875, "main-1": 875}},
		// burstableMixedMultiContainerBigSidecarContainerPod: a big sidecar
		// keeps its own lower score.
		"big sidecar keeps its own": {capacity / 2, map[string]int32{"init-container": 875, "sidecar": 500, "main-1": 875}},
	} {
		t.Run(name, func(t *testing.T) {
			spec := &api.PodSpec{
				Init: []api.Container{memCtr("init-container", api.RoleInit, req, lim), memCtr("sidecar", api.RoleSidecar, tc.sidecarReq, lim)},
				Main: []api.Container{memCtr("main-1", api.RoleMain, req, lim)},
			}
			for i := 0; i < spec.Len(); i++ {
				if got := OOMScoreAdj(spec, i, capacity, api.Gates{}); got != tc.want[spec.At(i).Name] {
					t.Errorf("%s: oom_score_adj %d, want %d", spec.At(i).Name, got, tc.want[spec.At(i).Name])
				}
			}
		})
	}
	// Bug replica own-oom-score: the small sidecar keeps its own 950.
	small := &api.PodSpec{
		Init: []api.Container{memCtr("sidecar", api.RoleSidecar, capacity/20, lim)},
		Main: []api.Container{memCtr("main-1", api.RoleMain, req, lim)},
	}
	if got := OOMScoreAdj(small, 0, capacity, api.Gates{Bug: api.BugOwnOOMScore}); got != 950 {
		t.Errorf("bug own-oom-score: sidecar %d, want 950", got)
	}
	g := &api.PodSpec{Main: []api.Container{{Name: "m", Role: api.RoleMain, Resources: api.Resources{CPURequest: 100, CPULimit: 100, MemRequest: 1 << 20, MemLimit: 1 << 20}}}}
	if got := OOMScoreAdj(g, 0, capacity, api.Gates{}); got != -997 {
		t.Errorf("Guaranteed: %d, want -997", got)
	}
	if got := OOMScoreAdj(&api.PodSpec{Main: []api.Container{{Name: "m", Role: api.RoleMain}}}, 0, capacity, api.Gates{}); got != 1000 {
		t.Errorf("BestEffort: %d, want 1000", got)
	}
	if got := OOMScoreAdj(&api.PodSpec{NodeCritical: true, Main: []api.Container{{Name: "m", Role: api.RoleMain}}}, 0, capacity, api.Gates{}); got != -997 {
		t.Errorf("node-critical: %d, want -997", got)
	}
}

// INV-Q2: init containers and sidecars count like mains (ComputePodQOS).
func TestPodQOS(t *testing.T) {
	guaranteed := api.Resources{CPURequest: 100, CPULimit: 100, MemRequest: 1 << 20, MemLimit: 1 << 20}
	for name, tc := range map[string]struct {
		init, main api.Resources
		want       QOSClass
	}{
		"nothing set":                      {want: QOSBestEffort},
		"all guaranteed":                   {init: guaranteed, main: guaranteed, want: QOSGuaranteed},
		"a BestEffort sidecar":             {main: guaranteed, want: QOSBurstable},
		"a Burstable sidecar":              {init: api.Resources{MemRequest: 1}, want: QOSBurstable},
		"cpu only is not guaranteed":       {init: api.Resources{CPURequest: 1, CPULimit: 1}, main: api.Resources{CPURequest: 1, CPULimit: 1}, want: QOSBurstable},
		"request below limit is burstable": {init: guaranteed, main: api.Resources{CPURequest: 50, CPULimit: 100, MemRequest: 1 << 20, MemLimit: 1 << 20}, want: QOSBurstable},
	} {
		t.Run(name, func(t *testing.T) {
			spec := &api.PodSpec{Init: []api.Container{{Name: "s", Role: api.RoleSidecar, Resources: tc.init}}, Main: []api.Container{{Name: "m", Role: api.RoleMain, Resources: tc.main}}}
			if got := PodQOS(spec); got != tc.want {
				t.Errorf("QoS %v, want %v", got, tc.want)
			}
		})
	}
}

// INV-Q1, with the examples of KEP-753 §"Resources calculation for
// scheduling and pod admission".
func TestEffectiveRequests(t *testing.T) {
	c := func(name string, role api.Role, cpu int64) api.Container {
		return api.Container{Name: name, Role: role, Resources: api.Resources{CPURequest: cpu, MemRequest: cpu << 20}}
	}
	for name, tc := range map[string]struct {
		spec api.PodSpec
		want int64
	}{
		// An init container bigger than the steady state decides.
		"big init": {api.PodSpec{Init: []api.Container{c("i", api.RoleInit, 1000), c("s", api.RoleSidecar, 100)}, Main: []api.Container{c("m", api.RoleMain, 200)}}, 1000},
		// A sidecar before an init container runs beside it: 100 + 500.
		"sidecar before init": {api.PodSpec{Init: []api.Container{c("s", api.RoleSidecar, 100), c("i", api.RoleInit, 500)}, Main: []api.Container{c("m", api.RoleMain, 200)}}, 600},
		// Steady state: sidecars plus mains.
		"steady state": {api.PodSpec{Init: []api.Container{c("i", api.RoleInit, 100), c("s1", api.RoleSidecar, 200), c("s2", api.RoleSidecar, 300)}, Main: []api.Container{c("m", api.RoleMain, 400)}}, 900},
		"overhead":     {api.PodSpec{Main: []api.Container{c("m", api.RoleMain, 400)}, OverheadCPU: 50, OverheadMem: 50 << 20}, 450},
	} {
		t.Run(name, func(t *testing.T) {
			cpu, mem := EffectiveRequests(&tc.spec)
			if cpu != tc.want || mem != tc.want<<20 {
				t.Errorf("effective requests %dm/%d, want %dm/%d", cpu, mem, tc.want, tc.want<<20)
			}
		})
	}
}

// INV-Q5: a regular init container's CPUs are reused, a sidecar's are not
// (policy_static.go updateCPUsToReuse).
func TestAllocateCPUs(t *testing.T) {
	g := func(name string, role api.Role, cpus int64) api.Container {
		return api.Container{Name: name, Role: role, Resources: api.Resources{CPURequest: cpus * 1000, CPULimit: cpus * 1000, MemRequest: 1 << 20, MemLimit: 1 << 20}}
	}
	spec := &api.PodSpec{
		Init: []api.Container{g("init", api.RoleInit, 2), g("sidecar", api.RoleSidecar, 1)},
		Main: []api.Container{g("main", api.RoleMain, 2)},
	}
	out := make([]CPUSet, 3)
	taken, ok := AllocateCPUs(spec, 0xff, api.Gates{}, out)
	if !ok || out[0].String() != "0-1" || out[1].String() != "0" || out[2].String() != "1-2" || taken.String() != "0-2" {
		t.Fatalf("allocation %v %v %v taken %v ok %v, want 0-1, 0, 1-2 taken 0-2", out[0], out[1], out[2], taken, ok)
	}
	if out[1]&out[2] != 0 {
		t.Errorf("sidecar and main share CPUs")
	}
	// Bug replica sidecar-cpus-reused: the main gets the sidecar's CPU.
	if _, ok := AllocateCPUs(spec, 0xff, api.Gates{Bug: api.BugSidecarCPUsReused}, out); !ok || out[1]&out[2] == 0 {
		t.Errorf("bug replica: sidecar %v main %v, want them to share", out[1], out[2])
	}
	if _, ok := AllocateCPUs(spec, 0x3, api.Gates{}, out); ok {
		t.Errorf("3 CPUs fit in 2")
	}
	if s := CPUSet(0b1011_0111).String(); s != "0-2,4-5,7" {
		t.Errorf("cpuset %q", s)
	}
}

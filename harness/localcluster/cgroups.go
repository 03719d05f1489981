package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Kubelets on sidebench's CRI server run with cgroupsPerQOS: true, each
// under a cgroup root of its own (kubeletCgroupRoot), although no process
// ever runs in those cgroups: kubelet v1.37.2 cannot actuate an in-place
// resize without the pod cgroup manager. With cgroupsPerQOS: false its
// podContainerManagerNoop.GetPodCgroupConfig returns a nil config
// (cm/pod_container_manager_linux.go:372), which doPodResizeAction
// dereferences (kuberuntime_manager.go:1109 for memory, :1138 for cpu):
// the pod worker panics and the kubelet process dies on the first resize
// it actuates (measured: every kubelet of a fault-resize trial died at its
// first ResizeRestart, docs/local-backend.md). With a real pod cgroup the
// kubelet reads and writes its cpu.shares / memory limit, then calls CRI
// UpdateContainerResources.
//
// Each kubelet gets its own root because kubepods/ under one root would be
// shared by every kubelet of the host (each would manage, and clean up as
// orphans, the others' pod cgroups). The roots are recorded in the state
// file before they exist; teardown removes them with everything the
// kubelet created below (kubepods, QoS and pod cgroups).

// kubeletCgroupRoot is the --cgroup-root of node name's kubelet.
func kubeletCgroupRoot(clusterID, name string) string {
	return "/sidebench-" + clusterID + "-" + name
}

// kubeletCgroupDirs returns root's directory in every cgroup hierarchy
// (the kubelet's cgroupfs driver checks that the root exists in each v1
// controller it uses), or why the kubelet could not use it: on a cgroup
// v2 host the kubelet needs its controllers delegated to the root, and
// sidebench does not change the host's top-level subtree_control.
func kubeletCgroupDirs(root string) ([]string, error) {
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy mounted")
	}
	if len(hs) == 1 {
		if missing := missingV2Controllers(hs[0]); len(missing) > 0 {
			return nil, fmt.Errorf("cgroup v2: controllers %s are not enabled in %s/cgroup.subtree_control", strings.Join(missing, ", "), hs[0])
		}
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = filepath.Join(h, root)
	}
	return out, nil
}

// missingV2Controllers lists the controllers the kubelet needs on a
// cgroup v2 host (cm/cgroup_v2_manager_linux.go getSupportedUnifiedControllers,
// those the kernel has) that are not delegated below mount.
func missingV2Controllers(mount string) []string {
	avail, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	if err != nil {
		return nil // a v1 hierarchy
	}
	sub, _ := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control"))
	has := map[string]bool{}
	for _, c := range strings.Fields(string(sub)) {
		has[c] = true
	}
	var missing []string
	for _, c := range strings.Fields(string(avail)) {
		switch c {
		case "cpu", "cpuset", "memory", "hugetlb", "pids":
			if !has[c] {
				missing = append(missing, c)
			}
		}
	}
	return missing
}

// makeCgroupDirs creates dirs (the state file lists them first).
func makeCgroupDirs(dirs []string) error {
	for _, d := range dirs {
		if err := syscall.Mkdir(d, 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("localcluster: create cgroup %s: %w", d, err)
		}
	}
	return nil
}

package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory a cluster needs, from the density benchmark (docs/local-backend.md,
// "Density": hack/density.sh). Per node: a kubelet's RSS (89 MiB idle at
// 80 nodes, more while it runs pods) and its share of the apiserver's
// watch caches and of the harness's CRI server; containerd adds its own
// process. The base is kube-apiserver, etcd, kube-scheduler and the
// harness.
const (
	baseBytes              = 768 << 20
	perNodeBytes           = 128 << 20
	perContainerdNodeBytes = 64 << 20
)

// needBytes is what a cluster of nodes kubelets on runtime needs.
func needBytes(nodes int, runtime string) int64 {
	per := int64(perNodeBytes)
	if runtime == RuntimeContainerd {
		per += perContainerdNodeBytes
	}
	return baseBytes + int64(nodes)*per
}

// FitError is Up's refusal of a cluster that does not fit in memory (a
// usage error: fewer nodes fit).
type FitError struct{ msg string }

func (e *FitError) Error() string { return e.msg }

// checkFits refuses, before anything starts, a cluster that does not fit
// in avail bytes of memory, and says how many nodes would.
func checkFits(nodes int, runtime string, avail int64) error {
	need := needBytes(nodes, runtime)
	if need <= avail {
		return nil
	}
	max := 0
	for needBytes(max+1, runtime) <= avail {
		max++
	}
	per := needBytes(1, runtime) - baseBytes
	return &FitError{fmt.Sprintf("localcluster: %d kubelets need about %.1f GiB (%d MiB each plus %d MiB for the control plane), but %.1f GiB of memory is available (MemAvailable in /proc/meminfo): at most %d fit",
		nodes, float64(need)/(1<<30), per>>20, baseBytes>>20, float64(avail)/(1<<30), max)}
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
}

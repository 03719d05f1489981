package history

import "strconv"

// Pod names. A history names a pod "namespace/name"; the n-th pod (from 0)
// of a scenario workload is named "<namespace>/<workload>-<n>" on every
// backend, so that the same seed gives the same pods (and the same random
// streams, which are keyed by pod name) on sim and on real kubelets.

// DefaultNamespace is the namespace of a workload that names none.
const DefaultNamespace = "default"

// PodNamePrefix is the part of a workload's pod names before the index.
func PodNamePrefix(namespace, workload string) string {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return namespace + "/" + workload + "-"
}

// PodName is the name of the n-th pod of a workload.
func PodName(namespace, workload string, n int) string {
	return string(AppendPodName(nil, PodNamePrefix(namespace, workload), n))
}

// AppendPodName appends prefix (PodNamePrefix) and n to b: the
// allocation-free form for the sim's hot path.
func AppendPodName(b []byte, prefix string, n int) []byte {
	return strconv.AppendInt(append(b, prefix...), int64(n), 10)
}

// SplitPodName splits "namespace/name"; a name without a namespace is in
// DefaultNamespace.
func SplitPodName(full string) (namespace, name string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[:i], full[i+1:]
		}
	}
	return DefaultNamespace, full
}

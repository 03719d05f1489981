// Package memlimit finds the memory limit of the process's cgroup and
// turns a memory budget into the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit), as automemlimit and Prometheus do: with
// the default GOGC=100 the heap grows to twice the live heap before the
// collector runs, and a process in a container with a memory limit is
// OOM-killed long before the collector would have needed to run.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// LimitFraction is the share of a memory budget given to the Go runtime
// as its soft limit. The rest is headroom for what the runtime does not
// count (the binary's mapped text and data) and for its overshoot: the
// limit is soft, the collector catches up after the heap crossed it.
const LimitFraction = 0.9

// SoftLimit is the Go soft memory limit for a memory budget of budget
// bytes.
func SoftLimit(budget int64) int64 { return int64(float64(budget) * LimitFraction) }

// CgroupLimit returns the memory limit of the process's cgroup v2: the
// lowest memory.max of its cgroup and of the cgroup's ancestors, all read
// from root (the file system root, os.DirFS("/") outside tests), with the
// cgroup named by proc/self/cgroup. It returns 0 and no error when there
// is no limit: memory.max is "max" all the way up, no cgroup v2 line
// (a cgroup v1 host: this package reads v2 only), or no cgroup file
// system. An unreadable or malformed memory.max is an error.
func CgroupLimit(root fs.FS) (int64, error) {
	dir, err := cgroupV2Path(root)
	if err != nil || dir == "" {
		return 0, err
	}
	// In a cgroup namespace (a Kubernetes container) the path is "/" and
	// the mount's root is the container's cgroup. A path that climbs out
	// of the namespace ("/../..") cannot be found under the mount: only
	// its root is read.
	if strings.Contains(dir, "..") {
		dir = "/"
	}
	best := int64(0)
	for {
		v, err := readMemoryMax(root, path.Join("sys/fs/cgroup", dir, "memory.max"))
		if err != nil {
			return 0, err
		}
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
		if dir == "/" || dir == "." || dir == "" {
			return best, nil
		}
		dir = path.Dir(dir)
	}
}

// cgroupV2Path returns the process's cgroup v2 path ("/" or
// "/kubepods.slice/..."), or "" if proc/self/cgroup has no v2 line
// ("0::PATH") or does not exist.
func cgroupV2Path(root fs.FS) (string, error) {
	f, err := root.Open("proc/self/cgroup")
	if err != nil {
		if isNotExist(err) {
			return "", nil
		}
		return "", fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok && strings.HasPrefix(p, "/") {
			return p, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("memlimit: proc/self/cgroup: %w", err)
	}
	return "", nil
}

// readMemoryMax reads a memory.max file: bytes, or 0 for "max" or a
// missing file (the root cgroup has none).
func readMemoryMax(root fs.FS, name string) (int64, error) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		if isNotExist(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("memlimit: /%s: %q is neither a byte count nor \"max\"", name, s)
	}
	return v, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

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
	"slices"
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

// CgroupLimit returns the memory limit of the process's cgroup: the
// lowest limit of its cgroup and of the cgroup's ancestors, all read from
// root (the file system root, os.DirFS("/") outside tests), with the
// cgroup named by proc/self/cgroup. Where the memory controller is a
// cgroup v1 hierarchy (a v1 host, or a hybrid one such as systemd's,
// whose v2 mount has no controllers) the limits are memory.limit_in_bytes
// under sys/fs/cgroup/memory; on a v2 host, memory.max under
// sys/fs/cgroup. It returns 0 and no error when there is no limit (every
// file says "max", or v1's "unlimited", which is a number near 2^63), no
// cgroup line, or no cgroup file system. An unreadable or malformed file
// is an error.
func CgroupLimit(root fs.FS) (int64, error) {
	v2, v1, err := cgroupPaths(root)
	if err != nil {
		return 0, err
	}
	switch {
	case v1 != "":
		return lowest(root, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
	case v2 != "":
		return lowest(root, "sys/fs/cgroup", v2, "memory.max")
	}
	return 0, nil
}

// lowest returns the lowest limit in file of the cgroup dir under mount
// and of its ancestors (0: none).
func lowest(root fs.FS, mount, dir, file string) (int64, error) {
	// In a cgroup namespace (a Kubernetes container) the path is "/" and
	// the mount's root is the container's cgroup. A path that climbs out
	// of the namespace ("/../..") cannot be found under the mount: only
	// its root is read. (A v1 container without a cgroup namespace sees
	// the host's path, which is not under its mount either: the files are
	// missing up to the mount's root, which is the container's cgroup.)
	if strings.Contains(dir, "..") {
		dir = "/"
	}
	best := int64(0)
	for {
		v, err := readLimit(root, path.Join(mount, dir, file))
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

// cgroupPaths returns the process's cgroup v2 path ("/" or
// "/kubepods.slice/...") and the path of its cgroup v1 memory hierarchy,
// each "" if proc/self/cgroup has no such line ("0::PATH";
// "N:memory:PATH", possibly with other controllers) or does not exist.
func cgroupPaths(root fs.FS) (v2, v1 string, _ error) {
	f, err := root.Open("proc/self/cgroup")
	if err != nil {
		if isNotExist(err) {
			return "", "", nil
		}
		return "", "", fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, rest, _ := strings.Cut(sc.Text(), ":")
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2 = p
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			v1 = p
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("memlimit: proc/self/cgroup: %w", err)
	}
	return v2, v1, nil
}

// unlimitedV1 is where cgroup v1's "no limit" starts: the kernel reports
// the largest page-aligned int64 (9223372036854771712 with 4 KiB pages).
const unlimitedV1 = 1 << 62

// readLimit reads a memory.max or memory.limit_in_bytes file: bytes, or
// 0 for no limit ("max", v1's unlimited) or a missing file (the root
// cgroup has none).
func readLimit(root fs.FS, name string) (int64, error) {
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
	if v >= unlimitedV1 {
		return 0, nil
	}
	return v, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

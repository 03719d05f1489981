package scenario

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sidebench/sidebench/internal/memlimit"
)

// MachineMemory returns the memory a sidebench process may use, and where
// that figure comes from: the smallest of the machine's memory
// (/proc/meminfo MemTotal), the cgroup's limit (memory.max) and the
// process's address-space limit (RLIMIT_AS, as `prlimit --as` sets),
// minus the address space the Go runtime reserves beyond what it uses.
// It returns 0 when none is known.
func MachineMemory() (int64, string) {
	best, src := int64(0), ""
	consider := func(v int64, what string) {
		if v > 0 && (best == 0 || v < best) {
			best, src = v, what
		}
	}
	consider(memTotal(), "machine memory")
	consider(cgroupMax(), "the cgroup's memory limit")
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != math.MaxUint64 && rl.Cur < math.MaxInt64 {
		// Go maps more address space than it uses (arenas, stacks, the
		// binary): keep a margin.
		consider(int64(rl.Cur)-addressSpaceMargin, "the address-space limit (RLIMIT_AS)")
	}
	return best, src
}

// addressSpaceMargin is the address space a sidebench process maps beyond
// its resident memory (VmSize − VmRSS of a running `sidebench run`: about
// 1.7 GiB).
const addressSpaceMargin = 1792 << 20

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupMax is the memory limit of the process's cgroup (v2), 0 if none.
func cgroupMax() int64 {
	v, _ := memlimit.CgroupLimit(os.DirFS("/"))
	return v
}

// ParseBytes reads a memory size: a number with an optional unit B, KiB,
// MiB, GiB, TiB (powers of 1024; Ki, Mi, Gi, Ti too) or KB, MB, GB, TB
// (powers of 1000): "8GiB", "512Mi", "2.5GB", "1048576".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	mult := map[string]float64{"": 1, "B": 1,
		"K": 1 << 10, "Ki": 1 << 10, "KiB": 1 << 10, "KB": 1e3, "kB": 1e3,
		"M": 1 << 20, "Mi": 1 << 20, "MiB": 1 << 20, "MB": 1e6,
		"G": 1 << 30, "Gi": 1 << 30, "GiB": 1 << 30, "GB": 1e9,
		"T": 1 << 40, "Ti": 1 << 40, "TiB": 1 << 40, "TB": 1e12,
	}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || !(v > 0) || math.IsInf(v, 0) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid memory size %q (use a positive number with a unit: 8GiB, 512MiB, 2GB)", s)
	}
	return int64(v * mult), nil
}

// FormatBytes writes a memory size in binary units, as messages show it
// ("921.6 MiB").
func FormatBytes(n int64) string { return fmtBytes(float64(n)) }

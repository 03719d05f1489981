package cli

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMemory is a memoryEnv with a given environment and cgroup limit that
// records the soft limits set instead of setting the test process's.
type fakeMemory struct {
	env    map[string]string
	cgroup int64
	limit  int64 // the runtime's current limit
	set    []int64
}

func (m *fakeMemory) memoryEnv() memoryEnv {
	m.limit = math.MaxInt64
	return memoryEnv{
		getenv:      func(k string) string { return m.env[k] },
		cgroupLimit: func() (int64, error) { return m.cgroup, nil },
		setLimit: func(v int64) int64 {
			old := m.limit
			if v >= 0 {
				m.limit = v
				m.set = append(m.set, v)
			}
			return old
		},
	}
}

// TestMemoryLimit: run and soak set the Go soft memory limit to 90% of
// --max-memory, else (without GOMEMLIMIT) to 90% of the cgroup's memory
// limit, and refuse a bad --max-memory naming the flag and the sizes
// allowed.
func TestMemoryLimit(t *testing.T) {
	const gib = int64(1) << 30
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		cgroup  int64
		want    []int64 // soft limits set
		code    int
		wantErr string
	}{
		{name: "--max-memory", args: []string{"--max-memory", "1GiB"}, want: []int64{966367641}},
		{name: "--max-memory over the cgroup and GOMEMLIMIT", args: []string{"--max-memory", "800Mi"},
			env: map[string]string{"GOMEMLIMIT": "2GiB"}, cgroup: 4 * gib, want: []int64{754974720}},
		{name: "cgroup limit", cgroup: 2 * gib, want: []int64{1932735283}},
		{name: "GOMEMLIMIT wins over the cgroup", env: map[string]string{"GOMEMLIMIT": "1GiB"}, cgroup: 2 * gib},
		{name: "no cgroup limit, no flag: the runtime's default"},
		{name: "bad size", args: []string{"--max-memory", "lots"}, code: ExitUsage,
			wantErr: `--max-memory: invalid memory size "lots" (use a positive number with a unit: 8GiB, 512MiB, 2GB)`},
		{name: "negative size", args: []string{"--max-memory", "-1GiB"}, code: ExitUsage, wantErr: "--max-memory: invalid memory size"},
		{name: "refused scenario: no limit set", args: []string{"--max-memory", "1KiB"}, code: ExitUsage, wantErr: "needs about"},
	}
	for _, tt := range tests {
		for _, cmd := range [][]string{{"run", "--quiet"}, {"soak", "--quiet", "--duration", "1ms"}} {
			t.Run(tt.name+"/"+cmd[0], func(t *testing.T) {
				m := &fakeMemory{env: tt.env, cgroup: tt.cgroup}
				d := defaultDeps()
				d.memory = m.memoryEnv()
				args := append(append(append([]string{}, cmd...), tt.args...), "--out", filepath.Join(t.TempDir(), "r"), "testdata/tiny.yaml")
				_, errOut, code := runDeps(t, context.Background(), d, args...)
				if tt.code != ExitOK && (code != tt.code || !strings.Contains(errOut, tt.wantErr)) {
					t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.code, tt.wantErr)
				}
				if tt.code == ExitOK && code != ExitOK && code != ExitFailed { // the run's verdicts do not matter here
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if len(m.set) != len(tt.want) || (len(tt.want) > 0 && m.set[0] != tt.want[0]) {
					t.Errorf("soft limits set %v, want %v", m.set, tt.want)
				}
			})
		}
	}
}

// TestMemoryLimitOnResume: soak --resume sets the limit too (the nightly
// soak's pod resumes after a restart), and says where it comes from.
func TestMemoryLimitOnResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "soak")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "1ms", "--out", dir, "testdata/tiny.yaml"); code == ExitUsage || code == ExitInternal {
		t.Fatalf("soak: exit %d: %s", code, errOut)
	}
	m := &fakeMemory{cgroup: 1 << 30}
	d := defaultDeps()
	d.memory = m.memoryEnv()
	_, errOut, code := runDeps(t, context.Background(), d, "soak", "--progress", "plain", "--resume", dir, "--duration", "1ms")
	if code == ExitUsage || code == ExitInternal {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if len(m.set) != 1 || m.set[0] != 966367641 {
		t.Errorf("soft limits set %v, want [966367641]", m.set)
	}
	if want := "sidebench: Go soft memory limit 921.6 MiB (90% of the cgroup's memory limit"; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

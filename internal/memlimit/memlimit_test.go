package memlimit

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestCgroupLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	const v1 = "12:memory:/user.slice\n11:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice/session-1.scope\n"
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    int64
		wantErr string
	}{{
		name: "container in its cgroup namespace, limited",
		files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("1073741824\n"),
		},
		want: 1 << 30,
	}, {
		name: "max: no limit",
		files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		},
	}, {
		name: "the lowest limit of the cgroup and its ancestors",
		files: fstest.MapFS{
			"proc/self/cgroup": file("0::/kubepods.slice/pod1/ctr\n"),
			"sys/fs/cgroup/kubepods.slice/pod1/ctr/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods.slice/pod1/memory.max":     file("2147483648\n"),
			"sys/fs/cgroup/kubepods.slice/memory.max":          file("8589934592\n"),
		},
		want: 2 << 30,
	}, {
		name: "the cgroup's own limit below its parent's",
		files: fstest.MapFS{
			"proc/self/cgroup":                     file("0::/a/b\n"),
			"sys/fs/cgroup/a/b/memory.max":         file("536870912"),
			"sys/fs/cgroup/a/memory.max":           file("1073741824"),
			"sys/fs/cgroup/a/b/memory.swap.max":    file("0"),
			"sys/fs/cgroup/a/b/cgroup.controllers": file("memory"),
		},
		want: 512 << 20,
	}, {
		name: "path outside the namespace: only the mount's root",
		files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/../../other\n"),
			"sys/fs/cgroup/memory.max": file("3221225472\n"),
		},
		want: 3 << 30,
	}, {
		name:  "missing memory.max: no limit",
		files: fstest.MapFS{"proc/self/cgroup": file("0::/user.slice\n")},
	}, {
		name:  "no /proc: no limit",
		files: fstest.MapFS{"sys/fs/cgroup/memory.max": file("1073741824\n")},
	}, {
		name: "cgroup v1 host: memory.limit_in_bytes, the lowest up the hierarchy",
		files: fstest.MapFS{
			"proc/self/cgroup": file(v1),
			"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": file("1073741824\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            file("9223372036854771712\n"),
		},
		want: 1 << 30,
	}, {
		name: "cgroup v1 unlimited",
		files: fstest.MapFS{
			"proc/self/cgroup": file(v1),
			"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": file("9223372036854771712\n"),
		},
	}, {
		name: "cgroup v1 memory sharing a hierarchy with other controllers",
		files: fstest.MapFS{
			"proc/self/cgroup": file("4:cpuset,memory:/job\n"),
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": file("536870912"),
		},
		want: 512 << 20,
	}, {
		name: "cgroup v1 container without a cgroup namespace: the host's path is not under the mount, its root is the container's",
		files: fstest.MapFS{
			"proc/self/cgroup":                           file("9:memory:/kubepods/burstable/pod1/abc\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("2147483648"),
		},
		want: 2 << 30,
	}, {
		name: "hybrid host (systemd): memory is a v1 controller, the v2 mount has none",
		files: fstest.MapFS{
			"proc/self/cgroup": file(v1 + "0::/user.slice\n"),
			"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": file("1073741824\n"),
			"sys/fs/cgroup/user.slice/memory.max":                   file("4294967296\n"),
		},
		want: 1 << 30,
	}, {
		name: "malformed memory.max",
		files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		},
		wantErr: `/sys/fs/cgroup/memory.max: "lots" is neither a byte count nor "max"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CgroupLimit(tt.files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CgroupLimit = %d, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("CgroupLimit = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestSoftLimit(t *testing.T) {
	if got, want := SoftLimit(1<<30), int64(966367641); got != want {
		t.Errorf("SoftLimit(1 GiB) = %d, want %d (90%%)", got, want)
	}
}

package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StateFile is the name, inside the run dir, of the file that lists what a
// cluster changed on the host, so that DownDir can undo it even after the
// process that called Up was SIGKILLed.
const StateFile = "state.json"

// State is what a cluster started and changed outside its own memory.
type State struct {
	RunDir string `json:"runDir"`
	// ID is random and names the cluster's host objects that must not
	// collide with another cluster's (bridges, CNI networks).
	ID string `json:"id,omitempty"`
	// RemoveRunDir: Down deletes RunDir (Up created it).
	RemoveRunDir bool   `json:"removeRunDir"`
	Procs        []Proc `json:"procs"`
	// MountRoots are directories under which the kubelets mount (their
	// root dirs); Down unmounts everything at or below them and below
	// RunDir.
	MountRoots []string `json:"mountRoots"`
	// HostHeld: the cluster is a holder of the shared host state
	// (hostshare.go): kernel settings, raised limits and host paths are
	// recorded host-wide and restored by the last cluster's teardown.
	HostHeld bool `json:"hostHeld,omitempty"`

	// The containerd runtime's host state (empty with sidebench's CRI
	// server), all recorded before the first containerd starts.
	//
	// Containerd is each node's containerd: its dir, socket, bridge and
	// CNI network (teardown finds its shims, containers and cache entries
	// from these).
	Containerd []ContainerdNode `json:"containerd,omitempty"`
	// CgroupParents are <hierarchy>/k8s.io for every cgroup hierarchy:
	// runc puts container <id> in <parent>/<id>.
	CgroupParents []string `json:"cgroupParents,omitempty"`

	// KubeletCgroups are the kubelets' cgroup roots (cgroups.go), one
	// dir per hierarchy, recorded before they are created; teardown
	// removes them and everything below once the kubelets are stopped.
	KubeletCgroups []string `json:"kubeletCgroups,omitempty"`
}

// Proc is one started process. StartTicks (field 22 of /proc/PID/stat)
// guards against signalling a recycled PID.
type Proc struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"startTicks"`
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(s.RunDir, StateFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// LoadState reads runDir's state file.
func LoadState(runDir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(runDir, StateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("localcluster: %s: %w", StateFile, err)
	}
	return &s, nil
}

// procStartTicks returns the start time of pid in clock ticks since boot.
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, errors.New("short /proc stat")
	}
	if f[0] == "Z" {
		return 0, errors.New("zombie")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Alive reports whether p still runs (same PID, same start time).
func (p Proc) Alive() bool {
	t, err := procStartTicks(p.PID)
	return err == nil && t == p.StartTicks
}

// stopProc sends SIGTERM, waits up to grace, then SIGKILLs and waits.
// wait, if not nil, reaps the child (it must return when the child exits).
func stopProc(p Proc, grace time.Duration, exited <-chan struct{}) error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if waitGone(p, grace, exited) {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	if waitGone(p, 10*time.Second, exited) {
		return nil
	}
	return fmt.Errorf("localcluster: %s (pid %d) still alive after SIGKILL", p.Name, p.PID)
}

// stopLogged is stopProc with a log line saying how long it took.
func stopLogged(p Proc, exited <-chan struct{}, log io.Writer) error {
	if !p.Alive() {
		return nil
	}
	t0 := time.Now()
	grace := stopGrace
	if p.Name == "kube-apiserver" {
		// Open watches hold its graceful shutdown for up to a minute;
		// etcd's data is scratch anyway.
		grace = 2 * time.Second
	}
	err := stopProc(p, grace, exited)
	fmt.Fprintf(log, "localcluster: stopped %s (pid %d) in %s\n", p.Name, p.PID, time.Since(t0).Round(time.Millisecond))
	return err
}

// stopGrace is how long a process gets between SIGTERM and SIGKILL (a
// variable for tests).
var stopGrace = 10 * time.Second

func waitGone(p Proc, d time.Duration, exited <-chan struct{}) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if exited != nil {
			select {
			case <-exited:
				return true
			case <-time.After(20 * time.Millisecond):
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		if !p.Alive() {
			return true
		}
	}
	return !p.Alive()
}

// mountsUnder lists mount points at or below any of roots, deepest first.
func mountsUnder(roots []string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		for _, r := range roots {
			if r != "" && (mp == r || strings.HasPrefix(mp, r+"/")) && !seen[mp] {
				seen[mp] = true
				out = append(out, mp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				sb.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// unmountAll unmounts everything at or below roots, repeating while
// stacked mounts remain; busy mounts are detached lazily.
func unmountAll(roots []string) error {
	for round := 0; round < 10; round++ {
		mps, err := mountsUnder(roots)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
	}
	mps, _ := mountsUnder(roots)
	if len(mps) > 0 {
		return fmt.Errorf("localcluster: mounts remain: %v", mps)
	}
	return nil
}

// kubeletSysctls are the kernel settings a kubelet rewrites when
// protectKernelDefaults is false (setupKernelTunables in
// pkg/kubelet/cm/container_manager_linux.go, v1.37.2), as paths under
// /proc/sys.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// readSysctls reads the kubelets' kernel settings.
func readSysctls() (map[string]string, error) {
	m := map[string]string{}
	for _, n := range kubeletSysctls {
		v, err := readSysctl(n)
		if err != nil {
			return nil, err
		}
		m[n] = v
	}
	return m, nil
}

func anyAlive(ps []Proc) bool {
	for _, p := range ps {
		if p.Alive() {
			return true
		}
	}
	return false
}

// stopOrder splits the recorded processes into kubelets, container
// runtimes (containerd-<node>) and the rest, each in reverse start order.
func (s *State) stopOrder() (kubelets, runtimes, rest []Proc) {
	for i := len(s.Procs) - 1; i >= 0; i-- {
		p := s.Procs[i]
		switch {
		case strings.HasPrefix(p.Name, "kubelet"):
			kubelets = append(kubelets, p)
		case strings.HasPrefix(p.Name, "containerd-"):
			runtimes = append(runtimes, p)
		default:
			rest = append(rest, p)
		}
	}
	return kubelets, runtimes, rest
}

// DownDir tears down the cluster whose run dir is runDir from its state
// file alone: for use when the process that called Up is gone. It kills
// the recorded processes (checking their start times) and, on the
// containerd runtime, the shims and containers they left running;
// unmounts; removes the containers' cgroups, the bridges, libcni cache
// entries and shim sockets; restores the sysctls and removes the run dir
// if Up created it.
func DownDir(runDir string, log io.Writer) error {
	s, err := LoadState(runDir)
	if err != nil {
		return err
	}
	return s.teardown(nil, log)
}

// teardown undoes s. exited maps PIDs to channels closed when an owned
// child was reaped.
func (s *State) teardown(exited map[int]<-chan struct{}, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	var errs []error
	// Kubelets first (they stop pods), then the container runtimes, then
	// what the runtimes leave running (containers, shims), then the rest
	// in reverse start order (REAL-KUBELET.md item 13).
	kubelets, runtimes, rest := s.stopOrder()
	for _, p := range append(kubelets, runtimes...) {
		if err := stopLogged(p, exited[p.PID], log); err != nil {
			errs = append(errs, err)
		}
	}
	// The container IDs are read once from the run dir, which stays until
	// the end.
	ids := map[string][]string{}
	for _, r := range s.Containerd {
		ids[r.Node] = containerIDs(r)
	}
	if err := s.stopContainers(ids, log); err != nil {
		errs = append(errs, err)
	}
	for _, p := range rest {
		if err := stopLogged(p, exited[p.PID], log); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeCgroupDirs(s.KubeletCgroups, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := unmountAll(append([]string{s.RunDir}, s.MountRoots...)); err != nil {
		errs = append(errs, err)
	}
	if err := s.removeRuntimeHostState(ids, log); err != nil {
		errs = append(errs, err)
	}
	// The shared host state goes with the last cluster. A process that
	// survived SIGKILL keeps this cluster a holder (errs is not empty
	// only then, or for unmount and runtime leftovers, which do not touch
	// shared state).
	if s.HostHeld && !anyAlive(s.Procs) {
		if err := releaseHost(s.RunDir, s.ID, log); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && s.RemoveRunDir {
		if err := os.RemoveAll(s.RunDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

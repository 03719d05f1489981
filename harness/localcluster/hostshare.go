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

// Host state that local clusters share.
//
// Kubelets rewrite kernel settings, create directories outside their
// root dirs, and at density need higher host limits; containerd, runc and
// libcni create shared directories. None of this belongs to one cluster:
// two clusters on one machine see the same values. So it is
// reference-counted across clusters, in one host-wide record under an
// flock (HostStateDir/host.json):
//
//   - every cluster registers itself (a holder) before its first kubelet
//     or runtime starts, and recording what it is about to change: each
//     setting's value and each path's absence are recorded the first time
//     any holder needs them, so the record always holds the values from
//     before the first cluster;
//   - the last holder to go restores every setting and removes every path
//     in the record; a cluster that goes while others hold the state
//     leaves it alone (never restore under a live cluster);
//   - a holder whose cluster is gone without a teardown (its run dir or
//     state file removed by hand) is pruned at the next acquire or
//     release.
//
// The registry of holders is also the list of clusters `sidebench cluster
// status|down` shows: who owns each (process and start time) and whether
// it was started to be kept (--keep).

// HostStateDir holds the host-wide record. /run is a tmpfs: the record
// goes with a reboot, as do the kernel settings it restores. A variable
// for tests.
var HostStateDir = "/run/sidebench"

// procSys is the root of the kernel settings (a variable for tests).
var procSys = "/proc/sys"

// hostRecordFile and hostLockFile are in HostStateDir.
const (
	hostRecordFile = "host.json"
	hostLockFile   = "host.lock"
)

// Holder is one cluster holding the shared host state.
type Holder struct {
	RunDir string `json:"runDir"`
	ID     string `json:"id"`
	Nodes  int    `json:"nodes"`
	// Owner is the process that called Up (PID and start time, so that a
	// recycled PID is not taken for it).
	OwnerPID   int    `json:"ownerPID"`
	OwnerStart uint64 `json:"ownerStart"`
	// Keep: started to outlive its owner (Config.KeepOnExit, `--keep`).
	Keep    bool      `json:"keep,omitempty"`
	Started time.Time `json:"started"`
}

// OwnerAlive reports whether the process that started the cluster runs.
func (h Holder) OwnerAlive() bool {
	return Proc{PID: h.OwnerPID, StartTicks: h.OwnerStart}.Alive()
}

// Orphaned reports whether the cluster was left behind: its owner is gone
// and it was not started to be kept. That is a run that was SIGKILLed (or
// OOM-killed): its kubelets died with it (the parent-death signal), its
// mounts, cgroups and hold on the shared host state did not.
func (h Holder) Orphaned() bool { return !h.Keep && !h.OwnerAlive() }

// ReapOrphans tears down every orphaned cluster from its state file
// (DownDir), as `sidebench cluster down` does, and returns the run dirs
// it took down. Starting a cluster calls it first, so what a killed run
// left is removed by the next one rather than when someone remembers
// `cluster down`. A cluster that cannot be taken down is logged and
// named in the error; it stays registered (`cluster status` shows it).
func ReapOrphans(log io.Writer) ([]string, error) {
	if log == nil {
		log = io.Discard
	}
	hs, err := Clusters()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, h := range hs {
		if !h.Orphaned() {
			continue
		}
		if _, err := os.Stat(filepath.Join(h.RunDir, StateFile)); errors.Is(err, os.ErrNotExist) {
			continue // removed by hand: the next acquire or release prunes the holder
		}
		fmt.Fprintf(log, "sidebench: tearing down %s: a local cluster left by a process that is gone (pid %d, up since %s)\n",
			h.RunDir, h.OwnerPID, h.Started.UTC().Format(time.DateTime))
		if err := DownDir(h.RunDir, log); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (sidebench cluster down %s retries it)", h.RunDir, err, h.RunDir))
			continue
		}
		done = append(done, h.RunDir)
	}
	return done, errors.Join(errs...)
}

// hostRecord is HostStateDir/host.json.
type hostRecord struct {
	Holders []Holder `json:"holders"`
	// Sysctls are values before any holder changed them, by path under
	// /proc/sys (kernel/panic).
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Paths did not exist before the first holder that needed them;
	// kubelets create them (they hold only what kubelets put there):
	// removed with their contents.
	Paths []string `json:"paths,omitempty"`
	// Dirs did not exist before the first holder that needed them;
	// containerd, its shims, runc or libcni create them, and other
	// runtimes may use them: removed only if empty, deepest first.
	Dirs []string `json:"dirs,omitempty"`
}

// hostWants is what one cluster is about to change.
type hostWants struct {
	// Sysctls the kubelets rewrite (recorded, not set here).
	Sysctls []string
	// Limits are raised to at least need(total nodes of every holder).
	Limits []hostLimit
	Paths  []string
	Dirs   []string
}

// hostLimit is a host-wide limit real kubelets need raised at density.
type hostLimit struct {
	Sysctl string
	// Need returns the value needed for nodes kubelets on the host.
	Need func(nodes int) int64
	// Why is the reason (docs/local-backend.md lists them).
	Why string
}

// withHostLock runs f on the record under an exclusive flock; f's record
// is saved unless f fails. An empty record removes the file.
func withHostLock(f func(r *hostRecord) error) error {
	if err := os.MkdirAll(HostStateDir, 0o700); err != nil {
		return fmt.Errorf("localcluster: host state dir: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(HostStateDir, hostLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("localcluster: host state lock: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("localcluster: host state lock: %w", err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	r, err := loadHostRecord()
	if err != nil {
		return err
	}
	if err := f(r); err != nil {
		return err
	}
	return saveHostRecord(r)
}

func loadHostRecord() (*hostRecord, error) {
	r := &hostRecord{}
	b, err := os.ReadFile(filepath.Join(HostStateDir, hostRecordFile))
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("localcluster: %s: %w", filepath.Join(HostStateDir, hostRecordFile), err)
	}
	return r, nil
}

func saveHostRecord(r *hostRecord) error {
	p := filepath.Join(HostStateDir, hostRecordFile)
	if len(r.Holders) == 0 && len(r.Sysctls) == 0 && len(r.Paths) == 0 && len(r.Dirs) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// holderGone reports whether h's cluster no longer exists: its state
// file is gone or belongs to another cluster. A cluster whose processes
// died but that was never torn down still holds the host state (its
// teardown, `sidebench cluster down`, releases it).
func holderGone(h Holder) bool {
	s, err := LoadState(h.RunDir)
	return err != nil || s.ID != h.ID
}

// prune drops the holders whose cluster is gone and says so.
func (r *hostRecord) prune(log io.Writer) {
	live := r.Holders[:0]
	for _, h := range r.Holders {
		if holderGone(h) {
			fmt.Fprintf(log, "localcluster: forgetting cluster %s (%s): its state file is gone\n", h.ID, h.RunDir)
			continue
		}
		live = append(live, h)
	}
	r.Holders = live
}

func (r *hostRecord) nodes() int {
	n := 0
	for _, h := range r.Holders {
		n += h.Nodes
	}
	return n
}

// acquireHost registers h as a holder and records, before h's cluster
// changes anything, what it is about to change; it raises the limits to
// what every holder's kubelets need together. If the record holds saved
// values but no live holder (the last cluster vanished without a
// teardown), they are restored first.
func acquireHost(h Holder, w hostWants, log io.Writer) error {
	return withHostLock(func(r *hostRecord) error {
		r.prune(log)
		if len(r.Holders) == 0 && (len(r.Sysctls) > 0 || len(r.Paths) > 0 || len(r.Dirs) > 0) {
			fmt.Fprintln(log, "localcluster: restoring the host state a vanished cluster left")
			if err := r.restore(log); err != nil {
				return err
			}
		}
		for _, x := range r.Holders {
			if x.RunDir == h.RunDir && x.ID == h.ID {
				return fmt.Errorf("localcluster: cluster %s already holds the host state", h.ID)
			}
		}
		if r.Sysctls == nil {
			r.Sysctls = map[string]string{}
		}
		record := func(name string) error {
			if _, ok := r.Sysctls[name]; ok {
				return nil
			}
			v, err := readSysctl(name)
			if err != nil {
				return err
			}
			r.Sysctls[name] = v
			return nil
		}
		for _, n := range w.Sysctls {
			if err := record(n); err != nil {
				return err
			}
		}
		r.Holders = append(r.Holders, h)
		total := r.nodes()
		for _, l := range w.Limits {
			if err := record(l.Sysctl); err != nil {
				return err
			}
			cur, err := readSysctl(l.Sysctl)
			if err != nil {
				return err
			}
			have, err := strconv.ParseInt(cur, 10, 64)
			if err != nil {
				return fmt.Errorf("localcluster: sysctl %s=%q: %w", l.Sysctl, cur, err)
			}
			if need := l.Need(total); need > have {
				if err := writeSysctl(l.Sysctl, strconv.FormatInt(need, 10)); err != nil {
					return fmt.Errorf("localcluster: raise %s from %d to %d (%s): %w", l.Sysctl, have, need, l.Why, err)
				}
				fmt.Fprintf(log, "localcluster: raised %s from %d to %d for %d kubelets (%s)\n", strings.ReplaceAll(l.Sysctl, "/", "."), have, need, total, l.Why)
			}
		}
		r.Paths = appendMissing(r.Paths, w.Paths)
		r.Dirs = appendMissing(r.Dirs, w.Dirs)
		return nil
	})
}

// appendMissing adds to list each of paths that does not exist now and
// is not in list yet.
func appendMissing(list, paths []string) []string {
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		found := false
		for _, q := range list {
			found = found || q == p
		}
		if !found {
			list = append(list, p)
		}
	}
	return list
}

// releaseHost drops the holder (runDir, id); if no live holder is left,
// it restores every recorded setting and removes the recorded paths.
// Releasing a cluster that holds nothing is not an error.
func releaseHost(runDir, id string, log io.Writer) error {
	return withHostLock(func(r *hostRecord) error {
		kept := r.Holders[:0]
		for _, h := range r.Holders {
			if !(h.RunDir == runDir && h.ID == id) {
				kept = append(kept, h)
			}
		}
		r.Holders = kept
		r.prune(log)
		if len(r.Holders) > 0 {
			fmt.Fprintf(log, "localcluster: shared host state left in place: %d other cluster(s) hold it\n", len(r.Holders))
			return nil
		}
		return r.restore(log)
	})
}

// restore puts back every recorded setting and removes the recorded
// paths, then empties the record (entries that failed stay, so that a
// later release retries them).
func (r *hostRecord) restore(log io.Writer) error {
	var errs []error
	names := make([]string, 0, len(r.Sysctls))
	for n := range r.Sysctls {
		names = append(names, n)
	}
	sort.Strings(names)
	left := map[string]string{}
	for _, n := range names {
		v := r.Sysctls[n]
		if cur, err := readSysctl(n); err == nil && cur == v {
			continue
		}
		if err := writeSysctl(n, v); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", n, v, err))
			left[n] = v
			continue
		}
		fmt.Fprintf(log, "localcluster: restored %s=%s\n", strings.ReplaceAll(n, "/", "."), v)
	}
	r.Sysctls = left
	var paths []string
	for _, p := range r.Paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			paths = append(paths, p)
		}
	}
	r.Paths = paths
	// Dirs: deepest first; a directory another runtime still uses is not
	// empty, and stays (it was not ours alone).
	dirs := append([]string(nil), r.Dirs...)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		err := syscall.Rmdir(d)
		switch {
		case err == nil, errors.Is(err, syscall.ENOENT):
		case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.EBUSY):
			fmt.Fprintf(log, "localcluster: %s is in use by something else; left in place\n", d)
		default:
			errs = append(errs, fmt.Errorf("localcluster: rmdir %s: %w", d, err))
		}
	}
	r.Dirs = nil
	return errors.Join(errs...)
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(procSys, name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func writeSysctl(name, v string) error {
	return os.WriteFile(filepath.Join(procSys, name), []byte(v+"\n"), 0o644)
}

// Clusters lists the clusters that hold the host state, oldest first.
func Clusters() ([]Holder, error) {
	var out []Holder
	err := withHostLock(func(r *hostRecord) error {
		out = append(out, r.Holders...)
		return nil
	})
	return out, err
}

// Per-kubelet costs behind hostLimits: a v1.37.2 kubelet of this
// package's configuration holds 4-5 inotify instances with 4-16 watches
// and runs 9-11 threads at idle (docs/local-backend.md, "Density"); the
// figures below allow about three times that.
const (
	inotifyInstancesPerKubelet = 16
	inotifyWatchesPerKubelet   = 64
	threadsPerKubelet          = 32
)

// hostLimits are the host-wide limits real kubelets need raised at
// density. Each is raised only when below what every holder's kubelets
// need together (with room for the rest of the machine), and restored by
// the last cluster.
var hostLimits = []hostLimit{
	{Sysctl: "fs/inotify/max_user_instances", Why: "cAdvisor, the config and certificate watchers of every kubelet take inotify instances of uid 0",
		Need: func(n int) int64 { return 128 + int64(n)*inotifyInstancesPerKubelet }},
	{Sysctl: "fs/inotify/max_user_watches", Why: "cAdvisor watches every cgroup directory of every hierarchy, per kubelet",
		Need: func(n int) int64 { return 65536 + int64(n)*inotifyWatchesPerKubelet }},
	{Sysctl: "kernel/pid_max", Why: "every kubelet thread takes a PID",
		Need: func(n int) int64 { return 8192 + int64(n)*threadsPerKubelet }},
	{Sysctl: "kernel/threads-max", Why: "every kubelet thread counts",
		Need: func(n int) int64 { return 8192 + int64(n)*threadsPerKubelet }},
}

// hostWantsFor is what a cluster of cfg changes on the host.
func hostWantsFor(cfg Config) (hostWants, error) {
	w := hostWants{Sysctls: kubeletSysctls, Limits: hostLimits, Paths: kubeletHostPaths}
	if cfg.Runtime == RuntimeContainerd {
		parents, err := cgroupParents()
		if err != nil {
			return w, err
		}
		w.Dirs = runtimeSharedDirs(parents)
	}
	return w, nil
}

package localcluster

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file undoes what the containerd runtime leaves on the host outside
// the run dir. Everything is found from the state file and the run dir
// alone (no containerd API), so it works for DownDir after a SIGKILL too.
//
// Ownership rules, so that another containerd on the host (or a second
// sidebench cluster) is never touched:
//   - processes: shims whose command line has "-address <our socket>";
//     container processes in the cgroups of our container IDs;
//   - container IDs: the names of the per-container directories in our
//     containerd's root, state and runc dirs (64 hex digits);
//   - cgroups: <hierarchy>/k8s.io/<our ID>; k8s.io itself only if Up
//     created it and it is empty;
//   - links: the bridges named in the state file (cluster-unique names);
//   - libcni cache: results/<our network>-* and results/*-<our ID>-*; the
//     dirs only if Up created them and they are empty;
//   - shim sockets: /run/containerd/s/sha256(<our socket>/k8s.io/<our ID>).

var containerIDRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// containerIDs lists the IDs of every sandbox and container r's
// containerd may still have on the host. containerd and runc remove a
// container's directories only after its task (and cgroup) is gone, so
// together they cover every container that can hold a cgroup, a process
// or a shim socket.
func containerIDs(r ContainerdNode) []string {
	dirs := []string{
		filepath.Join(r.state(), "io.containerd.runtime.v2.task", k8sNamespace), // task bundles
		filepath.Join(r.runcRoot(), k8sNamespace),                               // runc state
		filepath.Join(r.root(), "io.containerd.grpc.v1.cri", "containers"),      // CRI checkpoints
		filepath.Join(r.root(), "io.containerd.grpc.v1.cri", "sandboxes"),
		filepath.Join(r.state(), "io.containerd.grpc.v1.cri", "containers"),
		filepath.Join(r.state(), "io.containerd.grpc.v1.cri", "sandboxes"),
	}
	seen := map[string]bool{}
	var ids []string
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if id := e.Name(); containerIDRE.MatchString(id) && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// cgroupHierarchies returns the mount point of every cgroup hierarchy
// (v1 controllers, named hierarchies and the cgroup2 "unified" mount of a
// hybrid host, or the single cgroup2 mount of a v2 host): runc creates a
// container's cgroup in each.
func cgroupHierarchies() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// ID parent major:minor root mountpoint options ... - fstype source superoptions
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		f, post := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(f) < 5 || len(post) < 1 || (post[0] != "cgroup" && post[0] != "cgroup2") {
			continue
		}
		out = append(out, unescapeMount(f[4]))
	}
	sort.Strings(out)
	return out, nil
}

// cgroupParents are the k8s.io directories of every hierarchy.
func cgroupParents() ([]string, error) {
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = filepath.Join(h, k8sNamespace)
	}
	return out, nil
}

// cmdline returns /proc/pid/cmdline split into arguments.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// shimAddress returns the -address argument of a containerd-shim-runc-v2
// command line, or "" if args is not such a shim.
func shimAddress(args []string) string {
	if len(args) == 0 || filepath.Base(args[0]) != "containerd-shim-runc-v2" {
		return ""
	}
	for i, a := range args {
		switch {
		case (a == "-address" || a == "--address") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "-address="):
			return strings.TrimPrefix(a, "-address=")
		case strings.HasPrefix(a, "--address="):
			return strings.TrimPrefix(a, "--address=")
		}
	}
	return ""
}

// shimsOf lists the running shims started by a containerd serving one of
// sockets.
func shimsOf(sockets map[string]bool) []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if addr := shimAddress(cmdline(pid)); addr != "" && sockets[addr] {
			if ticks, err := procStartTicks(pid); err == nil {
				out = append(out, Proc{Name: "containerd-shim-runc-v2", PID: pid, StartTicks: ticks})
			}
		}
	}
	return out
}

// containerCgroups lists the existing cgroup dirs of ids under parents.
func containerCgroups(parents, ids []string) []string {
	var out []string
	for _, p := range parents {
		for _, id := range ids {
			d := filepath.Join(p, id)
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				out = append(out, d)
			}
		}
	}
	return out
}

// cgroupPIDs reads the processes of a cgroup dir and its descendants.
func cgroupPIDs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// killCgroups SIGKILLs every process in the cgroup dirs until they are
// empty (a process may fork while we read), for up to within.
func killCgroups(dirs []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, d := range dirs {
			for _, pid := range cgroupPIDs(d) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: container processes %v survive SIGKILL", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeCgroupDirs rmdirs dirs and their sub-cgroups, deepest first,
// retrying while the kernel still counts exiting tasks.
func removeCgroupDirs(dirs []string, within time.Duration) error {
	var all []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
	}
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	deadline := time.Now().Add(within)
	var errs []error
	for _, d := range all {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("rmdir cgroup %s: %w", d, err))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// shimSocket is the socket a containerd 1.6 shim of the grouping id
// (a sandbox ID: a pod's containers share its sandbox's shim) listens on
// for the containerd at socket (runtime/v2/shim.SocketAddress).
func shimSocket(socket, id string) string {
	d := sha256.Sum256([]byte(filepath.Join(socket, k8sNamespace, id)))
	return filepath.Join(shimSocketDir, fmt.Sprintf("%x", d))
}

// stopContainers kills what the containerd runtime leaves running once
// every containerd is stopped: first the container processes, by cgroup
// (their shim, still alive, reaps them), then our shims, by their
// -address argument. ids are the container IDs of each node.
func (s *State) stopContainers(ids map[string][]string, log io.Writer) error {
	if len(s.Containerd) == 0 {
		return nil
	}
	var errs []error
	var all []string
	for _, v := range ids {
		all = append(all, v...)
	}
	cgs := containerCgroups(s.CgroupParents, all)
	if len(cgs) > 0 {
		t0 := time.Now()
		if err := killCgroups(cgs, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		fmt.Fprintf(log, "localcluster: killed the processes of %d container cgroup(s) in %s\n", len(cgs), time.Since(t0).Round(time.Millisecond))
	}
	sockets := map[string]bool{}
	for _, r := range s.Containerd {
		sockets[r.Socket] = true
	}
	shims := shimsOf(sockets)
	for _, p := range shims {
		if p.Alive() {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	for _, p := range shims {
		if !waitGone(p, 10*time.Second, nil) {
			errs = append(errs, fmt.Errorf("localcluster: shim pid %d survived SIGKILL", p.PID))
		}
	}
	if len(shims) > 0 {
		fmt.Fprintf(log, "localcluster: killed %d containerd shim(s)\n", len(shims))
	}
	return errors.Join(errs...)
}

// removeRuntimeHostState removes, after every process is gone and the run
// dir is unmounted, the cgroups, bridges, libcni cache entries and shim
// sockets of our containers. The shared directories are the host
// record's (hostshare.go): the last cluster removes them.
func (s *State) removeRuntimeHostState(ids map[string][]string, log io.Writer) error {
	if len(s.Containerd) == 0 {
		return nil
	}
	var errs []error
	var all []string
	for _, v := range ids {
		all = append(all, v...)
	}
	if err := removeCgroupDirs(containerCgroups(s.CgroupParents, all), 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	for _, r := range s.Containerd {
		if err := deleteLink(r.Bridge); err != nil {
			errs = append(errs, fmt.Errorf("localcluster: delete bridge %s: %w", r.Bridge, err))
		}
		ents, _ := os.ReadDir(filepath.Join(cniCacheDir, "results"))
		for _, e := range ents {
			if ourCNICacheEntry(e.Name(), r.Network, ids[r.Node]) {
				if err := os.Remove(filepath.Join(cniCacheDir, "results", e.Name())); err != nil && !os.IsNotExist(err) {
					errs = append(errs, err)
				}
			}
		}
		for _, id := range ids[r.Node] {
			if err := os.Remove(shimSocket(r.Socket, id)); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ourCNICacheEntry: libcni names a cached result <network>-<container
// ID>-<interface>. Ours are those of our network, and those of any network
// for one of our container IDs: containerd's go-cni also attaches every
// sandbox to its own fixed "cni-loopback" network.
func ourCNICacheEntry(name, network string, ids []string) bool {
	if strings.HasPrefix(name, network+"-") {
		return true
	}
	for _, id := range ids {
		if strings.Contains(name, "-"+id+"-") {
			return true
		}
	}
	return false
}

// runtimeSharedDirs are the directories outside the run dir that
// containerd, its shims or libcni create if missing, parents after
// children's parents (so recording order is creation order).
func runtimeSharedDirs(parents []string) []string {
	return append([]string{
		filepath.Dir(shimSocketDir), shimSocketDir,
		cniCacheDir, filepath.Join(cniCacheDir, "results"),
	}, parents...)
}

// deleteLink deletes the network link name with an RTM_DELLINK rtnetlink
// request (no dependency on iproute2); a missing link is not an error.
func deleteLink(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		if _, serr := os.Stat(filepath.Join("/sys/class/net", name)); os.IsNotExist(serr) {
			return nil
		}
		return err
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	// struct nlmsghdr (16 bytes) + struct ifinfomsg (16 bytes: family,
	// pad, type, index, flags, change).
	req := make([]byte, 32)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], syscall.RTM_DELLINK)
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK)
	binary.NativeEndian.PutUint32(req[8:], 1) // sequence number
	req[16] = syscall.AF_UNSPEC
	binary.NativeEndian.PutUint32(req[20:], uint32(ifi.Index))
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_ERROR && len(m.Data) >= 4 {
			if errno := int32(binary.NativeEndian.Uint32(m.Data[:4])); errno != 0 {
				if syscall.Errno(-errno) == syscall.ENODEV {
					return nil
				}
				return syscall.Errno(-errno)
			}
			return nil
		}
	}
	return errors.New("no netlink acknowledgement")
}

// Package localcluster builds (once, cached by version) and runs a local
// Kubernetes control plane and kubelets on loopback: etcd, kube-apiserver
// and N real kubelets, each on its own sidebench CRI server
// (harness/cri), or, with Config.Runtime "containerd", each on its own
// real containerd + runc. See docs/local-backend.md.
package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// DefaultVersion is the Kubernetes version built and run by default.
const DefaultVersion = "v1.37.2"

// DefaultEtcdVersion is the etcd server version built by default.
const DefaultEtcdVersion = "v3.7.3"

// Binaries are the paths of the built executables.
type Binaries struct {
	Dir       string
	Etcd      string
	APIServer string
	Kubelet   string
	Scheduler string
}

func binariesIn(dir string) Binaries {
	return Binaries{
		Dir:       dir,
		Etcd:      filepath.Join(dir, "etcd"),
		APIServer: filepath.Join(dir, "kube-apiserver"),
		Kubelet:   filepath.Join(dir, "kubelet"),
		Scheduler: filepath.Join(dir, "kube-scheduler"),
	}
}

// DefaultCacheDir is ~/.cache/sidebench/k8s/<version> (under
// $XDG_CACHE_HOME when set).
func DefaultCacheDir(version string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "sidebench", "k8s", version)
}

var versionRE = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)

func exists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Build makes sure etcd, kube-apiserver, kubelet and kube-scheduler of
// version exist in cacheDir/bin, building the missing ones from scratch Go
// modules in cacheDir/src (never from the sidebench module: the Kubernetes
// binaries are not its dependencies). It writes one progress line per step
// to log; the go tool's output goes to cacheDir/build.log. A cold build
// takes about 8 minutes on 2 cores; an up-to-date cache returns at once.
// Concurrent Builds of one cacheDir serialise on a lock file.
func Build(ctx context.Context, version, cacheDir string, log io.Writer) (Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return Binaries{}, fmt.Errorf("localcluster: version %q: want v1.N.M", version)
	}
	if cacheDir == "" {
		cacheDir = DefaultCacheDir(version)
	}
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return Binaries{}, err
	}
	bins := binariesIn(filepath.Join(cacheDir, "bin"))
	if exists(bins.Etcd) && exists(bins.APIServer) && exists(bins.Kubelet) && exists(bins.Scheduler) {
		return bins, nil
	}
	if err := os.MkdirAll(bins.Dir, 0o755); err != nil {
		return Binaries{}, err
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Binaries{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Binaries{}, fmt.Errorf("localcluster: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	logPath := filepath.Join(cacheDir, "build.log")
	blog, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return Binaries{}, err
	}
	defer blog.Close()
	b := &builder{ctx: ctx, log: blog}

	if !exists(bins.Etcd) {
		t0 := time.Now()
		fmt.Fprintf(log, "localcluster: building etcd %s into %s (about 1.5 min cold; output in %s)\n", DefaultEtcdVersion, bins.Dir, logPath)
		if err := b.etcd(filepath.Join(cacheDir, "src", "etcd"), bins.Etcd); err != nil {
			return Binaries{}, err
		}
		fmt.Fprintf(log, "localcluster: etcd built in %s\n", time.Since(t0).Round(time.Second))
	}
	var want []string
	for _, p := range []string{bins.APIServer, bins.Kubelet, bins.Scheduler} {
		if !exists(p) {
			want = append(want, filepath.Base(p))
		}
	}
	if len(want) > 0 {
		t0 := time.Now()
		fmt.Fprintf(log, "localcluster: building %s %s into %s (about 7 min cold on 2 cores; output in %s)\n",
			strings.Join(want, " "), version, bins.Dir, logPath)
		if err := b.kube(filepath.Join(cacheDir, "src", "kube"), version, m[1], bins.Dir, want); err != nil {
			return Binaries{}, err
		}
		fmt.Fprintf(log, "localcluster: %s built in %s\n", strings.Join(want, " "), time.Since(t0).Round(time.Second))
	}
	return bins, nil
}

type builder struct {
	ctx context.Context
	log io.Writer
}

func (b *builder) run(dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(b.ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = b.log
	fmt.Fprintf(b.log, "+ (cd %s && go %s)\n", dir, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("localcluster: go %s (in %s): %w (see build.log)", strings.Join(args, " "), dir, err)
	}
	b.log.Write(out.Bytes()) //nolint:errcheck
	return out.Bytes(), nil
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

const toolsHeader = "//go:build tools\n\npackage tools\n\n"

func (b *builder) etcd(dir, out string) error {
	if err := writeFile(filepath.Join(dir, "go.mod"), "module sidebench.local/etcd\n\ngo 1.26.0\n"); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "tools.go"), toolsHeader+"import _ \"go.etcd.io/etcd/server/v3\"\n"); err != nil {
		return err
	}
	if _, err := b.run(dir, "get", "go.etcd.io/etcd/server/v3@"+DefaultEtcdVersion); err != nil {
		return err
	}
	if _, err := b.run(dir, "mod", "tidy"); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if _, err := b.run(dir, "build", "-ldflags", "-s -w", "-o", tmp, "go.etcd.io/etcd/server/v3"); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// KubeToolsGoMod returns the go.mod of the scratch module that builds the
// Kubernetes binaries of version: k8s.io/kubernetes at version plus one
// replace line per staging repository found in kubernetesGoMod (the
// "=> ./staging/src/..." lines), pointing at the published v0.N.M modules.
func KubeToolsGoMod(version string, kubernetesGoMod []byte) (string, int, error) {
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return "", 0, fmt.Errorf("localcluster: version %q: want v1.N.M", version)
	}
	staging := "v0." + m[1] + "." + m[2]
	var sb strings.Builder
	fmt.Fprintf(&sb, "module sidebench.local/kube\n\ngo 1.26.0\n\ngodebug default=go1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", version)
	n := 0
	for _, line := range strings.Split(string(kubernetesGoMod), "\n") {
		if !strings.Contains(line, "=> ./staging/") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		fmt.Fprintf(&sb, "\t%s => %s %s\n", f[0], f[0], staging)
		n++
	}
	sb.WriteString(")\n")
	if n == 0 {
		return "", 0, errors.New("localcluster: no staging replace lines found in k8s.io/kubernetes go.mod")
	}
	return sb.String(), n, nil
}

func (b *builder) kube(dir, version, minor, binDir string, want []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		if err := writeFile(filepath.Join(dir, "go.mod"), "module sidebench.local/kube\n\ngo 1.26.0\n"); err != nil {
			return err
		}
	}
	out, err := b.run(dir, "mod", "download", "-json", "k8s.io/kubernetes@"+version)
	if err != nil {
		return err
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil || info.GoMod == "" {
		return fmt.Errorf("localcluster: go mod download k8s.io/kubernetes@%s: no GoMod (%v)", version, err)
	}
	kgomod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	gomod, n, err := KubeToolsGoMod(version, kgomod)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "tools module: %d staging replace lines\n", n)
	if err := writeFile(filepath.Join(dir, "go.mod"), gomod); err != nil {
		return err
	}
	imports := "import (\n"
	for _, c := range []string{"kube-apiserver", "kube-scheduler", "kubelet"} {
		imports += "\t_ \"k8s.io/kubernetes/cmd/" + c + "\"\n"
	}
	if err := writeFile(filepath.Join(dir, "tools.go"), toolsHeader+imports+")\n"); err != nil {
		return err
	}
	if _, err := b.run(dir, "mod", "tidy"); err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=%s -X k8s.io/component-base/version.gitTreeState=clean", version, minor)
	tmp, err := os.MkdirTemp(binDir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-ldflags", ldflags, "-o", tmp + "/"}
	for _, c := range want {
		args = append(args, "k8s.io/kubernetes/cmd/"+c)
	}
	if _, err := b.run(dir, args...); err != nil {
		return err
	}
	for _, c := range want {
		if err := os.Rename(filepath.Join(tmp, c), filepath.Join(binDir, c)); err != nil {
			return err
		}
	}
	return nil
}

//go:build e2e

package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	trialplan "github.com/sidebench/sidebench/harness/trial"
)

// These tests run the kube backend against sidebench's local cluster with
// the containerd tier (real containers of the agent image):
//
//	go test -tags e2e -run Kube -v -timeout 20m ./harness/backend/kube/
//
// They need root, containerd, runc and the CNI plugins
// (hack/containerd-deps.sh) and the Kubernetes binaries in the cache.

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type collect struct{ evs []history.Event }

func (c *collect) Write(e *history.Event) error {
	c.evs = append(c.evs, *e)
	return nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// upLocal builds the agent image and brings up a one-node containerd
// cluster, torn down at the end of the test.
func upLocal(t *testing.T) (context.Context, *Cluster, kubernetes.Interface) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet, containerd)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	t.Cleanup(cancel)
	archive := filepath.Join(t.TempDir(), "agent.tar")
	img := exec.Command("go", "run", "./hack/image", "-o", archive, "-name", DefaultImage, "-name", DefaultAltImage, "-pause-name", "example.local/sidebench-pause:v1")
	img.Dir = repoRoot(t)
	if out, err := img.CombinedOutput(); err != nil {
		t.Fatalf("image: %v\n%s", err, out)
	}
	cl, err := Provide(ctx, ProvideOptions{Provider: ProviderLocal, ImageArchive: archive, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Down(); err != nil {
			t.Error(err)
		}
	})
	rc, err := restConfig(cl.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cl, cs
}

// waitPods waits until a namespace labelled with the run holds at least
// n running pods.
// waitPods waits up to 3 minutes for n running pods matching sel, and
// reports whether they came. It gives up at once when gone is closed: the
// process that would create them has exited.
func waitPods(ctx context.Context, cs kubernetes.Interface, sel string, n int, gone <-chan struct{}) bool {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
		running := 0
		if err == nil {
			for _, p := range l.Items {
				if p.Status.Phase == "Running" {
					running++
				}
			}
		}
		if running >= n {
			return true
		}
		select {
		case <-gone:
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false
}

func TestE2EKube(t *testing.T) {
	ctx, cl, cs := upLocal(t)
	root := repoRoot(t)
	load := func(name string) *scenario.Scenario {
		s, err := scenario.Load(filepath.Join(root, "scenarios", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// A whole trial: the agent logs reach the history, the checker's
	// inputs are there, and nothing is left.
	t.Run("trial", func(t *testing.T) {
		b, err := New(ctx, Options{Cluster: &Cluster{Kubeconfig: cl.Kubeconfig, Name: cl.Name, Nodes: cl.Nodes, Ops: cl.Ops}, Log: testWriter{t}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		s := load("kube-job-completion")
		var c collect
		st, err := b.RunTrial(ctx, plan(t, s), &c)
		if err != nil {
			t.Fatal(err)
		}
		if st.Partial || st.Pods != 5 || st.LinesLost != 0 {
			t.Errorf("stats %+v, want 5 pods, complete, no lost lines", st)
		}
		kinds := map[history.Kind]int{}
		for _, e := range c.evs {
			kinds[e.Kind]++
		}
		// 5 pods × 3 containers ran and exited; the sidecars were stopped.
		if kinds[history.ContainerRunning] < 15 || kinds[history.ContainerExited] < 15 || kinds[history.PodTerminating] != 5 || kinds[history.ProbeResult] < 5 {
			t.Errorf("event counts %v", kinds)
		}
		if c.evs[0].Kind != history.RunMeta || c.evs[len(c.evs)-1].Msg != "complete" {
			t.Errorf("framing: first %s, last %+v", c.evs[0].Kind, c.evs[len(c.evs)-1])
		}
		if left, err := Leftovers(ctx, cs, b.RunID()); err != nil || len(left) > 0 {
			t.Errorf("left after the trial: %v %v", left, err)
		}
	})

	// Interrupted mid-trial (the context is what Ctrl-C cancels): the
	// trial returns partial with what it recorded, and deletes its
	// namespace and pods.
	t.Run("interrupt", func(t *testing.T) {
		b, err := New(ctx, Options{Cluster: &Cluster{Kubeconfig: cl.Kubeconfig, Name: cl.Name}, Log: testWriter{t}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		tctx, cancel := context.WithCancel(ctx)
		trialDone, came := make(chan struct{}), make(chan bool, 1)
		go func() {
			came <- waitPods(ctx, cs, LabelRun+"="+b.RunID(), 2, trialDone)
			cancel()
		}()
		var c collect
		st, err := b.RunTrial(tctx, plan(t, load("kube-start-ordering")), &c)
		close(trialDone)
		if !<-came {
			t.Fatalf("no 2 running pods of run %s before the trial ended (%v, %+v)", b.RunID(), err, st)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !st.Partial || len(c.evs) < 3 || c.evs[len(c.evs)-1].Msg != "partial" {
			t.Errorf("stats %+v, %d events, want a partial history", st, len(c.evs))
		}
		if left, err := Leftovers(ctx, cs, b.RunID()); err != nil || len(left) > 0 {
			t.Errorf("left after an interrupted trial: %v %v", left, err)
		}
	})

	// Ctrl-C to `sidebench run --backend kube`: the process exits, the
	// history recorded so far is on disk, nothing of the run is left.
	t.Run("sigint", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "sidebench")
		if out, err := exec.Command("go", "build", "-o", bin, root+"/cmd/sidebench").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(bin, "run", "--backend", "kube", "--kubeconfig", cl.Kubeconfig, "--progress", "plain", "--out", out,
			filepath.Join(root, "scenarios", "kube-start-ordering.yaml"))
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done, gone := make(chan error, 1), make(chan struct{})
		go func() { done <- cmd.Wait(); close(gone) }()
		if !waitPods(ctx, cs, LabelRun, 2, gone) {
			// Say why: the run may have exited, or still be waiting.
			_ = cmd.Process.Kill()
			<-gone
			pods, _ := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
			var states []string
			for _, p := range pods.Items {
				states = append(states, p.Namespace+"/"+p.Name+" "+string(p.Status.Phase))
			}
			t.Fatalf("no 2 running pods of the run (exit %d; pods %v)\n%s", cmd.ProcessState.ExitCode(), states, stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit %d (%v), want 1 (interrupted)\n%s", code, err, stderr.String())
			}
		case <-time.After(4 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("sidebench did not exit after SIGINT\n%s", stderr.String())
		}
		h, err := readHistory(out)
		if err != nil || !bytes.Contains(h, []byte(`"pod.created"`)) || !bytes.Contains(h, []byte(`"container.running"`)) {
			t.Errorf("history after SIGINT (%v): %.300s", err, h)
		}
		// Nothing labelled with any run remains.
		nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
		if err != nil || len(nss.Items) > 0 {
			t.Errorf("namespaces left after SIGINT: %v %v\n%s", nss, err, stderr.String())
		}
		pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
		if err != nil || len(pods.Items) > 0 {
			t.Errorf("pods left after SIGINT: %d %v", len(pods.Items), err)
		}
		fmt.Fprintln(os.Stderr, stderr.String())
	})
}

// readHistory returns a run directory's committed history, decompressed.
func readHistory(dir string) ([]byte, error) {
	r, err := rundir.OpenHistory(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// plan compiles the first trial of s (RunTrial takes a compiled plan).
func plan(t *testing.T, s *scenario.Scenario) *trialplan.Plan {
	t.Helper()
	p, err := trialplan.Compile(scenario.Expand(s)[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

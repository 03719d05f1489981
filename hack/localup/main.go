// Command localup brings up a local cluster (etcd, kube-apiserver, N
// kubelets on sidebench CRI servers), prints how to reach it, writes the
// CRI history to a JSONL file, and tears everything down on SIGINT/SIGTERM.
//
//	go run ./hack/localup -nodes 2 -rundir /tmp/sb -history /tmp/sb.jsonl
//	go run ./hack/localup -runtime containerd -image bin/sidebench-agent.tar -scheduler
//
// If this process is SIGKILLed, `go run ./hack/localup -down /tmp/sb`
// cleans up from the run dir's state file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
)

type jsonlSink struct {
	mu sync.Mutex
	w  *history.Writer
}

func (s *jsonlSink) Write(e *history.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Write(e); err != nil {
		return err
	}
	return s.w.Flush()
}

func main() {
	nodes := flag.Int("nodes", 1, "number of kubelets")
	runDir := flag.String("rundir", "", "run dir (default: a new temp dir, removed on exit)")
	hist := flag.String("history", "", "write CRI history events (JSONL) here")
	sched := flag.Bool("scheduler", false, "also run kube-scheduler")
	down := flag.String("down", "", "tear down the cluster of this run dir (after a crash) and exit")
	runtime := flag.String("runtime", "", `container runtime: "sidebench" (default, simulated) or "containerd" (real containers; hack/containerd-deps.sh)`)
	var images []string
	flag.Func("image", "OCI image tarball to import into every containerd, e.g. bin/sidebench-agent.tar from make image (repeatable)", func(s string) error {
		images = append(images, s)
		return nil
	})
	flag.Parse()
	if *down != "" {
		if err := localcluster.DownDir(*down, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	cfg := localcluster.Config{Nodes: *nodes, RunDir: *runDir, Log: os.Stderr, Scheduler: *sched, KeepOnExit: true, Runtime: *runtime, ImageArchives: images}
	if *hist != "" {
		f, err := os.Create(*hist)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		cfg.Sink = &jsonlSink{w: history.NewWriter(f)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := localcluster.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("export KUBECONFIG=%s\n# nodes:", cl.Kubeconfig)
	for _, n := range cl.Nodes {
		fmt.Printf(" %s", n.Name)
		if n.RuntimeSocket != "" {
			fmt.Printf(" (containerd %s)", n.RuntimeSocket)
		}
	}
	fmt.Printf("\n# run dir %s; Ctrl-C tears down\n", cl.RunDir)
	<-ctx.Done()
	if err := cl.Down(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

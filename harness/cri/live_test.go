package cri

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Live counts what the kubelet has not torn down of the pods asked about.
func TestLive(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{"app": `{"startLatency":"0s"}`}))
	e.startC(t, e.create(t, sb, cfg, "app"))
	mine := func(pod string) bool { return pod == "default/web-0" }
	other := func(pod string) bool { return pod == "default/web-1" }
	if got := e.srv.Live(mine); got != 2 {
		t.Fatalf("Live = %d, want 2 (the sandbox and its running container)", got)
	}
	if got := e.srv.Live(other); got != 0 {
		t.Fatalf("Live(other pod) = %d", got)
	}
	if _, err := e.rt.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Live(mine); got != 0 {
		t.Fatalf("Live after StopPodSandbox = %d, want 0", got)
	}
}

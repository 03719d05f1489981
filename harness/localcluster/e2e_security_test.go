//go:build e2e

package localcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidebench/sidebench/harness/history"
)

// TestE2ESecurity: nobody gets in (issue 15 items 8 and 9). On a running
// cluster:
//   - etcd answers a key range to a client with a certificate of the
//     cluster's etcd CA, and refuses the same request without a client
//     certificate, with a certificate of another CA, and over plain HTTP;
//   - kube-apiserver refuses every anonymous request (401), including
//     /version and the health endpoints kubeadm leaves public, and
//     answers with the admin token;
//   - the kubelet's API refuses anonymous requests (401), its read-only
//     port is off;
//   - the run dir is 0700 and every key, token and kubeconfig in it 0600.
func TestE2ESecurity(t *testing.T) {
	ctx, cl, _, _ := upCluster(t, 1)
	p := etcdPKIIn(filepath.Join(cl.RunDir, "pki"))

	// etcd: the v3 JSON gateway's range over every key under /registry.
	rangeReq := fmt.Sprintf(`{"key":%q,"range_end":%q,"keys_only":true}`,
		base64.StdEncoding.EncodeToString([]byte("/registry/")), base64.StdEncoding.EncodeToString([]byte("/registry0")))
	etcdRange := func(c *http.Client, url string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v3/kv/range", strings.NewReader(rangeReq))
		if err != nil {
			return 0, "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	withCert, err := p.tlsConfig(p.HealthCert, p.HealthKey)
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := etcdRange(httpClient(withCert), cl.EtcdURL)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"kvs"`) {
		t.Fatalf("etcd with the cluster's client certificate: %d %.200s %v (want 200 with keys)", code, body, err)
	}
	noCert := withCert.Clone()
	noCert.Certificates = nil
	if code, body, err := etcdRange(httpClient(noCert), cl.EtcdURL); err == nil {
		t.Errorf("etcd without a client certificate answered %d %.200s; want the TLS handshake refused", code, body)
	} else {
		t.Logf("etcd without a client certificate: %v", err)
	}
	// A certificate of another CA (made here, same names).
	other := filepath.Join(t.TempDir(), "pki")
	op := etcdPKIIn(other)
	if err := writeEtcdPKI(op); err != nil {
		t.Fatal(err)
	}
	foreign, err := op.tlsConfig(op.HealthCert, op.HealthKey)
	if err != nil {
		t.Fatal(err)
	}
	foreign.RootCAs = withCert.RootCAs // trust the real server; present the foreign client cert
	if code, body, err := etcdRange(httpClient(foreign), cl.EtcdURL); err == nil {
		t.Errorf("etcd with another CA's client certificate answered %d %.200s; want refused", code, body)
	}
	plain := "http://" + strings.TrimPrefix(cl.EtcdURL, "https://")
	if code, body, err := etcdRange(httpClient(nil), plain); err == nil && code == http.StatusOK {
		t.Errorf("etcd over plain HTTP answered 200 %.200s", body)
	}

	// kube-apiserver: anonymous requests are refused, the admin token works.
	api := httpClient(insecureLoopbackTLS())
	get := func(url, token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := api.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/version", "/healthz", "/livez", "/readyz", "/api", "/api/v1/namespaces/default/pods"} {
		if code := get(cl.Server+path, ""); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", path, code)
		}
		if code := get(cl.Server+path, cl.AdminToken); code != http.StatusOK {
			t.Errorf("GET %s with the admin token: %d, want 200", path, code)
		}
	}

	// The kubelet: its API refuses anonymous requests; no read-only port.
	n := cl.Nodes[0]
	if code := get(fmt.Sprintf("https://127.0.0.1:%d/pods", n.KubeletPort), ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET of the kubelet's /pods: %d, want 401", code)
	}
	conf, err := os.ReadFile(filepath.Join(filepath.Dir(n.RootDir), "kubelet-config.yaml"))
	if err != nil || !bytes.Contains(conf, []byte("readOnlyPort: 0\n")) {
		t.Errorf("kubelet config without readOnlyPort: 0 (%v)", err)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:10255", time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on the kubelet's read-only port 10255")
	}

	// Files: the run dir is the owner's; secrets are 0600.
	if st, err := os.Stat(cl.RunDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("run dir %s mode %v (%v), want 0700", cl.RunDir, st.Mode().Perm(), err)
	}
	secrets := 0
	err = filepath.WalkDir(cl.RunDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if !(strings.HasSuffix(name, ".key") || strings.HasSuffix(name, ".kubeconfig") || name == "tokens.csv") {
			return nil
		}
		secrets++
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s mode %v: readable by others", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if secrets < 8 { // sa, kubelet client, 4 etcd, admin + node kubeconfigs, tokens
		t.Errorf("only %d key/token/kubeconfig files found under %s", secrets, cl.RunDir)
	}
}

// TestE2EConcurrentClusters is issue 15 item 11's reproduction: two
// clusters overlap; the first to go must not restore the kernel settings
// or remove the kubelet host paths under the second's running kubelets;
// the last restores everything as it was before the first. Each cluster
// has its own kubelet root dirs.
func TestE2EConcurrentClusters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet)")
	}
	before := snapshotShared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	a, err := Up(ctx, Config{Nodes: 1, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	aDown := false
	defer func() {
		if !aDown {
			a.Down()
		}
	}()
	b, err := Up(ctx, Config{Nodes: 1, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Down()
	if a.Nodes[0].RootDir == b.Nodes[0].RootDir || !strings.HasPrefix(b.Nodes[0].RootDir, b.RunDir+"/") {
		t.Errorf("kubelet root dirs %s and %s: want one per cluster, inside its run dir", a.Nodes[0].RootDir, b.Nodes[0].RootDir)
	}
	during := snapshotShared(t)
	t.Logf("kernel settings with both clusters up: %v (before: %v)", during.sysctls, before.sysctls)
	if err := a.Down(); err != nil {
		t.Fatal(err)
	}
	aDown = true
	after := snapshotShared(t)
	if !mapsEqual(after.sysctls, during.sysctls) {
		t.Errorf("the first cluster's teardown changed the shared settings under the second: %v, were %v", after.sysctls, during.sysctls)
	}
	for p, existed := range during.paths {
		if existed && !after.paths[p] {
			t.Errorf("the first cluster's teardown removed %s under the second", p)
		}
	}
	hs, err := Clusters()
	if err != nil {
		t.Fatal(err)
	}
	holds := false
	for _, h := range hs {
		holds = holds || h.ID == b.state.ID
		if h.ID == a.state.ID {
			t.Errorf("the torn-down cluster %s still holds the host state", h.RunDir)
		}
	}
	if !holds {
		t.Errorf("the running cluster %s does not hold the host state: %+v", b.RunDir, hs)
	}
	if err := b.WaitNodesReady(ctx, 30*time.Second); err != nil {
		t.Errorf("the second cluster after the first went: %v", err)
	}
	if err := b.Down(); err != nil {
		t.Fatal(err)
	}
	checkSharedRestored(t, before)
}

// TestE2EFirewallUntouched is issue 15 item 10's reproduction: a whole
// cluster runs a pod inside an empty network namespace (unshare --net,
// only loopback up), is torn down, and the namespace's iptables and
// nftables rules must be empty again. Kubelets with their default
// makeIPTablesUtilChains created KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY
// and KUBE-FIREWALL (a DROP rule hooked into INPUT and OUTPUT), which
// outlived them. Needs iptables and nft (hack/e2e.sh installs them).
func TestE2EFirewallUntouched(t *testing.T) {
	const child = "SIDEBENCH_E2E_NETNS_CHILD"
	if os.Getenv(child) == "1" {
		firewallChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet, network namespaces)")
	}
	for _, b := range []string{"unshare", "ip", "iptables-save", "nft"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed (hack/e2e.sh installs iptables and nftables): %v", b, err)
		}
	}
	cmd := exec.Command("unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec "$0" -test.run '^TestE2EFirewallUntouched$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), child+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a new network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the cluster in its own network namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestE2EFirewallUntouched") {
		t.Fatal("the child test did not pass")
	}
}

// firewallChild runs in the new network namespace.
func firewallChild(t *testing.T) {
	rules := func() string {
		var b strings.Builder
		for _, args := range [][]string{{"iptables-save"}, {"ip6tables-save"}, {"nft", "list", "ruleset"}} {
			out, _ := exec.Command(args[0], args[1:]...).Output()
			for _, l := range strings.Split(string(out), "\n") {
				// iptables-save prints its empty tables' headers.
				if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "*") || l == "COMMIT" || strings.HasPrefix(l, ":") {
					continue
				}
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	if r := rules(); r != "" {
		t.Fatalf("the new network namespace has rules before the cluster:\n%s", r)
	}
	ctx, cl, _, cs := upCluster(t, 1)
	pod := sidecarPod(cl.Nodes[0].Name)
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pod not Running")
		}
	}
	if r := rules(); r != "" {
		t.Errorf("rules while the kubelet runs:\n%s", r)
	}
	if err := cl.Down(); err != nil {
		t.Fatal(err)
	}
	if r := rules(); r != "" {
		t.Errorf("rules left after the teardown:\n%s", r)
	}
}

// TestE2EGracefulNodeShutdown: a real kubelet takes an inhibitor lock from
// the fake logind, and on PrepareForShutdown(true) terminates a sidecar
// pod through the normal path (the main stopped first, the sidecar's
// preStop concurrent with it, the sidecar stopped once the main exited),
// publishes it terminal with a DisruptionTarget condition (and reason
// Terminated if Failed), and releases its lock before shutdownGracePeriod.
func TestE2EGracefulNodeShutdown(t *testing.T) {
	ctx, cl, sink, cs := upCluster(t, 1)
	if err := cl.EnableGracefulShutdown(ctx, 20*time.Second, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if g, c, ok := cl.GracefulShutdown(0); !ok || g != 20*time.Second || c != 5*time.Second {
		t.Fatalf("GracefulShutdown(0) = %v %v %v", g, c, ok)
	}
	t.Logf("the kubelet on the fake logind: %s", shutdownLogLines(cl.Nodes[0].Log))
	pod := sidecarPod(cl.Nodes[0].Name)
	waitRunning(ctx, t, cl, pod)
	t0 := time.Now()
	res, err := cl.ShutdownNode(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shutdown: %+v after %s; the kubelet: %s", res, time.Since(t0).Round(time.Millisecond), shutdownLogLines(cl.Nodes[0].Log))
	if !res.Released {
		t.Errorf("the kubelet did not release its inhibitor lock: %+v; its log: %s", res, shutdownLogLines(cl.Nodes[0].Log))
	}
	at := map[string]int{}
	for i, e := range sink.events() {
		if e.Pod == "default/"+pod.Name && (e.Kind == history.ContainerStopRequested || e.Kind == history.ContainerPreStopBegin || e.Kind == history.ContainerExited) {
			at[e.Kind.String()+" "+e.Container] = i + 1
		}
	}
	for _, before := range [][2]string{
		{"container.stop-requested app", "container.stop-requested proxy"},
		{"container.exited app", "container.stop-requested proxy"},
		{"container.prestop-begin proxy", "container.stop-requested proxy"},
		{"container.stop-requested proxy", "container.exited proxy"},
	} {
		if at[before[0]] == 0 || at[before[1]] == 0 || at[before[0]] > at[before[1]] {
			t.Errorf("termination on node shutdown: want %q before %q (positions %v)", before[0], before[1], at)
		}
	}
	var p *corev1.Pod
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if p, err = cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not terminal after the shutdown: %v %v", p.Status.Phase, err)
		}
	}
	disrupted := false
	for _, c := range p.Status.Conditions {
		disrupted = disrupted || (c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue)
	}
	// Failed carries reason Terminated; a pod whose containers all exited 0
	// on SIGTERM stays Succeeded, and v1.37.2 then publishes no reason
	// (observed; the DisruptionTarget condition stays).
	t.Logf("pod %s, reason %q, message %q, DisruptionTarget %v", p.Status.Phase, p.Status.Reason, p.Status.Message, disrupted)
	if !disrupted || (p.Status.Phase == corev1.PodFailed && p.Status.Reason != "Terminated") {
		t.Errorf("pod %s reason %q, DisruptionTarget %v; want the condition, and reason Terminated if Failed (kubelet nodeshutdown)", p.Status.Phase, p.Status.Reason, disrupted)
	}
	// The kubelet is then powered off and comes back with a new lock.
	if err := cl.KillKubelet(0); err != nil {
		t.Fatal(err)
	}
	if err := cl.StartKubelet(ctx, 0); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cl.Nodes[0].logind.waitLock(lctx, 1); err != nil {
		t.Errorf("the restarted kubelet took no new inhibitor lock: %v", err)
	}
}

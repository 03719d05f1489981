#!/usr/bin/env bash
# make e2e, part 2: the kube backend end to end (docs/kube-backend.md).
#
# 1. installs containerd, runc and the CNI plugins from Debian if missing
#    (hack/containerd-deps.sh) and builds the agent image tarball (make
#    image: bin/sidebench-agent.tar, no registry);
# 2. runs three kube-* scenarios (start ordering, Job completion, sidecar
#    OOM under a real memory limit) with `sidebench run
#    --backend kube --provider local`: sidebench's local cluster with one
#    containerd node, real containers of the agent image; then `sidebench
#    check` on every history: any violation fails the target;
# 3. checks the faults really happened through the fallbacks: the OOM
#    scenario's exits 137 OOMKilled and its oom-kill fault, the
#    start-ordering scenario's forced readiness failures;
# 4. runs the kube backend's e2e tests: a whole trial, an interrupted
#    trial, SIGINT to `sidebench run` (nothing of the run may remain);
# 5. checks nothing is left: no process, mount, bridge, netns or run dir.
#
# Environment: E2E_OUT (results dir, kept; default a new /tmp dir), GO.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
OUT=${E2E_OUT:-$(mktemp -d /tmp/sidebench-e2e-kube.XXXXXX)}
mkdir -p "$OUT"
fail=0
t0=$(date +%s)
say() { echo "e2e-kube: $*"; }

if [ "$(id -u)" != 0 ]; then
	say "needs root (the kubelet, containerd)"; exit 2
fi
./hack/containerd-deps.sh || { say "FAIL: installing containerd, runc, CNI plugins"; exit 3; }
$GO build -o bin/sidebench ./cmd/sidebench || exit 3
$GO run ./hack/image -o bin/sidebench-agent.tar -name example.local/sidebench-agent:v1 -name example.local/sidebench-agent:v2 -pause-name example.local/sidebench-pause:v1 || exit 3
links_before=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^sb[0-9a-f]{6}-' | sort | tr '\n' ' ')
netns_before=$(ls /var/run/netns 2>/dev/null | sort | tr '\n' ' ')

t1=$(date +%s)
./bin/sidebench run --backend kube --provider local --image-archive bin/sidebench-agent.tar --progress plain \
	--out "$OUT/kube" scenarios/kube-start-ordering.yaml scenarios/kube-job-completion.yaml scenarios/kube-sidecar-oom.yaml 2>&1 | tee "$OUT/kube.log" | grep -v '^progress:'
rc=${PIPESTATUS[0]}
say "kube run: exit $rc in $(( $(date +%s) - t1 ))s"
[ "$rc" = 0 ] || fail=1
rundirs=$(grep -o 'run dir [^)]*' "$OUT/kube.log" | awk '{print $3}')

for h in "$OUT"/kube/*/history.jsonl.zst; do
	scen=$(basename "$(dirname "$h")")
	if ./bin/sidebench check "$h" >"$h.check" 2>&1; then
		say "check $scen: no violation ($(zstdcat "$h" | grep -c '"container.running"') container starts from the agent logs)"
	else
		say "FAIL: check $scen:"; sed -n '1,40p' "$h.check"; fail=1
	fi
done

oom="$OUT/kube/kube-sidecar-oom/history.jsonl.zst"
n_oom=$(zstdcat "$oom" 2>/dev/null | grep '"container.exited"' | grep -c '"OOMKilled"')
n_fx=$(zstdcat "$oom" 2>/dev/null | grep '"fault.effect"' | grep -c '"oom-kill"')
say "kube-sidecar-oom: $n_oom OOMKilled exits (kernel, real memory limits), $n_fx oom-kill fault(s) applied"
[ "$n_oom" -ge 4 ] || { say "FAIL: expected the logs sidecars to be OOM-killed by the kernel"; fail=1; }
[ "$n_fx" -ge 1 ] || { say "FAIL: the oom-kill fault was never applied"; fail=1; }
so="$OUT/kube/kube-start-ordering/history.jsonl.zst"
n_pf=$(zstdcat "$so" 2>/dev/null | grep '"fault.effect"' | grep -c '"probe-failure"')
say "kube-start-ordering: $n_pf probe-failure fault(s) applied (the kubelet marked the container unready)"
[ "$n_pf" -ge 1 ] || { say "FAIL: the probe-failure fault was never applied"; fail=1; }

t2=$(date +%s)
$GO test -tags e2e -count=1 -run 'E2EKube' -timeout 20m ./harness/backend/kube/ >"$OUT/gotest.log" 2>&1
trc=$?
say "go test -tags e2e ./harness/backend/kube/: exit $trc in $(( $(date +%s) - t2 ))s"
[ "$trc" = 0 ] || { tail -40 "$OUT/gotest.log"; fail=1; }

# Leftovers.
sleep 1
for d in $rundirs; do
	[ -e "$d" ] && { say "FAIL: run dir $d remains"; fail=1; }
	if grep -q -- "$d" /proc/self/mountinfo; then say "FAIL: mounts under $d remain"; fail=1; fi
done
for p in /proc/[0-9]*; do
	cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
	case "$cmd" in
	*sidebench-local-*|*containerd-shim*sidebench*) say "FAIL: process ${p#/proc/} still runs: ${cmd:0:120}"; fail=1;;
	esac
done
links_after=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^sb[0-9a-f]{6}-' | sort | tr '\n' ' ')
# Only what this run added counts (another cluster may come and go).
for l in $links_after; do
	case " $links_before " in *" $l "*) ;; *) say "FAIL: bridge $l left (before: [$links_before])"; fail=1;; esac
done
netns_after=$(ls /var/run/netns 2>/dev/null | sort | tr '\n' ' ')
for n in $netns_after; do
	case " $netns_before " in *" $n "*) ;; *) say "FAIL: netns $n left (before: [$netns_before])"; fail=1;; esac
done
[ "$fail" = 0 ] && say "no process, mount, bridge, netns or run dir left"

say "results in $OUT; total $(( $(date +%s) - t0 ))s"
if [ "$fail" != 0 ]; then say FAIL; exit 1; fi
say PASS

#!/usr/bin/env bash
# make e2e, part 3: sidebench in a cluster (docs/cluster.md).
#
# 1. builds the sidebench image (make image: bin/sidebench.tar, static,
#    non-root, scenarios at /scenarios) and kube-controller-manager (the
#    local tier runs none; the Job controller is the real one, built once
#    into the Kubernetes cache);
# 2. brings up sidebench's local cluster with containerd (one node) and
#    runs kube-controller-manager's job, namespace, garbage-collector and
#    service-account controllers against it;
# 3. checks that deploy/ renders with kubectl kustomize (the sim default and
#    the kube-backend component) and that the API server accepts every
#    manifest (kubectl apply --dry-run=server, -k and -f);
# 4. runs deploy/manifests/sharded-run.yaml, an Indexed Job of 4
#    completions whose pods run `sidebench run --shards 4` in the image,
#    with the results on a hostPath instead of the PVC; collects the four
#    shard directories and merges them with `sidebench merge`;
# 5. runs the same scenario unsharded here and checks that the merge equals
#    it: the data files byte for byte (the journal but for wall times), the
#    same result table and exit code;
# 6. deletes the namespace and checks nothing is left: no Job, pod or
#    namespace, no process, mount or run directory of the cluster.
#
# Environment: E2E_OUT (results dir, kept; default a new /tmp dir), GO.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
OUT=${E2E_OUT:-$(mktemp -d /tmp/sidebench-e2e-shards.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
fail=0
t0=$(date +%s)
say() { echo "e2e-shards: $*"; }
SCENARIO=scenarios/policy-comparison.yaml
NS=sidebench
JOB=sidebench-sharded-run

if [ "$(id -u)" != 0 ]; then
	say "needs root (the kubelet, containerd)"; exit 2
fi
# One real-kubelet cluster at a time on this machine.
tw=$(date +%s)
for i in $(seq 40); do
	pgrep -x kubelet >/dev/null || break
	[ "$i" = 1 ] && say "another cluster's kubelet is running; waiting (up to 20 min)"
	sleep 30
done
pgrep -x kubelet >/dev/null && { say "FAIL: another cluster is still running"; exit 1; }
[ $(( $(date +%s) - tw )) -gt 1 ] && say "waited $(( $(date +%s) - tw ))s for the other cluster"
t0=$(date +%s)

./hack/containerd-deps.sh || { say "FAIL: installing containerd, runc, CNI plugins"; exit 3; }
# Stamped as the image's binary is (hack/image: -buildvcs=auto), whatever
# GOFLAGS says: the histories carry the build's version, and the merged
# shards (run by the image) must equal the local run byte for byte.
$GO build -buildvcs=auto -o bin/sidebench ./cmd/sidebench || exit 3
mkdir -p bin
$GO run ./hack/image -o bin/sidebench-agent.tar -name example.local/sidebench-agent:v1 -name example.local/sidebench-agent:v2 -pause-name example.local/sidebench-pause:v1 || exit 3
$GO run ./hack/image -cmd sidebench -o bin/sidebench.tar -name example.local/sidebench:v1 || exit 3

# kube-controller-manager (and kubectl), built once beside the cluster's
# binaries, from a copy of the tools module the cluster's build made.
K8S=$(sed -n 's/^const DefaultVersion = "\(v[0-9.]*\)"/\1/p' harness/localcluster/build.go)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/sidebench/k8s/$K8S
KCM=$CACHE/extra/kube-controller-manager
KUBECTL=$CACHE/extra/kubectl
if [ ! -x "$KCM" ] || [ ! -x "$KUBECTL" ]; then
	tk=$(date +%s)
	say "building kube-controller-manager and kubectl $K8S into $CACHE/extra (once)"
	if [ ! -f "$CACHE/src/kube/go.mod" ]; then
		say "FAIL: no tools module in $CACHE/src/kube (the local cluster's build makes it: run hack/e2e.sh first)"; exit 3
	fi
	src=$CACHE/kcm-src
	mkdir -p "$src" "$CACHE/extra"
	cp "$CACHE/src/kube/go.mod" "$CACHE/src/kube/go.sum" "$src/"
	printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"$src/tools.go"
	minor=$(echo "$K8S" | cut -d. -f2)
	mkdir -p "$src/out"
	if ! (cd "$src" && $GO mod tidy >"$OUT/kcm-build.log" 2>&1 &&
		$GO build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
			-o out/ k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl >>"$OUT/kcm-build.log" 2>&1); then
		say "FAIL: building kube-controller-manager and kubectl"; tail -20 "$OUT/kcm-build.log"; exit 3
	fi
	mv "$src/out/kube-controller-manager" "$KCM" && mv "$src/out/kubectl" "$KUBECTL" || exit 3
	say "built in $(( $(date +%s) - tk ))s"
fi

t1=$(date +%s)
./bin/sidebench cluster up --runtime containerd --nodes 1 --image-archive bin/sidebench-agent.tar --image-archive bin/sidebench.tar \
	>"$OUT/cluster.out" 2>"$OUT/cluster.log" &
CPID=$!
KC=""
for i in $(seq 600); do
	KC=$(awk '$1=="kubeconfig"{print $2}' "$OUT/cluster.out")
	[ -n "$KC" ] && break
	kill -0 $CPID 2>/dev/null || break
	sleep 1
done
RUNDIR=$(awk '$1=="run" && $2=="dir"{print $3}' "$OUT/cluster.out")
if [ -z "$KC" ]; then
	say "FAIL: the cluster did not come up"; tail -30 "$OUT/cluster.log"; kill -INT $CPID 2>/dev/null; wait $CPID; exit 1
fi
say "cluster up in $(( $(date +%s) - t1 ))s ($RUNDIR)"
"$KCM" --kubeconfig "$KC" --controllers=job,namespace,garbagecollector,serviceaccount --leader-elect=false --secure-port=0 --v=1 >"$OUT/kcm.log" 2>&1 &
KPID=$!
k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
teardown() {
	kill -TERM $KPID 2>/dev/null; wait $KPID 2>/dev/null
	kill -INT $CPID 2>/dev/null; wait $CPID 2>/dev/null
}

# deploy/ renders, and the API server accepts every manifest.
mkdir -p "$OUT/overlay"
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n' \
	"$(realpath --relative-to="$OUT/overlay" deploy)" "$(realpath --relative-to="$OUT/overlay" deploy/kube-backend)" >"$OUT/overlay/kustomization.yaml"
for kz in deploy "$OUT/overlay"; do
	if ! k kustomize "$kz" >"$OUT/rendered.yaml" 2>"$OUT/kustomize.err"; then
		say "FAIL: kubectl kustomize $kz:"; cat "$OUT/kustomize.err"; fail=1
	fi
done
k apply -f deploy/manifests/namespace.yaml >/dev/null || fail=1
for args in "-k deploy" "-k $OUT/overlay" "-f deploy/manifests/" "-f deploy/sharded-merge.yaml"; do
	# shellcheck disable=SC2086
	if ! k apply --dry-run=server $args >"$OUT/dryrun.log" 2>&1; then
		say "FAIL: kubectl apply --dry-run=server $args:"; cat "$OUT/dryrun.log"; fail=1
	fi
done
[ "$fail" = 0 ] && say "deploy/ renders (-k, with and without kube-backend) and the API server accepts every manifest (-k, -f)"

# The Indexed Job, its results on a hostPath (the non-root pods write it).
mkdir -p "$OUT/results" && chmod 0777 "$OUT/results"
k apply -f deploy/manifests/serviceaccount.yaml >/dev/null || fail=1
t2=$(date +%s)
sed "s|persistentVolumeClaim: {claimName: sidebench-results} # results-volume|hostPath: {path: $OUT/results, type: Directory}|" \
	deploy/manifests/sharded-run.yaml | k apply -f - >/dev/null || fail=1
for i in $(seq 900); do
	st=$(k -n $NS get job $JOB -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}' 2>/dev/null)
	case "$st" in *Complete=True*|*Failed=True*) break;; esac
	sleep 1
done
say "Indexed Job: ${st:-no status} in $(( $(date +%s) - t2 ))s; pods: $(k -n $NS get pods -l batch.kubernetes.io/job-name=$JOB -o jsonpath='{range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}:{.status.phase} {end}')"
case "$st" in *Complete=True*) ;; *)
	say "FAIL: the Indexed Job did not complete"; fail=1
	for p in $(k -n $NS get pods -l batch.kubernetes.io/job-name=$JOB -o name); do k -n $NS logs "$p" | tail -5; done
	tail -20 "$OUT/kcm.log";;
esac
k -n $NS logs -l batch.kubernetes.io/job-name=$JOB --tail=-1 >"$OUT/shards.log" 2>&1

# Merge the shards; run the scenario unsharded here; compare.
SH=$OUT/results/shards/$JOB
./bin/sidebench merge --quiet --out "$OUT/merged" "$SH"/shard-0 "$SH"/shard-1 "$SH"/shard-2 "$SH"/shard-3 >"$OUT/merged.txt" 2>"$OUT/merged.err"
mrc=$?
./bin/sidebench run --quiet --out "$OUT/local" $SCENARIO >"$OUT/local.txt" 2>"$OUT/local.err"
lrc=$?
say "merge of 4 shards: exit $mrc; local unsharded run: exit $lrc"
[ "$mrc" = "$lrc" ] || { say "FAIL: exit codes differ"; cat "$OUT/merged.err"; fail=1; }
if cmp -s "$OUT/merged.txt" "$OUT/local.txt"; then
	say "result tables equal ($(($(wc -l <"$OUT/local.txt") - 1)) rows)"
else
	say "FAIL: result tables differ:"; diff "$OUT/local.txt" "$OUT/merged.txt"; fail=1
fi
for f in history.jsonl.zst pods.jsonl.zst findings.jsonl.zst trials.jsonl.zst; do
	if cmp -s "$OUT/merged/$f" "$OUT/local/$f"; then
		say "$f: byte for byte equal ($(stat -c %s "$OUT/local/$f") bytes)"
	else
		say "FAIL: $f differs between the merge and the unsharded run"; fail=1
	fi
done
if cmp -s <(sed 's/"elapsedNanos":[0-9]*,//' "$OUT/merged/journal.jsonl") <(sed 's/"elapsedNanos":[0-9]*,//' "$OUT/local/journal.jsonl"); then
	say "journal.jsonl: equal but for the trials' wall times ($(wc -l <"$OUT/local/journal.jsonl") trials)"
else
	say "FAIL: journal.jsonl differs"; fail=1
fi

# Clean up and check nothing is left.
k delete namespace $NS --wait=true --timeout=180s >/dev/null 2>&1 || { say "FAIL: deleting namespace $NS"; fail=1; }
left=$(k get jobs,pods -A -l app.kubernetes.io/name=sidebench -o name 2>/dev/null; k get namespace $NS -o name 2>/dev/null)
[ -n "$left" ] && { say "FAIL: left in the cluster: $left"; fail=1; }
teardown
sleep 1
[ -n "$RUNDIR" ] && [ -e "$RUNDIR" ] && { say "FAIL: cluster run dir $RUNDIR remains"; fail=1; }
[ -n "$RUNDIR" ] && grep -q -- "$RUNDIR" /proc/self/mountinfo && { say "FAIL: mounts under $RUNDIR remain"; fail=1; }
for p in /proc/[0-9]*; do
	cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
	case "$cmd" in
	*sidebench-local-*|*containerd-shim*sidebench*|*kube-controller-manager*"$KC"*|*"sidebench cluster up"*) say "FAIL: process ${p#/proc/} still runs: ${cmd:0:120}"; fail=1;;
	esac
done
[ "$fail" = 0 ] && say "no Job, pod, namespace, process, mount or run dir left"

say "results in $OUT; total $(( $(date +%s) - t0 ))s"
if [ "$fail" != 0 ]; then say FAIL; exit 1; fi
say PASS

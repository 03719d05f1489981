#!/usr/bin/env bash
# density.sh [N...]: the local backend's density benchmark (issue 21;
# docs/local-backend.md, "Density"). For each N (default 20 40 80):
#
# 1. idle: `sidebench cluster up --nodes N`, 20 s to settle, then 60 s of
#    samples: CPU time and RSS of every kubelet, kube-apiserver, etcd and
#    the sidebench process (its N CRI servers), from /proc;
# 2. load: `sidebench run --backend local --nodes N` of
#    scenarios/local-density.yaml (400 sidecar pods at 20 pods/s, 5 s
#    lifetime) on a new cluster, then `sidebench check` on its history;
#    pods/s through the whole path = pods removed / (last pod.removed -
#    first pod.created), startup p50/p99 = the run's pod_startup (CL2 SLI);
# 3. the host limits and kernel settings are compared with before.
#
# One line per N goes to $OUT/density.md. Needs root; one cluster at a time
# (refuses to start while another local cluster runs, which would skew the
# figures). Environment: DENSITY_OUT (default a new /tmp dir), SETTLE
# (seconds, default 20), SAMPLE (seconds, default 60), IDLE=0 (skip the
# idle part), GO.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
OUT=${DENSITY_OUT:-$(mktemp -d /tmp/sidebench-density.XXXXXX)}
SETTLE=${SETTLE:-20}
SAMPLE=${SAMPLE:-60}
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(20 40 80)
mkdir -p "$OUT"
say() { echo "density: $*"; }
[ "$(id -u)" = 0 ] || { say "needs root (the kubelet)"; exit 2; }
command -v jq >/dev/null || env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null || { say "needs jq"; exit 2; }
[ -n "${NOBUILD:-}" ] || $GO build -o bin/sidebench ./cmd/sidebench || exit 3
./bin/sidebench cluster build >/dev/null || exit 3
if ./bin/sidebench cluster status | grep -q '^/'; then
	say "another local cluster runs; its kubelets would skew the figures:"; ./bin/sidebench cluster status; exit 2
fi
HZ=$(getconf CLK_TCK)
SHARED="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes fs/inotify/max_user_instances fs/inotify/max_user_watches kernel/pid_max kernel/threads-max"
sysctls() { for k in $SHARED; do printf '%s=%s ' "$k" "$(cat /proc/sys/$k)"; done; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss() { awk '/VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
sys_before=$(sysctls)

echo "| kubelets | up (s) | RSS per node (MiB) | idle CPU per node (% of a core) | kube-apiserver idle CPU / RSS | sidebench (CRI servers) idle CPU / RSS | pods/s through the path | startup p50 / p99 (s) | checker (kep753) | run wall / CPU | load avg before |" >"$OUT/density.md"
echo "|---|---|---|---|---|---|---|---|---|---|---|" >>"$OUT/density.md"
fail=0
for N in "${NS[@]}"; do
	load_before=$(cut -d' ' -f1 /proc/loadavg)
	upsec=- rss_node=- cpu_node=- api_cpu=- api_rss=- sb_cpu=- sb_rss=-
	if [ "${IDLE:-1}" = 1 ]; then
	say "N=$N: idle cluster"
	t0=$(date +%s.%N)
	./bin/sidebench cluster up --nodes "$N" >"$OUT/up-$N.out" 2>"$OUT/up-$N.log" &
	up=$!
	while kill -0 "$up" 2>/dev/null && ! grep -q '^up in' "$OUT/up-$N.out"; do sleep 0.2; done
	if ! grep -q '^up in' "$OUT/up-$N.out"; then
		say "FAIL: $N kubelets did not come up:"; grep -v 'stopped\|restored' "$OUT/up-$N.log" | tail -15
		wait "$up"; fail=1; echo "| $N | failed: $(grep -m1 'exited\|need about\|Error' "$OUT/up-$N.log" | cut -c1-160) | | | | | | | | | $load_before |" >>"$OUT/density.md"; continue
	fi
	upsec=$(awk '/^up in/{print $3}' "$OUT/up-$N.out")
	rundir=$(awk '/^run dir/{print $3}' "$OUT/up-$N.out")
	sleep "$SETTLE"
	kubelets=$(pgrep -f -- "--root-dir=$rundir/nodes/")
	api=$(pgrep -f -- "--cert-dir=$rundir/apiserver-certs" | head -1)
	declare -A t1=()
	for p in $kubelets $api $up; do t1[$p]=$(ticks "$p"); done
	sleep "$SAMPLE"
	ktk=0; krss=0; n=0
	for p in $kubelets; do ktk=$((ktk + $(ticks "$p") - ${t1[$p]})); krss=$((krss + $(rss "$p"))); n=$((n + 1)); done
	cpu_node=$(echo "scale=2; 100*$ktk/$HZ/$SAMPLE/$n" | bc)
	rss_node=$((krss / n / 1024))
	api_cpu=$(echo "scale=1; 100*($(ticks "$api") - ${t1[$api]})/$HZ/$SAMPLE" | bc); api_rss=$(($(rss "$api") / 1024))
	sb_cpu=$(echo "scale=1; 100*($(ticks "$up") - ${t1[$up]})/$HZ/$SAMPLE" | bc); sb_rss=$(($(rss "$up") / 1024))
	inotify=$(find /proc/[0-9]*/fd -lname 'anon_inode:inotify' 2>/dev/null | wc -l)
	say "N=$n: up in $upsec, idle per kubelet ${cpu_node}% of a core and ${rss_node} MiB RSS; apiserver ${api_cpu}% ${api_rss} MiB; sidebench ${sb_cpu}% ${sb_rss} MiB; inotify instances on the host $inotify (limit $(cat /proc/sys/fs/inotify/max_user_instances))"
	kill -INT "$up"; wait "$up"
	unset t1
	fi

	say "N=$N: 400 pods at 20 pods/s"
	# CPU time of the whole run: sidebench and, reaped by it, every
	# cluster process (cluster up and teardown included).
	TIMEFORMAT='%R %U %S'
	{ time ./bin/sidebench run --backend local --nodes "$N" --include-large --progress plain --out "$OUT/run-$N" scenarios/local-density.yaml >"$OUT/run-$N.log" 2>&1; } 2>"$OUT/time-$N"
	rc=$?
	read -r wall usr sys <"$OUT/time-$N"
	cpu=$(echo "scale=0; ($usr+$sys)/1" | bc)
	h="$OUT/run-$N/history.jsonl.zst"
	if [ ! -s "$h" ]; then
		say "FAIL: no history (exit $rc):"; tail -15 "$OUT/run-$N.log"; fail=1
		echo "| $N | $upsec | $rss_node | $cpu_node | ${api_cpu}% / ${api_rss} MiB | ${sb_cpu}% / ${sb_rss} MiB | run failed (exit $rc) | | | | $load_before |" >>"$OUT/density.md"; continue
	fi
	pods=$(zstdcat "$h" | grep -c '"k":"pod.removed"')
	first=$(zstdcat "$h" | grep -m1 '"k":"pod.created"' | jq -r .t)
	last=$(zstdcat "$h" | grep '"k":"pod.removed"' | tail -1 | jq -r .t)
	rate=$(echo "scale=1; $pods*1000000000/($last-$first)" | bc)
	p50=$(jq -r '.latencies[] | select(.metric=="pod_startup") | .p50.value/1000' "$OUT/run-$N/summary.json" | xargs printf '%.2f')
	p99=$(jq -r '.latencies[] | select(.metric=="pod_startup") | .p99.value/1000' "$OUT/run-$N/summary.json" | xargs printf '%.2f')
	if ./bin/sidebench check "$h" >"$OUT/check-$N.txt" 2>&1; then checker="clean"; else checker="$(grep -c . "$OUT/check-$N.txt") lines (see check-$N.txt)"; fail=1; fi
	say "N=$N: $pods pods removed, $rate pods/s through the path, startup p50 ${p50}s p99 ${p99}s, checker $checker (run exit $rc); run ${wall}s wall, ${cpu}s CPU"
	echo "| $N | $upsec | $rss_node | $cpu_node | ${api_cpu}% / ${api_rss} MiB | ${sb_cpu}% / ${sb_rss} MiB | $rate ($pods pods) | $p50 / $p99 | $checker | ${wall}s / ${cpu}s | $load_before |" >>"$OUT/density.md"
done

sys_after=$(sysctls)
if [ "$sys_after" != "$sys_before" ]; then say "FAIL: host limits/settings not restored: before [$sys_before] after [$sys_after]"; fail=1; fi
cat "$OUT/density.md"
say "results in $OUT"
exit $fail

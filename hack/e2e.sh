#!/usr/bin/env bash
# make e2e: the local backend end to end (docs/local-backend.md).
#
# 1. builds bin/sidebench and the Kubernetes binaries into the versioned
#    cache (~/.cache/sidebench/k8s/VERSION, reused when present: built once,
#    never per test);
# 2. runs the scenarios/local-*.yaml scenarios on --backend local with 3
#    kubelets (one cluster for all of them), then `sidebench check` on every
#    history: any violation or failed criterion fails the target;
# 3. runs the same scenarios on sim (the differential, printed side by side);
# 4. checks that nothing sidebench started is left: no process, no mount, no
#    sysctl change, no run dir, no kubelet host path.
#
# Environment: E2E_OUT (results dir, kept; default a new /tmp dir),
# E2E_NODES (default 3), GO (default go). Needs root (the kubelet).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NODES=${E2E_NODES:-3}
OUT=${E2E_OUT:-$(mktemp -d /tmp/sidebench-e2e.XXXXXX)}
mkdir -p "$OUT"
fail=0
t0=$(date +%s)
say() { echo "e2e: $*"; }

if [ "$(id -u)" != 0 ]; then
	say "needs root (the kubelet mounts and sets sysctls)"; exit 2
fi
$GO build -o bin/sidebench ./cmd/sidebench || exit 3

sysctls() { for k in kernel/panic kernel/panic_on_oops vm/overcommit_memory; do printf '%s=%s ' "$k" "$(cat /proc/sys/$k)"; done; }
hostpaths() { for p in /var/lib/kubelet /var/log/containers /run/mount; do [ -e "$p" ] && printf '%s ' "$p"; done; true; }
sys_before=$(sysctls)
host_before=$(hostpaths)

./bin/sidebench cluster build >/dev/null || { say "FAIL: building the Kubernetes binaries"; exit 3; }
say "binaries ready after $(( $(date +%s) - t0 ))s"

t1=$(date +%s)
./bin/sidebench run --backend local --nodes "$NODES" --progress plain --out "$OUT/local" scenarios/local-*.yaml 2>&1 | tee "$OUT/local.log" | grep -v '^progress:'
rc=${PIPESTATUS[0]}
say "local run: exit $rc in $(( $(date +%s) - t1 ))s"
# Exit 1 (a violation or a failed criterion) is judged below; more is an error.
[ "$rc" -le 1 ] || fail=1
grep '^FAIL ' "$OUT/local.log" | grep -v 'violations [0-9]* > maxViolations' && fail=1
rundirs=$(grep -o 'run dir [^)]*' "$OUT/local.log" | awk '{print $3}')

# The checker on every history; violations listed in hack/e2e-known.txt
# (real kubelet behaviours, judged in docs/local-backend.md) are reported,
# any other fails the target.
known=$(grep -v '^#' hack/e2e-known.txt | awk 'NF==2{print $1" "$2}')
for h in "$OUT"/local/*/history.jsonl.zst; do
	scen=$(basename "$(dirname "$h")")
	if ./bin/sidebench check "$h" >"$h.check" 2>&1; then
		say "check $scen: no violation"
		continue
	fi
	# One "INV-X" per violation finding of the run's findings.jsonl.
	vio=$(zstdcat "$(dirname "$h")/findings.jsonl.zst" 2>/dev/null | grep '"class":"violation"' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | sort | uniq -c)
	[ -n "$vio" ] || { say "FAIL: check $scen:"; sed -n '1,40p' "$h.check"; fail=1; continue; }
	while read -r n id; do
		if printf '%s\n' "$known" | grep -qx "$scen $id"; then
			say "check $scen: $n $id violation(s): KNOWN real-kubelet behaviour (hack/e2e-known.txt)"
		else
			say "FAIL: check $scen: $n $id violation(s):"; grep -- "$id" "$h.check" | sed -n '1,10p'; fail=1
		fi
	done <<<"$vio"
done

./bin/sidebench run --backend sim -q --out "$OUT/sim" scenarios/local-*.yaml >"$OUT/sim.txt" 2>&1
say "sim (differential):"; cat "$OUT/sim.txt"

# Leftovers.
sleep 1
for d in $rundirs; do
	[ -e "$d" ] && { say "FAIL: run dir $d remains"; fail=1; }
	if grep -q -- "$d" /proc/self/mountinfo; then say "FAIL: mounts under $d remain"; fail=1; fi
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "$d"; then
			say "FAIL: process ${p#/proc/} still runs: $(tr '\0' ' ' <"$p/cmdline" | cut -c1-120)"; fail=1
		fi
	done
done
[ -n "$rundirs" ] || { say "FAIL: no cluster run dir found in the log"; fail=1; }
[ "$(sysctls)" = "$sys_before" ] || { say "FAIL: sysctls changed: before [$sys_before] after [$(sysctls)]"; fail=1; }
[ "$(hostpaths)" = "$host_before" ] || { say "FAIL: kubelet host paths: before [$host_before] after [$(hostpaths)]"; fail=1; }
[ "$fail" = 0 ] && say "no process, mount, sysctl change, run dir or host path left"

say "results in $OUT; total $(( $(date +%s) - t0 ))s"
if [ "$fail" != 0 ]; then say FAIL; exit 1; fi
say PASS

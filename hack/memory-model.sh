#!/usr/bin/env bash
# memory-model.sh [SCENARIO.yaml...]
#
# Checks the memory estimate (harness/scenario/cost.go) against what runs
# take: for each scenario, the estimate at GOGC=100 and under a soft memory
# limit (read from validate's refusal of a 1 KiB budget), then the peak RSS
# of `sidebench run` without a limit and with --max-memory set to the soft
# estimate (so the Go soft limit is 90% of it). A row whose peak exceeds its
# estimate, or whose limited run takes much longer (the collector thrashing),
# says the constants are too low. Sim backend; default: every shipped
# scenario, large ones included (about 1 minute on 2 cores).
#
#   make build && hack/memory-model.sh
#   hack/memory-model.sh scenarios/certify.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/sidebench
[ -x "$bin" ] || { echo "memory-model.sh: build first (make build)" >&2; exit 2; }
[ $# -gt 0 ] || set -- scenarios/*.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mib() { # "1.1 GiB" / "583.1 MiB" -> MiB, rounded up
  awk -v v="$1" -v u="$2" 'BEGIN { m = (u == "GiB") ? v * 1024 : (u == "KiB") ? v / 1024 : v; printf "%d\n", m + 0.999 }'
}
peak() { # FILE [run flags...] -> "PEAK_MiB WALL_s"
  local f=$1; shift
  rm -rf "$tmp/r"
  local rc=0
  /usr/bin/time -f "%M %e" -o "$tmp/t" "$bin" run --quiet --include-large "$@" --out "$tmp/r" "$f" >/dev/null 2>&1 || rc=$?
  if [ "$rc" -eq 2 ]; then echo "refused -"; return; fi # exit 1 is violations found: the run completed
  tail -n 1 "$tmp/t" | awk '{ printf "%d %s\n", $1 / 1024 + 0.5, $2 }'
}
printf '%-28s %10s %10s %10s %8s %10s %8s\n' SCENARIO EST-MiB SOFT-MiB PEAK-MiB WALL-s LIM-PEAK LIM-WALL
for f in "$@"; do
  msg=$("$bin" validate --max-memory 1KiB "$f" 2>&1 || true)
  read -r fv fu sv su < <(sed -n 's/.*the scenario needs about \([0-9.]*\) \([KMG]iB\) in all, \([0-9.]*\) \([KMG]iB\) with.*/\1 \2 \3 \4/p' <<<"$msg")
  est=$(mib "$fv" "$fu"); soft=$(mib "$sv" "$su")
  read -r p w < <(peak "$f")
  # One MiB over the rounded figure, so that the budget admits it.
  read -r lp lw < <(peak "$f" --max-memory "$((soft + 1))MiB")
  flag=""
  if [ "$p" = refused ] || [ "$lp" = refused ]; then flag="  <- refused its own estimate"
  elif [ "$p" -gt "$est" ] || [ "$lp" -gt "$((soft + 1))" ]; then flag="  <- over its estimate"; fi
  printf '%-28s %10s %10s %10s %8s %10s %8s%s\n' "$(basename "$f" .yaml)" "$est" "$soft" "$p" "$w" "$lp" "$lw" "$flag"
done

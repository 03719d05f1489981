#!/bin/bash
# Compose sweep shapes into kitchen-sink runs to reach corners no single
# shape does (docs/checker.md "Session 13").
#
#   hack/sweep-combos.sh pairs   POLICY SHAPES SEEDS        # each of SHAPES (comma list) with every other shape
#   hack/sweep-combos.sh triples POLICY COUNT  RNGSEED      # COUNT random triples: a runtime shape and two others
#
# POLICY is SIDEBENCH_SWEEP_POLICY (e.g. kep753). Shapes that do not compose
# (Job shapes, duplicate keys) fail to parse and are skipped in the count:
# grep the output for "violations [" (findings) and "lifecycles," (runs).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/integ.test
go test -c -o "$bin" ./internal/integration
cd internal/integration
ALL=(base never-job onfailure-job grace-1s grace-0 two-mains sidecar-probes critical rules-main grace-expiry crashloop job-sidecar-crash interleaved init-rules harsh hook-kill-refused prestop-runtime pod-kill-refused completion-refused shutdown-refused probe-timing hanging-hooks oom-growth startup-kills short-lived bursts rules-sidecar resize-restart many-sidecars completion completion-never completion-rules delete-grace init-crashloop sidecar-exits interleaved-inits never-sandbox-loss image-churn dense-nodes gc-heavy)
RT=(hook-kill-refused pod-kill-refused shutdown-refused prestop-runtime harsh never-sandbox-loss)
run() { # sink seeds lifecycles
  echo "### $1"
  SIDEBENCH_SWEEP_POLICY=$POLICY SIDEBENCH_SWEEP_SEEDS=$2 SIDEBENCH_SWEEP_LIFECYCLES=$3 SIDEBENCH_SWEEP_SINK=$1 \
    "$bin" -test.run 'TestSweepPodShapes/kitchen-sink/' -test.v 2>&1 | grep "lifecycles,\|violations \[\|^        INV-" || true
}
mode=$1 POLICY=$2
case $mode in
pairs)
  for a in ${3//,/ }; do for s in "${ALL[@]}"; do
    [ "$a" = "$s" ] || run "$a,$s" "$4" 20000
  done; done ;;
triples)
  RANDOM=$4
  for _ in $(seq 1 "$3"); do
    a=${RT[$((RANDOM % ${#RT[@]}))]} b=${ALL[$((RANDOM % ${#ALL[@]}))]} c=${ALL[$((RANDOM % ${#ALL[@]}))]}
    [ "$a" = "$b" ] || [ "$a" = "$c" ] || [ "$b" = "$c" ] || run "$a,$b,$c" 1 10000
  done ;;
*) echo "usage: $0 pairs|triples POLICY ..." >&2; exit 2 ;;
esac
echo DONE

#!/usr/bin/env bash
# bench-ab.sh: compare one package's benchmarks between two revisions the
# way docs/performance.md does it: each tree's test binary built once, the
# two run alternately round after round on the same machine (a host whose
# speed drifts by ±10-30% between minutes compares nothing otherwise), and
# benchstat over the rounds.
#
#   hack/bench-ab.sh BASE NEW PKG REGEX [TEST-FLAGS...]
#
#   BASE, NEW   git revisions; NEW may be "." for the working tree
#   PKG         the package, e.g. ./harness/sim
#   REGEX       -test.bench's regexp, e.g. 'Lifecycles$|Scale'
#   TEST-FLAGS  more flags for the test binary, e.g. -test.benchmem
#
# Environment: ROUNDS (default 6), BENCHTIME (default 1x), COPY_BENCH=1 to
# copy PKG's *bench_test.go files from NEW into BASE first (so that both
# trees run the same benchmark code when NEW changed it), OUT (a directory
# to keep base.txt and new.txt in; default a temporary one, removed).
#
#   hack/bench-ab.sh HEAD~1 . ./harness/sim 'Lifecycles$'
#   ROUNDS=3 COPY_BENCH=1 hack/bench-ab.sh 356e07c . ./harness/runner 'RunParallel$'
set -euo pipefail
if [ $# -lt 4 ]; then
	sed -n '2,21p' "$0" >&2
	exit 2
fi
base=$1 new=$2 pkg=$3 regex=$4
shift 4
rounds=${ROUNDS:-6}
benchtime=${BENCHTIME:-1x}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
work=$(mktemp -d)
trees=()
cleanup() {
	for t in "${trees[@]}"; do git -C "$repo" worktree remove --force "$t" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT
# tree REV sets made to the directory of REV's tree: the working tree for
# ".", else a new worktree (removed at exit). Not a $(...) function: the
# worktree must be recorded in this shell for the cleanup.
tree() {
	if [ "$1" = . ]; then
		made=$repo
		return
	fi
	made="$work/tree-$(git rev-parse --short "$1")-${#trees[@]}"
	git worktree add --detach --quiet "$made" "$1"
	trees+=("$made")
}
tree "$base"
base_tree=$made
tree "$new"
new_tree=$made
if [ "${COPY_BENCH:-}" = 1 ]; then
	cp "$new_tree/$pkg"/*bench_test.go "$base_tree/$pkg/"
fi
for t in base new; do
	dir=$base_tree
	[ $t = new ] && dir=$new_tree
	(cd "$dir" && go test -c -o "$work/$t.test" "$pkg")
done
# Every round runs from the package directory of the working tree, as go
# test would (benchmarks read testdata/ relative to it).
cd "$repo/$pkg"
for i in $(seq 1 "$rounds"); do
	for t in base new; do
		"$work/$t.test" -test.run '^$' -test.bench "$regex" -test.benchtime "$benchtime" "$@" | grep '^Benchmark' >>"$work/$t.txt"
	done
	echo "bench-ab: round $i of $rounds done" >&2
done
cd "$repo"
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	cp "$work/base.txt" "$work/new.txt" "$OUT/"
fi
go run golang.org/x/perf/cmd/benchstat "base=$work/base.txt" "new=$work/new.txt"

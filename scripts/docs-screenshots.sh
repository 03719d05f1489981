#!/usr/bin/env bash
# docs-screenshots.sh: regenerate the report screenshots of docs/img/ (the
# README shows one): report.html of three sim runs — policy-comparison
# (violating baselines: Gantt timelines), bug-replicas (faults and caught
# bugs) and a one-minute soak of soak-profile (lifecycles against the
# graduation targets, RSS) — rendered by scripts/screenshot-report.sh,
# which also checks the banner, the figures and a non-blank rendering.
# Each screenshot shows the page from the verdict banner to the end of the
# figures (the tables follow in the page).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/sidebench" ./cmd/sidebench
# Exit 1 (a FAIL verdict) still writes a report; only 2 and 3 stop here.
sb() { "$tmp/sidebench" "$@" >/dev/null || [[ $? -eq 1 ]]; }
sb run --quiet --out "$tmp/policy-comparison" scenarios/policy-comparison.yaml
sb run --quiet --out "$tmp/bug-replicas" scenarios/bug-replicas.yaml
sb soak --quiet --duration 60s --checkpoint 5s --out "$tmp/soak" scenarios/soak-profile.yaml
mkdir -p docs/img
WINDOW_SIZE=1200,4150 ./scripts/screenshot-report.sh "$tmp/policy-comparison/report.html" docs/img/report-policy-comparison.png
WINDOW_SIZE=1200,4250 ./scripts/screenshot-report.sh "$tmp/bug-replicas/report.html" docs/img/report-bug-replicas.png
WINDOW_SIZE=1200,5450 ./scripts/screenshot-report.sh "$tmp/soak/report.html" docs/img/report-soak.png

#!/usr/bin/env bash
# screenshot-report.sh REPORT.html [OUT.png]
#
# Renders a sidebench report.html with headless Chromium (Debian's
# `chromium` package, installed if missing) into a PNG and checks what a
# reader would see first:
#   - the verdict banner is in the rendered page (DOM), with its verdict,
#     above every figure;
#   - the page has at least MIN_FIGURES figures, each an inline SVG plot;
#   - the PNG is not blank, as a whole and in its top 400 rows (the
#     banner) (go run ./scripts/pngcheck).
# The report is self-contained, so Chromium is started with networking
# features off; a report that needed the network would render
# incomplete, not hang.
#
# Environment:
#   WINDOW_SIZE   default 1280,2000
#   MIN_FIGURES   default 4
#   CHROMIUM      browser binary (default: chromium)
#   NO_INSTALL=1  fail instead of installing chromium
#
# Exit status: 0 rendered with its banner and figures and not blank; 1 no
# banner, too few figures, or a blank or unreadable PNG; 2 usage or setup
# error.
set -euo pipefail

usage() { echo "usage: $0 REPORT.html [OUT.png]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
report=$1
[[ -f $report ]] || { echo "screenshot-report: no such file: $report" >&2; exit 2; }
out=${2:-${report%.html}.png}
window=${WINDOW_SIZE:-1280,2000}
min_figures=${MIN_FIGURES:-4}
chromium=${CHROMIUM:-chromium}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

# Install chromium once (idempotent: skipped when already on PATH).
if ! command -v "$chromium" >/dev/null 2>&1; then
	if [[ ${NO_INSTALL:-} == 1 ]]; then
		echo "screenshot-report: $chromium not found and NO_INSTALL=1" >&2
		exit 2
	fi
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null 2>&1 || { echo "screenshot-report: need root or sudo to install chromium" >&2; exit 2; }
		sudo="sudo"
	fi
	echo "screenshot-report: installing chromium (apt-get)" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >&2
fi

abs_report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
abs_out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$abs_out"

# --headless renders without a display; the rest keeps Chromium from
# touching the network or the user's profile.
# --headless renders without a display; the rest keeps Chromium from
# touching the network or the user's profile.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync
	--hide-scrollbars --user-data-dir="$profile")
"$chromium" "${flags[@]}" --screenshot="$abs_out" --window-size="$window" \
	"file://$abs_report" >"$profile/chromium.log" 2>&1 || {
	echo "screenshot-report: chromium failed:" >&2
	tail -n 20 "$profile/chromium.log" >&2
	exit 2
}
[[ -s $abs_out ]] || { echo "screenshot-report: chromium wrote no PNG" >&2; tail -n 20 "$profile/chromium.log" >&2; exit 2; }

# The rendered DOM (after parsing, as the browser built it).
"$chromium" "${flags[@]}" --dump-dom "file://$abs_report" >"$profile/dom.html" 2>>"$profile/chromium.log" || {
	echo "screenshot-report: chromium --dump-dom failed:" >&2
	tail -n 20 "$profile/chromium.log" >&2
	exit 2
}
dom="$profile/dom.html"
verdict=$(grep -o '<section id="verdict-banner"[^>]*' "$dom" | grep -o 'data-verdict="[^"]*"' | head -n 1 || true)
if [[ -z $verdict ]]; then
	echo "screenshot-report: $report has no verdict banner in the rendered page" >&2
	exit 1
fi
banner_at=$(grep -b -o '<section id="verdict-banner"' "$dom" | head -n 1 | cut -d: -f1)
figure_at=$(grep -b -o '<figure class="fig"' "$dom" | head -n 1 | cut -d: -f1 || true)
if [[ -n $figure_at && $figure_at -lt $banner_at ]]; then
	echo "screenshot-report: the verdict banner is not above the figures" >&2
	exit 1
fi
figures=$(grep -o '<figure class="fig"' "$dom" | wc -l)
plots=$(grep -o '<svg width="[0-9.]*pt" height="[0-9.]*pt"' "$dom" | wc -l)
if ((figures < min_figures || plots < figures)); then
	echo "screenshot-report: $report has $figures figures ($plots SVG plots); want at least $min_figures, each an SVG plot" >&2
	exit 1
fi
echo "screenshot-report: banner $verdict, $figures figures" >&2

(cd "$repo" && go run ./scripts/pngcheck "$abs_out" && go run ./scripts/pngcheck -rows 400 "$abs_out")
echo "$abs_out"

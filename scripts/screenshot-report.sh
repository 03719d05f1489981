#!/usr/bin/env bash
# screenshot-report.sh REPORT.html [OUT.png]
#
# Renders a sidebench report.html with headless Chromium (Debian's
# `chromium` package, installed if missing) into a PNG and checks that the
# PNG is not blank (go run ./scripts/pngcheck). The report is
# self-contained, so Chromium is started with networking features off; a
# report that needed the network would render incomplete, not hang.
#
# Environment:
#   WINDOW_SIZE   default 1280,2000
#   CHROMIUM      browser binary (default: chromium)
#   NO_INSTALL=1  fail instead of installing chromium
#
# Exit status: 0 rendered and not blank; 1 blank or unreadable PNG; 2 usage
# or setup error.
set -euo pipefail

usage() { echo "usage: $0 REPORT.html [OUT.png]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
report=$1
[[ -f $report ]] || { echo "screenshot-report: no such file: $report" >&2; exit 2; }
out=${2:-${report%.html}.png}
window=${WINDOW_SIZE:-1280,2000}
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
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$profile" \
	--screenshot="$abs_out" --window-size="$window" \
	"file://$abs_report" >"$profile/chromium.log" 2>&1 || {
	echo "screenshot-report: chromium failed:" >&2
	tail -n 20 "$profile/chromium.log" >&2
	exit 2
}
[[ -s $abs_out ]] || { echo "screenshot-report: chromium wrote no PNG" >&2; tail -n 20 "$profile/chromium.log" >&2; exit 2; }

(cd "$repo" && go run ./scripts/pngcheck "$abs_out")
echo "$abs_out"

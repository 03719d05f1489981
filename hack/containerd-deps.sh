#!/usr/bin/env bash
# containerd-deps.sh: install what the local cluster's containerd tier
# (localcluster.Config{Runtime: "containerd"}, docs/local-backend.md)
# runs from the host: containerd (with ctr and containerd-shim-runc-v2),
# runc and the CNI plugins (bridge, host-local, loopback in /usr/lib/cni),
# all from Debian's repositories. Idempotent: installs nothing when every
# piece is there. Prints the versions found.
#
# Environment:
#   NO_INSTALL=1  fail (exit 2) instead of installing what is missing
set -euo pipefail

need=()
for b in containerd containerd-shim-runc-v2 ctr runc; do
	command -v "$b" >/dev/null 2>&1 || need+=("$b")
done
for p in bridge host-local loopback; do
	[[ -x /usr/lib/cni/$p ]] || need+=("/usr/lib/cni/$p")
done

if ((${#need[@]} > 0)); then
	echo "containerd-deps: missing: ${need[*]}" >&2
	if [[ ${NO_INSTALL:-} == 1 ]]; then
		echo "containerd-deps: NO_INSTALL=1, not installing" >&2
		exit 2
	fi
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null 2>&1 || { echo "containerd-deps: need root or sudo to install packages" >&2; exit 2; }
		sudo="sudo"
	fi
	echo "containerd-deps: installing containerd runc containernetworking-plugins (apt-get)" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc containernetworking-plugins >&2
	# The package's service is not started where systemd is not PID 1, and
	# sidebench never uses it: each node runs its own containerd.
fi

containerd --version
runc --version | head -n 1
ctr --version
if command -v dpkg-query >/dev/null 2>&1; then
	dpkg-query -W -f='${Package} ${Version}\n' containernetworking-plugins 2>/dev/null || echo "containernetworking-plugins (not from dpkg)"
fi

#!/usr/bin/env bash
# build-k8s.sh [VERSION [CACHEDIR]]
#
# Builds (or finds cached) etcd, kube-apiserver, kubelet and kube-scheduler
# for the local backend and prints the bin directory. The implementation is
# localcluster.Build (harness/localcluster/build.go): scratch Go modules in
# CACHEDIR/src, outside the sidebench module, binaries in CACHEDIR/bin,
# skipped when present. Default CACHEDIR: ~/.cache/sidebench/k8s/VERSION.
# A cold build takes ~8 min on 2 cores (~15 min on a busy machine); see
# docs/local-backend.md.
#
#   hack/build-k8s.sh                      # v1.37.2
#   hack/build-k8s.sh v1.37.2 /tmp/k8s-cache
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
[ $# -ge 1 ] && args+=(-version "$1")
[ $# -ge 2 ] && args+=(-cache "$2")
exec go run ./hack/buildk8s "${args[@]}"

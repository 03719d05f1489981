# sidebench Makefile. Every target works from a clean checkout; tools and
# caches live outside the repo (Go module and build caches, ~/.cache/sidebench).
GO ?= go
PKGS := ./...

.PHONY: all build test run bench lint vet imports cover e2e image clean

all: build

build:
	$(GO) build -o bin/sidebench ./cmd/sidebench

## test: unit, golden and sim tests (the README's test command), then each
## fuzzer for FUZZTIME on its committed corpus (testdata/fuzz): scenario
## files, check input, explain input.
FUZZTIME ?= 4s
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x
test: vet
	$(GO) test -count=1 $(PKGS)
	$(FUZZ) -fuzz '^FuzzLoad$$' ./harness/scenario/
	$(FUZZ) -fuzz '^FuzzCheck$$' ./harness/check/
	$(FUZZ) -fuzz '^FuzzExplain$$' ./harness/cli/

## run: run every shipped scenario on the embedded sim backend.
run: build
	./bin/sidebench run scenarios/*.yaml

## bench: micro and sim benchmarks (see docs/performance.md for recorded figures).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./reference-impl/... ./harness/...

## lint: go vet plus the import-rules test.
lint: vet imports

vet:
	$(GO) vet $(PKGS)

imports:
	$(GO) test -count=1 -run TestImportRules ./internal/importrules/

## e2e: the local backend end to end: real kubelets (3) on sidebench's CRI
## server run scenarios/local-*.yaml, the checker runs on their histories,
## then a check that no process, mount, sysctl change or temp dir is left
## (hack/e2e.sh; needs root). Builds the Kubernetes binaries once into
## ~/.cache/sidebench/k8s/VERSION (7-15 min cold), reuses them afterwards.
## Then the kube backend end to end (hack/e2e-kube.sh): three kube-* scenarios
## on `--backend kube --provider local` (the local cluster with containerd +
## runc from Debian, installed if missing; real containers of the agent image),
## the checker on their histories, the interrupt/SIGINT cleanup tests, and
## the leftover check. Then renders a sim run's report.html in headless
## Chromium (installed from Debian if missing) and checks it is not blank.
e2e: build
	GO=$(GO) ./hack/e2e.sh
	GO=$(GO) ./hack/e2e-kube.sh
	rm -rf $${TMPDIR:-/tmp}/sidebench-report-e2e
	./bin/sidebench run --quiet --out $${TMPDIR:-/tmp}/sidebench-report-e2e scenarios/policy-comparison.yaml
	./scripts/screenshot-report.sh $${TMPDIR:-/tmp}/sidebench-report-e2e/report.html
	rm -rf $${TMPDIR:-/tmp}/sidebench-report-e2e

## image: the sidebench agent as an OCI layout tarball (no registry, no
## docker) for kind or `ctr images import` (docs/kube-backend.md), with the
## pod sandbox image of the local containerd tier (`sidebench-agent pause`,
## same layer; docs/local-backend.md).
image:
	$(GO) run ./hack/image -o bin/sidebench-agent.tar -name example.local/sidebench-agent:v1 -name example.local/sidebench-agent:v2 -pause-name example.local/sidebench-pause:v1

cover:
	$(GO) test -cover ./reference-impl/...

clean:
	rm -rf bin

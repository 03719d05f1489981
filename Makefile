# sidebench Makefile. Every target works from a clean checkout; tools and
# caches live outside the repo (Go module and build caches, ~/.cache/sidebench).
GO ?= go
PKGS := ./...

.PHONY: all build test run bench bench-perf lint vet imports cover e2e image clean density

all: build

build:
	$(GO) build -buildvcs=auto -o bin/sidebench ./cmd/sidebench

## test: unit, golden and sim tests (the README's test command), then each
## fuzzer on its committed corpus (testdata/fuzz): scenario files, check
## input, explain input, graduation criteria files.
##
## The fuzz budgets are execution counts (Nx), about 4 s each on an idle
## 2-core host, not durations: a duration -fuzztime races Go's fuzz
## coordinator (golang/go#75804, unfixed in go1.26) and fails a clean run with
## "context deadline exceeded" at the deadline, as CI did on 4785f3d. A count
## has no deadline, so a loaded machine only makes it slower. FUZZTIME=60s
## (any go test -fuzztime value) overrides every budget for a longer search.
FUZZ_LOAD ?= 3000x
FUZZ_CHECK ?= 25000x
FUZZ_EXPLAIN ?= 1500x
FUZZ_PARSE ?= 80000x
FUZZ = $(GO) test -run '^$$' -fuzzminimizetime 50x -fuzztime
test: vet
	$(GO) test -count=1 $(PKGS)
	$(FUZZ) $(or $(FUZZTIME),$(FUZZ_LOAD)) -fuzz '^FuzzLoad$$' ./harness/scenario/
	$(FUZZ) $(or $(FUZZTIME),$(FUZZ_CHECK)) -fuzz '^FuzzCheck$$' ./harness/check/
	$(FUZZ) $(or $(FUZZTIME),$(FUZZ_EXPLAIN)) -fuzz '^FuzzExplain$$' ./harness/cli/
	$(FUZZ) $(or $(FUZZTIME),$(FUZZ_PARSE)) -fuzz '^FuzzParse$$' ./reports/graduation/

## run: run every shipped scenario on the embedded sim backend.
run: build
	./bin/sidebench run scenarios/*.yaml

## bench: every benchmark, once (docs/performance.md records figures and the commands that gave them).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./reference-impl/... ./harness/... ./internal/...

## bench-perf: issue 19's rows three times each, for benchstat (sim throughput and scaling,
## checking cost, 300,000 faulted lifecycles end to end, the scale envelope, --parallel 2).
bench-perf:
	$(GO) test -run '^$$' -bench 'Lifecycles$$|Scale' -benchtime 1x -count 3 ./harness/sim/
	$(GO) test -run '^$$' -bench 'CheckingCost|CheckingStages|CheckingFloor|Consume' -benchtime 1x -count 3 ./internal/integration/
	$(GO) test -run '^$$' -bench 'RunCertify/lifecycles=300000|RunEnvelope|RunParallel' -benchtime 1x -count 3 ./harness/runner/

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
## the leftover check. Then sidebench in a cluster (hack/e2e-shards.sh):
## deploy/ rendered and dry-run on the API server, the Indexed Job of
## deploy/manifests/sharded-run.yaml running the sidebench image as 4
## shards, `sidebench merge` of them equal to an unsharded local run, and
## the leftover check. Then renders two sim runs' report.html in headless
## Chromium (installed from Debian if missing) and checks the verdict banner,
## at least 4 figures (inline SVG plots) and a non-blank rendering.
e2e: build
	GO=$(GO) ./hack/e2e.sh
	GO=$(GO) ./hack/e2e-kube.sh
	GO=$(GO) ./hack/e2e-shards.sh
	rm -rf $${TMPDIR:-/tmp}/sidebench-report-e2e
	for s in policy-comparison bug-replicas; do \
		./bin/sidebench run --quiet --out $${TMPDIR:-/tmp}/sidebench-report-e2e/$$s scenarios/$$s.yaml && \
		./scripts/screenshot-report.sh $${TMPDIR:-/tmp}/sidebench-report-e2e/$$s/report.html || exit 1; \
	done
	rm -rf $${TMPDIR:-/tmp}/sidebench-report-e2e

## density: the local backend's density benchmark (hack/density.sh; root,
## about 4 min per size): 20, 40 and 80 real kubelets, idle RSS and CPU per
## node, then 400 sidecar pods at 20 pods/s (scenarios/local-density.yaml):
## pods/s, startup p50/p99, checker. Figures in docs/local-backend.md.
density: build
	GO=$(GO) ./hack/density.sh $(DENSITY_NODES)

## image: the sidebench agent as an OCI layout tarball (no registry, no
## docker) for kind or `ctr images import` (docs/kube-backend.md), with the
## pod sandbox image of the local containerd tier (`sidebench-agent pause`,
## same layer; docs/local-backend.md); and sidebench itself
## (bin/sidebench.tar: static, non-root, scenarios at /scenarios) for
## running it in a cluster (deploy/, docs/cluster.md). ARCH=amd64,arm64
## builds a multi-arch image; PUSH=REGISTRY/REPO:TAG pushes it.
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
image:
	mkdir -p bin
	$(GO) run ./hack/image -o bin/sidebench-agent.tar -name example.local/sidebench-agent:v1 -name example.local/sidebench-agent:v2 -pause-name example.local/sidebench-pause:v1
	$(GO) run ./hack/image -cmd sidebench -o bin/sidebench.tar -name example.local/sidebench:v1 -arch $(or $(ARCH),$(IMAGE_ARCH)) $(if $(PUSH),-push $(PUSH))

cover:
	$(GO) test -cover ./reference-impl/...

clean:
	rm -rf bin

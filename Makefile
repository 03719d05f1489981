# sidebench Makefile. Every target works from a clean checkout; tools and
# caches live outside the repo (Go module and build caches, ~/.cache/sidebench).
GO ?= go
PKGS := ./...

.PHONY: all build test run bench lint vet imports cover e2e clean

all: build

build:
	$(GO) build -o bin/sidebench ./cmd/sidebench

## test: unit, golden and sim tests (the README's test command).
test: vet
	$(GO) test -count=1 $(PKGS)

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

cover:
	$(GO) test -cover ./reference-impl/...

clean:
	rm -rf bin

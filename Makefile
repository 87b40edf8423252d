# make test: install the test dependencies (idempotent), then run every test.
GO ?= go

.PHONY: test deps build vet fuzz

test: deps
	$(GO) vet ./...
	$(GO) test -timeout 25m ./...
	$(MAKE) fuzz

# fuzz: every Fuzz* target in the module for FUZZTIME each (listed by
# go test -list, so new targets are never forgotten); ≈ 2 min on 2 cores.
fuzz: deps
	GO=$(GO) bash scripts/fuzz.sh

deps:
	bash scripts/test-deps.sh

build:
	$(GO) build -o bin/onecore ./cmd/onecore

vet:
	$(GO) vet ./...
	$(GO) vet -tags purego ./...
	$(GO) vet -tags cloud ./internal/blobstore

# make test: install the test dependencies (idempotent), then run every test;
# the gs:// and azblob:// tests (against fake-gcs-server and Azurite) need
# the drivers of -tags cloud, so they run in a second go test with that tag.
GO ?= go

.PHONY: test deps build vet fuzz

test: deps
	$(GO) vet ./...
	$(GO) test -timeout 25m ./...
	$(GO) test -tags cloud -timeout 10m -run 'Cloud|Objects' ./internal/blobstore ./pipeline
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
	$(GO) vet -tags cloud ./internal/... ./pipeline

# make test: install the test dependencies (idempotent), then run every test.
GO ?= go

.PHONY: test deps build vet

test: deps
	$(GO) vet ./...
	$(GO) test -timeout 25m ./...

deps:
	bash scripts/test-deps.sh

build:
	$(GO) build -o bin/onecore ./cmd/onecore

vet:
	$(GO) vet ./...
	$(GO) vet -tags purego ./...

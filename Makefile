# coroner — see README.md.
GO      ?= go
BIN     := bin/coroner
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
SAMPLE  ?= samples/pytorchjob-cuda-oom-rank

.PHONY: build run test lint bench golden clean e2e-llm

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/coroner

# Analyze a bundled sample: prints the verdict and writes report.html.
run: build
	./$(BIN) analyze $(SAMPLE) -o report.html

test:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test ./...
	$(GO) run ./cmd/coroner rules lint

lint: test

# Refresh golden files after reading the diff.
golden:
	$(GO) test ./... -run 'Golden|Sample' -update

# Throughput on a generated 64-rank bundle, side by side with ripgrep over the same files.
bench: build
	./scripts/bench.sh

clean:
	rm -rf bin report.html

# End-to-end test of the LLM step against a real Ollama server, built from the same module
# version as the client and cached (scripts/ollama-server.sh), serving a tiny generated model.
e2e-llm:
	CORONER_OLLAMA_BIN="$$(./scripts/ollama-server.sh)" $(GO) test -tags e2e -count=1 -run 'E2E' -v ./cmd/coroner

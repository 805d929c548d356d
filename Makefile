# coroner — see README.md.
GO      ?= go
BIN     := bin/coroner
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
SAMPLE  ?= samples/pytorchjob-cuda-oom-rank

.PHONY: build run test lint bench golden clean fuzz

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

# Redaction throughput (MB/s) on a training log, then analyze throughput on a generated
# 64-rank bundle, side by side with ripgrep over the same files.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3s ./bundle/redact
	./scripts/bench.sh

# Fuzz every target for FUZZTIME each (default 5m), one after another. A crash is saved under the
# package's testdata/fuzz/ and becomes a regression test of go test; commit it with the fix.
FUZZTIME ?= 5m
FUZZ_TARGETS := bundle:FuzzOpen bundle:FuzzParseManifest parse:FuzzLoadResource parse:FuzzTimestamps \
	analyze:FuzzCleanLine analyze:FuzzRuleSet report:FuzzRender bundle/redact:FuzzRedact
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; name=$${t#*:}; \
	  echo "== ./$$pkg $$name for $(FUZZTIME)"; \
	  $(GO) test ./$$pkg -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s || exit 1; \
	done

clean:
	rm -rf bin report.html

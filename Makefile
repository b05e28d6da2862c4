# Drover build, test and run targets. `make test` is what CI runs.
GO      ?= go
BIN     := bin/drover
PKGS    := ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/drover-project/drover/version.GitCommit=$(VERSION)

.PHONY: all build test test-short lint fmt vet generate check-generated run cluster cluster-tls cluster-stop bench clean fuzz chaos

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/drover

# The full suite: formatting, vet, and every test with the race detector.
test: lint
	$(GO) test -race -timeout 15m -count=1 $(PKGS)

# Quicker loop while developing: no race detector, short mode.
test-short:
	$(GO) test -short -count=1 $(PKGS)

lint: fmt vet check-generated

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Generated code: structs/structs.generated.go (codecgen msgpack encoders
# and decoders). Run after changing any type in structs/ and commit it.
generate:
	$(GO) generate ./structs/

# A stale structs.generated.go silently drops new fields on the wire.
check-generated:
	./scripts/codecgen.sh -check

# A single-node dev agent (server + client): runs examples/batch.nomad.hcl
# to completion, shows its output, and stays up in the foreground (Ctrl-C).
run: build
	./scripts/dev.sh

# Three servers and two clients on 127.0.0.1 in the background (.cluster/).
cluster: build
	./scripts/cluster.sh

# The same with mutual TLS on RPC, Raft and HTTP (certificates in .cluster/tls).
cluster-tls: build
	./scripts/cluster.sh tls

cluster-stop:
	./scripts/cluster.sh stop

# Benchmarks; results go to docs/benchmarks.md by hand with their commands.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x -timeout 30m ./structs/ ./state/ ./fsm/ ./scheduler/ ./server/...

clean:
	rm -rf bin .cluster chaos-results

# Fuzzing (docs/security.md): each target explores for FUZZTIME, one
# worker at a time. `make test` already runs every target's seeds and
# regression inputs (testdata/fuzz/); a failure found here is written there.
# FUZZMINIMIZE bounds the shrinking of each input that finds new coverage
# (go test's default, 60s per input, would use a short run up on it).
FUZZTIME     ?= 30s
FUZZPARALLEL ?= 1
FUZZMINIMIZE ?= 200x
FUZZ_TARGETS := \
	./jobspec/:FuzzDecodeAPIJob ./jobspec/:FuzzParseJSON ./jobspec/:FuzzParseHCL \
	./agent/:FuzzParseConfig \
	./structs/:FuzzDecodeWire ./internal/msgpackrpc/:FuzzCodecRead \
	./fsm/:FuzzApply ./fsm/:FuzzRestore

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) \
			-fuzzminimizetime $(FUZZMINIMIZE) -parallel $(FUZZPARALLEL) $$pkg; \
	done

# Whole-cluster scale scenarios (drover sim + drover bench): bench-scenarios,
# bench-scenario SCENARIO=...; not part of make test.
-include mk/bench.mk

# The chaos suite (test/chaos, docs/reliability.md): a fresh cluster of
# agent processes in network namespaces per run, one fault under a
# workload, the history checked. Needs root. SCENARIO=all runs every one.
SCENARIO ?= all
RUNS     ?= 1
SEED     ?= 1
chaos: build
	$(GO) run ./test/chaos/cmd/chaos -bin $(BIN) -scenario $(SCENARIO) -runs $(RUNS) -seed $(SEED) -results chaos-results

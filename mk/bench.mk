# Scale harness targets (included by the Makefile). Not part of `make test`.
#
#   make bench-scenarios                  burst, dense and c1m-small, each on a
#                                         fresh local 3-server cluster; appends a
#                                         dated table to docs/benchmarks.md
#   make bench-scenario SCENARIO=churn    one scenario, results printed only
#   make bench-scenario SCENARIO=heartbeats BENCH_FLAGS="-duration 2m"
BENCH_SCENARIOS ?= burst dense c1m-small
SCENARIO        ?= burst
BENCH_FLAGS     ?=
BENCH_DOCS      ?= docs/benchmarks.md

.PHONY: bench-scenarios bench-scenario

bench-scenarios: build
	./scripts/bench-cluster.sh -docs $(BENCH_DOCS) $(BENCH_SCENARIOS) -- $(BENCH_FLAGS)

bench-scenario: build
	./scripts/bench-cluster.sh $(SCENARIO) -- $(BENCH_FLAGS)

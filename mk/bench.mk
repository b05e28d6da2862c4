# Scale harness targets (included by the Makefile). Not part of `make test`.
#
#   make bench-scenarios                  burst, dense and c1m-small, each on a
#                                         fresh local 3-server cluster; appends a
#                                         dated table to docs/benchmarks.md
#   make bench-scenario SCENARIO=churn    one scenario, results printed only
#   make bench-scenario SCENARIO=heartbeats BENCH_FLAGS="-duration 2m"
#   make bench-failover                   c1m-small, then c1m-small-kill (the
#                                         leader SIGKILLed 5 s in; placed must
#                                         stay within the first run's time
#                                         plus the election plus 2 s, with no
#                                         duplicate allocation); printed only
#   make bench-nomad SCENARIO=burst NOMAD_BIN=/path/to/nomad
#                                         the same scenario against a local
#                                         3-server Nomad cluster (simulated
#                                         nodes speak Nomad's client RPCs)
BENCH_SCENARIOS ?= burst dense c1m-small
SCENARIO        ?= burst
BENCH_FLAGS     ?=
BENCH_DOCS      ?= docs/benchmarks.md

.PHONY: bench-scenarios bench-scenario bench-failover bench-nomad

bench-scenarios: build
	./scripts/bench-cluster.sh -docs $(BENCH_DOCS) $(BENCH_SCENARIOS) -- $(BENCH_FLAGS)

bench-scenario: build
	./scripts/bench-cluster.sh $(SCENARIO) -- $(BENCH_FLAGS)

bench-failover: build
	./scripts/bench-cluster.sh c1m-small c1m-small-kill -- $(BENCH_FLAGS)

bench-nomad: build
	./scripts/bench-nomad.sh $(SCENARIO) -- $(BENCH_FLAGS)

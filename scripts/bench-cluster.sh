#!/usr/bin/env bash
# Run benchmark scenarios against a fresh local three-server cluster each:
# real `drover agent` processes on 127.0.0.1 with temporary data dirs, the
# node simulator inside `drover bench`, /proc figures of the servers.
#
#   scripts/bench-cluster.sh [-docs FILE] [-perf DIR] [-json DIR] [-keep] scenario... [-- bench flags]
#
#   -docs FILE  append a dated section (machine, commands, table) to FILE
#   -perf DIR   record a perf profile of the servers and the simulator per scenario into DIR
#   -json DIR   keep each scenario's result as DIR/<scenario>-<time>.json (see
#               scripts/bench-repeat.sh and `drover bench -summarize`)
#   -keep       keep the data dirs and logs (printed at the end)
#
# A scenario named X-kill (c1m-small-kill) SIGKILLs the leader during the
# run; when X ran earlier in the same invocation, its placed time is passed
# as -baseline-placed, so the kill run checks "placed within the baseline
# plus the election time plus 2 s":
#
#   scripts/bench-cluster.sh c1m-small c1m-small-kill
#
# Environment: BIN (default ./bin/drover), BENCH_PORT_BASE (default 24000:
# server i listens on HTTP base+10i+1, RPC base+10i+2), AGENT_ARGS (more
# `drover agent` flags for every server, e.g. "-config debug.hcl"), TLS
# (1: the servers' RPC, Raft and HTTP are mutual TLS with
# verify_server_hostname and verify_https_client; a CA and certificates
# are made with `drover tls` for the invocation, and `drover bench` and its
# simulator present a cli and a client certificate). TLS=1 also reaches
# scripts/bench-repeat.sh, which runs this script:
#
#   TLS=1 scripts/bench-repeat.sh -out /tmp/tls c1m-small
#
# ACL (1: the servers run with acl { enabled = true }; the script
# bootstraps the ACL system once the leader is elected and gives the bench
# the management token; the simulator's nodes authenticate with their
# node secrets, as client agents do). ACL=1 and TLS=1 combine.
#
# METRICS_DIR (a directory): after each scenario, before the servers stop,
# save each server's /v1/metrics there ($sc-s$i-<time>.json): its
# runtime.malloc_count and runtime.total_gc_runs count the allocations and
# collections of the run, figures a busy machine does not change.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./bin/drover}
BASE=${BENCH_PORT_BASE:-24000}

DOCS="" PERF="" JSONDIR="" KEEP=0
SCENARIOS=() EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -docs) DOCS=$2; shift 2 ;;
    -perf) PERF=$2; shift 2 ;;
    -json) JSONDIR=$2; shift 2 ;;
    -keep) KEEP=1; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) SCENARIOS+=("$1"); shift ;;
  esac
done
if [ ${#SCENARIOS[@]} -eq 0 ]; then
  echo "usage: $0 [-docs FILE] [-perf DIR] [-json DIR] [-keep] scenario... [-- bench flags]" >&2
  "$BIN" bench -list >&2
  exit 2
fi
[ -n "$PERF" ] && mkdir -p "$PERF"
[ -n "$JSONDIR" ] && mkdir -p "$JSONDIR"

ROWS=$(mktemp)
CMDS=$(mktemp)
RESULTS=$(mktemp -d)
TLSDIR=""
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap 'bench_stop_servers; rm -f "$ROWS" "$CMDS"; rm -rf "$RESULTS" ${TLSDIR:+"$TLSDIR"}' EXIT

# With TLS=1: one CA and a server, client and cli certificate for the
# invocation; SERVER_TLS and BENCH_TLS are the servers' and the bench's
# flags for them.
SERVER_TLS=() BENCH_TLS=()
if [ "${TLS:-0}" = 1 ]; then
  TLSDIR=$(mktemp -d "${TMPDIR:-/tmp}/drover-bench-tls.XXXXXX")
  case $BIN in /*) bin=$BIN ;; */*) bin=$PWD/$BIN ;; *) bin=$BIN ;; esac
  (
    cd "$TLSDIR"
    "$bin" tls ca create
    "$bin" tls cert create -server
    "$bin" tls cert create -client
    "$bin" tls cert create -cli
  ) >/dev/null
  CA=$TLSDIR/drover-agent-ca.pem
  cat >"$TLSDIR/server-tls.hcl" <<HCL
tls {
  http                   = true
  rpc                    = true
  ca_file                = "$CA"
  cert_file              = "$TLSDIR/global-server-drover.pem"
  key_file               = "$TLSDIR/global-server-drover-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
}
HCL
  SERVER_TLS=(-config "$TLSDIR/server-tls.hcl")
  SCHEME=https
  CURL_TLS=(--cacert "$CA" --cert "$TLSDIR/global-cli-drover.pem" --key "$TLSDIR/global-cli-drover-key.pem")
  BENCH_TLS=(-ca-cert "$CA" -client-cert "$TLSDIR/global-cli-drover.pem" -client-key "$TLSDIR/global-cli-drover-key.pem"
    -tls-ca-file "$CA" -tls-cert-file "$TLSDIR/global-client-drover.pem" -tls-key-file "$TLSDIR/global-client-drover-key.pem")
  echo "==> TLS on: RPC, Raft and HTTP are mutual TLS; CA and certificates in $TLSDIR"
fi

ACLCONF=""
if [ "${ACL:-0}" = 1 ]; then
  ACLCONF=$(mktemp "${TMPDIR:-/tmp}/drover-bench-acl.XXXXXX.hcl")
  printf 'acl {\n  enabled = true\n}\n' >"$ACLCONF"
  SERVER_TLS+=(-config "$ACLCONF")
  echo "==> ACLs on: the bench uses the bootstrap management token"
fi
trap 'bench_stop_servers; rm -f "$ROWS" "$CMDS" ${ACLCONF:+"$ACLCONF"}; rm -rf "$RESULTS" ${TLSDIR:+"$TLSDIR"}' EXIT

status=0
for sc in "${SCENARIOS[@]}"; do
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/drover-bench-$sc.XXXXXX")
  JOIN=()
  for i in 1 2 3; do JOIN+=(-retry-join "$(rpc $i)"); done
  PIDS=()
  for i in 1 2 3; do
    "$BIN" agent -server -bootstrap-expect 3 -node "bench-s$i" -bind 127.0.0.1 \
      -data-dir "$DIR/s$i" -http-port $((BASE + 10 * i + 1)) -rpc-port $((BASE + 10 * i + 2)) \
      -log-level warn "${JOIN[@]}" "${SERVER_TLS[@]}" ${AGENT_ARGS:-} >"$DIR/s$i.log" 2>&1 &
    PIDS+=($!)
  done
  if ! bench_wait_leader "$sc" "$DIR"; then
    status=1
    continue
  fi
  TOKEN_ARGS=()
  if [ -n "$ACLCONF" ]; then
    secret=$(curl -fsS "${CURL_TLS[@]}" -X POST "$(http 1)/v1/acl/bootstrap" | sed -n 's/.*"SecretID":"\([^"]*\)".*/\1/p')
    if [ -z "$secret" ]; then
      echo "ACL bootstrap failed for $sc" >&2
      status=1
      bench_stop_servers
      continue
    fi
    TOKEN_ARGS=(-token "$secret")
    # Each server resolves tokens from its own state: wait until every
    # one has the new token.
    for i in 1 2 3; do
      for _ in $(seq 100); do
        curl -fsS "${CURL_TLS[@]}" -H "X-Nomad-Token: $secret" "$(http $i)/v1/acl/token/self" >/dev/null 2>&1 && break
        sleep 0.1
      done
    done
  fi
  ARGS=(-scenario "$sc" -address "$(http 1),$(http 2),$(http 3)"
    -sim-servers "$(rpc 1),$(rpc 2),$(rpc 3)" -id-prefix "bench-$sc"
    -server-pids "$(IFS=,; echo "${PIDS[*]}")" -data-dirs "$DIR/s1,$DIR/s2,$DIR/s3"
    -markdown-out "$ROWS" -json-out "$RESULTS/$sc.json" "${BENCH_TLS[@]}" "${TOKEN_ARGS[@]}")
  [ -n "$PERF" ] && ARGS+=(-perf "$PERF/$sc.perf.data")
  if [ "${sc%-kill}" != "$sc" ] && [ -f "$RESULTS/${sc%-kill}.json" ]; then
    base=$(sed -n 's/^  "placed_seconds": \([0-9.]*\),$/\1/p' "$RESULTS/${sc%-kill}.json")
    if [ -n "$base" ] && [ "$base" != "0" ]; then ARGS+=(-baseline-placed "${base}s"); fi
  fi
  ARGS+=("${EXTRA[@]}")
  echo "==> $sc: servers ${PIDS[*]} in $DIR"
  echo "$BIN bench ${ARGS[*]}" | sed "s#$DIR#\$DIR#g; ${TLSDIR:+s#$TLSDIR#\$TLSDIR#g; }s#-server-pids [0-9,]*#-server-pids \$PIDS#; s#-token [^ ]*#-token \$TOKEN#; s#-markdown-out [^ ]*##; s#-json-out [^ ]*##" >>"$CMDS"
  if ! "$BIN" bench "${ARGS[@]}"; then status=1; fi
  if [ -n "${METRICS_DIR:-}" ]; then
    mkdir -p "$METRICS_DIR"
    stamp=$(date -u +%Y%m%dT%H%M%S.%N)
    sleep 1.5 # one more runtime-metrics interval
    for i in 1 2 3; do
      curl -fsS "${CURL_TLS[@]}" ${TOKEN_ARGS:+-H "X-Nomad-Token: ${TOKEN_ARGS[1]}"} "$(http $i)/v1/metrics" \
        >"$METRICS_DIR/$sc-s$i-$stamp.json" 2>/dev/null || true
    done
  fi
  if [ -n "$JSONDIR" ] && [ -f "$RESULTS/$sc.json" ]; then
    cp "$RESULTS/$sc.json" "$JSONDIR/$sc-$(date -u +%Y%m%dT%H%M%S.%N).json"
  fi
  bench_stop_servers
  if [ $KEEP = 1 ]; then echo "    kept $DIR"; else rm -rf "$DIR"; fi
  echo
done

if [ -n "$DOCS" ]; then
  {
    echo
    echo "### Scale harness scenarios, $(date -u +%Y-%m-%d)"
    echo
    echo "Three real \`drover agent -server\` processes on 127.0.0.1 (temporary data"
    echo "dirs, fsync on), the node simulator inside \`drover bench\` on the same"
    echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(go version 2>/dev/null | awk '{print $3}')."
    if [ -n "$TLSDIR" ]; then
      echo "TLS on (TLS=1): RPC, Raft and HTTP are mutual TLS with verify_server_hostname"
      echo "and verify_https_client; the bench presents a cli certificate, the simulator a client one."
    fi
    echo "Generated by \`make bench-scenarios\` (scripts/bench-cluster.sh), one fresh"
    echo "cluster per scenario; each server listens on 127.0.0.1:$BASE+10i+{1,2}:"
    echo
    echo '```'
    cat "$CMDS"
    echo '```'
    echo
    "$BIN" bench -markdown-header
    cat "$ROWS"
    echo
    echo "CPU is utime+stime of each server process over the measured window (first"
    echo "job write until every allocation runs); peak RSS is the highest VmRSS"
    echo "sampled every 100 ms in it. Load average is /proc/loadavg at the start and"
    echo "end of the window (other work may share the machine). Leader kill: when"
    echo "the leader was SIGKILLed (from the first job write) and how long until a"
    echo "surviving server named a new leader. Jobs converged / duplicate allocs: every"
    echo "job's allocations read back at the end (each job at its count, no name held"
    echo "by two live allocations)."
  } >>"$DOCS"
  echo "==> appended the results to $DOCS"
fi
exit $status

#!/usr/bin/env bash
# Run benchmark scenarios against a fresh local three-server Nomad cluster
# each, with the same tool as Drover's (scripts/bench-cluster.sh): real
# `nomad agent -server` processes on 127.0.0.1 with temporary data dirs, the
# node simulator inside `drover bench` speaking Nomad's client RPCs
# (-sim-target nomad), /proc figures of the servers.
#
#   scripts/bench-nomad.sh [-keep] scenario... [-- bench flags]
#
#   -keep  keep the data dirs and logs (printed at the end)
#
# The jobs use Nomad's mock_driver: the servers only need the nodes to
# advertise it (the simulated nodes do), so any Nomad build works.
#
# Environment: NOMAD_BIN (default: nomad on the PATH), BIN (default
# ./bin/drover), BENCH_PORT_BASE (default 25000: server i listens on HTTP
# base+10i+1, RPC base+10i+2, Serf base+10i+3), NOMAD_CONFIG (more HCL for
# every server, e.g. 'server { num_schedulers = 4 }').
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./bin/drover}
NOMAD=${NOMAD_BIN:-nomad}
BASE=${BENCH_PORT_BASE:-25000}

KEEP=0
SCENARIOS=() EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -keep) KEEP=1; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) SCENARIOS+=("$1"); shift ;;
  esac
done
if [ ${#SCENARIOS[@]} -eq 0 ]; then
  echo "usage: $0 [-keep] scenario... [-- bench flags]" >&2
  "$BIN" bench -list >&2
  exit 2
fi
"$NOMAD" version >/dev/null

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
trap bench_stop_servers EXIT
serf() { echo "127.0.0.1:$((BASE + 10 * $1 + 3))"; }

status=0
for sc in "${SCENARIOS[@]}"; do
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/nomad-bench-$sc.XXXXXX")
  PIDS=()
  for i in 1 2 3; do
    cat >"$DIR/s$i.hcl" <<EOF
name      = "nomad-bench-s$i"
data_dir  = "$DIR/s$i"
bind_addr = "127.0.0.1"
log_level = "WARN"
disable_update_check = true
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
ports {
  http = $((BASE + 10 * i + 1))
  rpc  = $((BASE + 10 * i + 2))
  serf = $((BASE + 10 * i + 3))
}
server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join     = ["$(serf 1)", "$(serf 2)", "$(serf 3)"]
    retry_interval = "1s"
  }
}
${NOMAD_CONFIG:-}
EOF
    "$NOMAD" agent -config "$DIR/s$i.hcl" >"$DIR/s$i.log" 2>&1 &
    PIDS+=($!)
  done
  if ! bench_wait_leader "$sc (Nomad)" "$DIR"; then
    status=1
    continue
  fi
  ARGS=(-scenario "$sc" -address "$(http 1),$(http 2),$(http 3)"
    -sim-servers "$(rpc 1),$(rpc 2),$(rpc 3)" -sim-target nomad -id-prefix "bench-$sc"
    -server-pids "$(IFS=,; echo "${PIDS[*]}")" -data-dirs "$DIR/s1,$DIR/s2,$DIR/s3")
  ARGS+=("${EXTRA[@]}")
  echo "==> $sc: Nomad $("$NOMAD" version | head -1 | awk '{print $2}') servers ${PIDS[*]} in $DIR (leader $leader)"
  echo "    $BIN bench ${ARGS[*]}" | sed "s#$DIR#\$DIR#g; s#-server-pids [0-9,]*#-server-pids \$PIDS#"
  if ! "$BIN" bench "${ARGS[@]}"; then status=1; fi
  bench_stop_servers
  if [ $KEEP = 1 ]; then echo "    kept $DIR"; else rm -rf "$DIR"; fi
  echo
done
exit $status

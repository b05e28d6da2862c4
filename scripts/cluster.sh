#!/usr/bin/env bash
# make cluster: three servers and two clients on 127.0.0.1, in the
# background, data and logs under .cluster/. make cluster-stop ends them.
#
#   server s1: HTTP 4646, RPC 4647     client c1: HTTP 7646
#   server s2: HTTP 5646, RPC 5647     client c2: HTTP 8646
#   server s3: HTTP 6646, RPC 6647
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./bin/drover
DIR=.cluster

stop() {
  local any=0
  for pidfile in "$DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then kill -INT "$pid"; any=1; fi
    rm -f "$pidfile"
  done
  if [ $any = 1 ]; then sleep 2; echo "cluster stopped (data and logs kept in $DIR/)"; else echo "no cluster running"; fi
}

if [ "${1:-start}" = stop ]; then stop; exit 0; fi

mkdir -p "$DIR"
if ls "$DIR"/*.pid >/dev/null 2>&1; then
  echo "a cluster seems to be running already (make cluster-stop first)" >&2
  exit 1
fi
JOIN="-retry-join 127.0.0.1:4647 -retry-join 127.0.0.1:5647 -retry-join 127.0.0.1:6647"
for i in 1 2 3; do
  port=$((i + 3))646
  # shellcheck disable=SC2086
  "$BIN" agent -server -bootstrap-expect 3 -node "s$i" -bind 127.0.0.1 \
    -data-dir "$DIR/s$i" -http-port "$port" -rpc-port "${port%6}7" $JOIN \
    >"$DIR/s$i.log" 2>&1 &
  echo $! >"$DIR/s$i.pid"
done
cat >"$DIR/client.hcl" <<'HCL'
plugin "raw_exec" {
  config {
    enabled = true
  }
}
HCL
for i in 1 2; do
  port=$((i + 6))646
  "$BIN" agent -client -servers 127.0.0.1:4647,127.0.0.1:5647,127.0.0.1:6647 \
    -config "$DIR/client.hcl" -node "c$i" -bind 127.0.0.1 -data-dir "$DIR/c$i" \
    -http-port "$port" >"$DIR/c$i.log" 2>&1 &
  echo $! >"$DIR/c$i.pid"
done

export DROVER_ADDR=http://127.0.0.1:4646
for _ in $(seq 1 150); do
  if "$BIN" status >/dev/null 2>&1 && [ "$("$BIN" node status 2>/dev/null | grep -c ready)" = 2 ]; then break; fi
  sleep 0.2
done
"$BIN" operator raft list-peers
echo
"$BIN" node status
cat <<TXT

Cluster running: logs and data in $DIR/. The CLI talks to s1 by default
(DROVER_ADDR=$DROVER_ADDR). Try: ./bin/drover job run examples/service.nomad.hcl
Stop it with: make cluster-stop
TXT

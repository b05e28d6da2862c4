#!/usr/bin/env bash
# make cluster: three servers and two clients on 127.0.0.1, in the
# background, data and logs under .cluster/. make cluster-stop ends them
# and the tasks their clients left running (a client's tasks outlive it).
#
#   server s1: HTTP 4646, RPC 4647     client c1: HTTP 7646
#   server s2: HTTP 5646, RPC 5647     client c2: HTTP 8646
#   server s3: HTTP 6646, RPC 6647
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./bin/drover
DIR=.cluster

# starttime prints field 22 of /proc/PID/stat (the process's start time),
# or nothing when PID is gone. The command name (field 2) may hold spaces.
starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # shellcheck disable=SC2086
  set -- ${stat##*) }
  echo "${20}"
}

# recorded NAME FILE prints the number NAME holds in a JSON record.
recorded() { grep -o "\"$1\":[0-9]*" "$2" 2>/dev/null | head -n1 | cut -d: -f2; }

# stop_tasks ends the raw_exec tasks the clients left running (a client's
# tasks outlive it, as Nomad's do, so that a restarted client re-attaches).
# Each task's supervisor recorded its own and its task's PID and start
# time in run.json; a PID is signalled only while its start time matches,
# so a reused PID is never hit. The task's process group gets SIGTERM,
# then SIGKILL; the supervisor, once it has recorded the exit, SIGKILL.
stop_tasks() {
  local any=0 run dir tpid spid
  for run in "$DIR"/c*/alloc/*/*@raw_exec/run.json; do
    [ -e "$run" ] || continue
    dir=$(dirname "$run")
    tpid=$(recorded task_pid "$run")
    spid=$(recorded supervisor_pid "$run")
    if [ -n "$tpid" ] && [ "$(starttime "$tpid")" = "$(recorded task_start_time "$run")" ]; then
      kill -TERM -- "-$tpid" 2>/dev/null && any=1
      for _ in $(seq 1 50); do
        [ -n "$(starttime "$tpid")" ] || break
        sleep 0.1
      done
      [ -z "$(starttime "$tpid")" ] || kill -KILL -- "-$tpid" 2>/dev/null
    fi
    if [ -n "$spid" ] && [ "$(starttime "$spid")" = "$(recorded supervisor_start_time "$run")" ]; then
      for _ in $(seq 1 20); do
        [ ! -e "$dir/exit_status.json" ] || break
        sleep 0.1
      done
      kill -KILL "$spid" 2>/dev/null && any=1
    fi
  done
  if [ $any = 1 ]; then echo "ended the tasks the clients left running"; fi
}

stop() {
  local any=0 pids=()
  for pidfile in "$DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then kill -INT "$pid"; pids+=("$pid"); any=1; fi
    rm -f "$pidfile"
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  done
  stop_tasks
  if [ $any = 1 ]; then echo "cluster stopped (data and logs kept in $DIR/)"; else echo "no cluster running"; fi
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
for pidfile in "$DIR"/*.pid; do
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    name=$(basename "$pidfile" .pid)
    echo "agent $name exited; the end of $DIR/$name.log:" >&2
    tail -n 5 "$DIR/$name.log" >&2
    stop >/dev/null
    exit 1
  fi
done
"$BIN" operator raft list-peers
echo
"$BIN" node status
cat <<TXT

Cluster running: logs and data in $DIR/. The CLI talks to s1 by default
(DROVER_ADDR=$DROVER_ADDR). Try: ./bin/drover job run examples/service.nomad.hcl
Stop it with: make cluster-stop
TXT

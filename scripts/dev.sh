#!/usr/bin/env bash
# make run: start a single-node dev agent (server + client in one process),
# run the example batch job to completion, show its output, and keep the
# agent running in the foreground until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=./bin/drover
ADDR="${DROVER_ADDR:-http://127.0.0.1:4646}"
export DROVER_ADDR="$ADDR"
mkdir -p .dev
LOG=.dev/agent.log

if curl -fsS "$ADDR/v1/agent/health" >/dev/null 2>&1; then
  echo "An agent already answers at $ADDR; stop it first (or set DROVER_ADDR)." >&2
  exit 1
fi

"$BIN" agent -dev >"$LOG" 2>&1 &
AGENT=$!
trap 'echo; echo "==> Stopping the dev agent"; kill -INT $AGENT 2>/dev/null; wait $AGENT 2>/dev/null; exit 0' INT TERM

echo "==> Starting a dev agent (server + client), log in $LOG"
for _ in $(seq 1 100); do
  if "$BIN" status >/dev/null 2>&1; then break; fi
  if ! kill -0 $AGENT 2>/dev/null; then echo "agent exited; see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; fi
  sleep 0.1
done
# The dev client registers itself shortly after the server elects itself.
for _ in $(seq 1 100); do
  if "$BIN" node status 2>/dev/null | grep -q ready; then break; fi
  sleep 0.1
done
"$BIN" status

echo
echo "==> Running examples/batch.nomad.hcl"
"$BIN" job run examples/batch.nomad.hcl
for _ in $(seq 1 100); do
  if "$BIN" job status hello 2>/dev/null | grep -q "Status *= dead"; then break; fi
  sleep 0.1
done
echo
echo "==> Output of the job's task (drover alloc logs -job hello hello):"
"$BIN" alloc logs -job hello hello

# The docker driver is on in every client and detected while a docker
# daemon answers: then the docker example runs too.
self="$("$BIN" node status -self 2>/dev/null || true)"
if grep -Eq '^Drivers.*docker' <<<"$self"; then
  echo
  echo "==> Docker answers: running examples/docker.nomad.hcl (image built locally by scripts/busybox-image.sh)"
  if ./scripts/busybox-image.sh && "$BIN" job run examples/docker.nomad.hcl; then
    for _ in $(seq 1 100); do
      if "$BIN" job status web 2>/dev/null | grep -q "running"; then break; fi
      sleep 0.1
    done
    "$BIN" job status web | tail -3
    alloc="$("$BIN" job status web | awk '$3 == "web" && $6 == "running" {print $1; exit}')"
    addr="$("$BIN" alloc status "$alloc" 2>/dev/null | awk '$1 == "*http" {print $3; exit}')"
    if [ -n "$addr" ]; then
      echo "==> The container answers on the host: curl http://$addr/"
      curl -fsS "http://$addr/" || true
    fi
  fi
else
  echo
  echo "==> No docker daemon answers: the docker driver is not detected (start dockerd to use examples/docker.nomad.hcl)"
fi

cat <<TXT

==> The dev agent keeps running at $ADDR (log: $LOG). Try:
      $BIN job status
      $BIN node status
      $BIN job run examples/service.nomad.hcl
    Ctrl-C stops it (its data is thrown away).
TXT
wait $AGENT

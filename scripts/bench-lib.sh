# Shared by scripts/bench-cluster.sh (Drover servers) and
# scripts/bench-nomad.sh (Nomad servers): sourced, not run. Both start three
# servers on 127.0.0.1 per scenario, server i listening on HTTP
# BASE+10i+1 and RPC BASE+10i+2; PIDS holds the running servers.

PIDS=()
# SCHEME is the servers' HTTP scheme (https with TLS); CURL_TLS holds
# curl's --cacert, --cert and --key for them then.
SCHEME=http
CURL_TLS=()

# bench_stop_servers interrupts every server in PIDS and waits for it.
bench_stop_servers() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}

http() { echo "$SCHEME://127.0.0.1:$((BASE + 10 * $1 + 1))"; }
rpc() { echo "127.0.0.1:$((BASE + 10 * $1 + 2))"; }

# bench_wait_leader WHAT DIR: wait up to 30 s for server 1 to name a
# leader (set in $leader); on failure print the servers' logs
# ($DIR/s{1,2,3}.log), stop them and return 1.
bench_wait_leader() {
  leader=""
  for _ in $(seq 1 150); do
    leader=$(curl -fsS "${CURL_TLS[@]}" "$(http 1)/v1/status/leader" 2>/dev/null || true)
    if echo "$leader" | grep -q ':'; then return 0; fi
    leader=""
    sleep 0.2
  done
  echo "==> $1: the servers elected no leader within 30 s; their logs:" >&2
  for i in 1 2 3; do echo "--- s$i" >&2; tail -20 "$2/s$i.log" >&2; done
  bench_stop_servers
  return 1
}

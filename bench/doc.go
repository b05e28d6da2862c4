// Package bench is Drover's benchmark driver: it runs named scenarios
// (burst, dense, c1m-small, churn, heartbeats) against any cluster through
// the HTTP API only, with Nomad's own Go client
// (github.com/hashicorp/nomad/api), so the same run can drive a Nomad
// cluster for a side-by-side. It measures what a user sees (time until
// every allocation is placed and running, placements per second,
// register -> evaluation complete latency) and, for servers on this
// machine, what they cost (CPU seconds and peak RSS from /proc, Raft data
// size on disk).
//
// Usage:
//
//	res, err := bench.Run(ctx, &bench.Config{
//		Addresses: []string{"http://127.0.0.1:4646"},
//		Scenario:  scenario, // bench.Lookup("burst")
//		StartNodes: startSim, // or nil when a simulator already runs
//	})
//	res.WriteText(os.Stdout)
//
// The nodes come from a node simulator (package agent/sim): Run starts
// one through Config.StartNodes, or waits for enough ready nodes whose IDs
// start with Config.NodePrefix.
//
// How it measures:
//   - "placed" is reached when the sum over the scenario's jobs of their
//     summaries' non-queued allocations (starting, running, complete,
//     failed, lost, unknown) reaches the total count; "running" when
//     running plus complete does. Up to 32 jobs, each is followed with
//     blocking queries on its summary (index and wait). With more, the
//     job list (every summary in one answer; a Drover list does not block
//     on summary changes) is read every 200 ms near the end and at most
//     every second while the allocations left would take long at the rate
//     so far, until at most 32 jobs are not fully running: those then get
//     their own blocking summary queries, so the end is stamped when it
//     happens, not at the next read.
//   - register -> eval complete is the evaluation's ModifyTime (stamped by
//     the scheduler when it finishes, after its plan is committed) minus
//     the wall time just before the register request was sent: the
//     servers' clocks must agree with this machine's (same host or NTP).
//     Since the servers stamp it, nothing follows the evaluations during
//     the run: the evaluation list is read once at the end, and only the
//     evaluations not yet terminal in it are followed one by one.
//   - CPU seconds are utime+stime from /proc/<pid>/stat over the measured
//     window; peak RSS is the highest VmRSS sampled every 100 ms in it.
//   - leader kill (Config.KillLeaderAfter, scenario c1m-small-kill): that
//     long into the window the leader is found (/v1/status/leader matched
//     against each agent's own RPC address from /v1/agent/self) and
//     SIGKILLed; the election time is from the kill until a survivor's
//     /v1/status/leader (polled every 50 ms) names another server. From
//     the kill on, every request goes to the survivors; job writes are
//     retried through the next agent after transport errors, 5xx and 429.
//   - at the end every job's allocations are read back: no allocation
//     name may be held by two non-terminal allocations (a duplicate
//     placement), and each place job must hold exactly its count. Either
//     failure fails the run.
//
// This package imports only Nomad's Go API client, the standard library
// and internal/backoff: it must never import a Drover server, agent or
// simulator package (the caller wires the simulator in), so that what it
// measures is exactly what a Nomad user's program would see.
package bench

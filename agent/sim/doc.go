// Package sim is a node simulator: one process that plays many client
// nodes against real Drover servers, over the same RPCs a real client uses,
// so that the servers can be measured at cluster scale (`drover sim`, and
// `drover bench` in-process).
//
//	           one goroutine per node: blocking Node.GetClientAllocs
//	Sim ──────────────────────────────────────────────────────────► servers
//	 │  register (Node.Register, bounded concurrency)                  ▲
//	 │  heartbeat timers (Node.UpdateStatus within each TTL, jittered) │
//	 │  alloc timers: running after ReportDelay, then complete/failed  │
//	 │               after the task's run_for / exit_code (batch jobs) │
//	 └── one update batcher for ALL nodes: Node.UpdateAlloc every      │
//	     UpdateInterval, many allocations per RPC ─────────────────────┘
//
// Each simulated node registers with its own ID (deterministic from
// IDPrefix and its index, so a restarted simulator is the same nodes),
// the attributes a real client fingerprints (kernel.name, cpu.arch,
// unique.hostname, driver.mock_driver, ...), a datacenter, a node class
// and the resources given in Config. Nodes share a few RPC clients (one
// yamux session per server each), never one TCP connection per node, and
// no node owns an OS thread: a node costs one goroutine blocked in its
// allocation watch, one yamux stream, plus a timer.
//
// The RPC client (mux.go) is the simulator's own, not server/pool: it
// speaks the same yamux and msgpack RPC to the servers, but with one reader
// goroutine per session that hands each caller its whole response
// (internal/msgpackread finds where it ends; internal/msgpackrpc writes
// and reads the rpc headers), requests framed by their callers and
// gathered into few writes (netutil.CoalescingConn), and streams kept for
// reuse.
// With thousands of nodes in one process that is several times cheaper
// than hashicorp/yamux's per-stream reads and send loop; the servers do
// the same work either way. The two answers every allocation costs a
// node (the watch's map of allocation IDs and the fetched allocations)
// are not decoded into structs: wire.go reads the few fields a node acts
// on straight from their msgpack (with a msgpackread.Reader), and decodes
// an allocation's job only for a job version it has not seen.
//
// Allocations are never run: the simulator reports them running after
// Config.ReportDelay, and, for batch jobs, complete (exit_code 0) or failed
// after the task's mock_driver run_for (Config.RunFor when the task sets
// none). Allocations of service and system jobs run until the servers stop
// them. An allocation the servers stop is reported complete after
// ReportDelay.
//
// With Config.Target TargetNomad the same nodes play Nomad clients against
// real Nomad servers, so both are measured with one tool (nomad.go, and
// scripts/bench-nomad.sh): the RPC client opens Nomad's multiplexed
// protocol (each stream announced), every request is rewritten into
// Nomad's shape (sim-local structs mirroring only the fields sent, the
// node's secret as the token Nomad's client RPCs require), node IDs are
// UUIDs, and a node registers initializing, then turns ready. The answers
// are read as for Drover: the field names are Nomad's.
//
// The package must never import package server or touch Raft or a state
// store: it talks to servers only through a Transport, as a real client.
package sim

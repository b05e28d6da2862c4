// Package server is a Drover server: one member of the Raft-replicated
// control plane. It owns the TCP listener, the Raft instance and its
// on-disk stores, cluster bootstrap and join, request routing (forwarding
// writes and consistent reads to the leader), the RPC endpoints (Status,
// Job, Node, Eval, Plan, Alloc, System, Operator) and the scheduling
// pipeline: eval broker, blocked evals, plan queue and applier, heartbeat
// timers and scheduler workers.
//
// Wire protocol: a server listens on one TCP port. The first byte of each
// accepted connection selects what the connection carries (the byte values
// are defined in package pool, see pool.ProtocolRPC and pool.ProtocolRaft):
//
//	0x01 RPC   a yamux session; every stream carries msgpack net/rpc
//	           (structs.MsgpackHandle; the codec is internal/msgpackrpc,
//	           byte-compatible with net-rpc-msgpackrpc).
//	0x02 Raft  a hashicorp/raft NetworkTransport connection.
//
// Because both share the port, a server's Raft address is its RPC address:
// the leader's address reported by Raft is where followers forward requests.
//
// Routing: every endpoint first calls forward. Stale reads are served
// locally; writes and consistent reads go to the leader (followers forward
// over the pool, once: a forwarded request is never forwarded again). The
// leader serves them only after its post-election Raft barrier, and checks
// leadership (one batched raft.VerifyLeader per round) before a consistent
// read. With no leader known, a request waits up to Config.NoLeaderTimeout
// and fails with structs.ErrNoLeader.
//
// Cluster formation: each server announces itself (Status.Announce) to its
// RetryJoin addresses and every server it has heard of; replies carry the
// peer's member list. A server without Raft state that knows
// BootstrapExpect servers, none with state, bootstraps Raft with all of
// them sorted by ID. The leader adds alive servers missing from the Raft
// configuration as voters (replacing an old ID at a reused address).
//
// Leadership: raft's NotifyCh drives monitorLeadership; on gaining
// leadership the server runs a barrier and then its leader hooks, and
// revokes them in reverse order when leadership is lost. The built-in
// hooks, in order: the plan queue and applier, the eval broker and blocked
// evals (re-filled from state), the heartbeat timers, worker pausing, the
// periodic dispatcher (periodic_wire.go, package periodic), the node
// drainer and the garbage collector; then Config.LeaderHooks.
//
// Scheduling pipeline (sched_leader.go, workers.go, eval_endpoint.go,
// plan_endpoint.go):
//
//	Job.Register / Node.* / Alloc.Stop ──Raft──► FSM ──hooks (fsm_hooks.go)──┐
//	                                                                         │
//	  pending eval ──► eval broker ◄──── blocked evals ◄── blocked eval ◄────┤
//	                      │        (released when capacity  (NodeChanged,    │
//	                      │         that can help appears)   AllocsTerminal)─┘
//	       Eval.Dequeue   ▼ (leader; workers elsewhere call it over RPC)
//	   worker on any server: wait for WaitIndex, snapshot, scheduler
//	                      │
//	       Plan.Submit    ▼ (token checked; nack timer paused)
//	   plan queue ──► plan applier: check against state + commits in flight
//	                      │           (pipelined Raft commits)
//	                      ▼
//	   Eval.Update (token checked) ──Raft──► FSM ──► Eval.Ack
//
// Every server runs Config.NumSchedulers workers; the leader pauses all but
// LeaderWorkerFraction of them. A worker on the leader calls the broker and
// plan queue directly; elsewhere it uses the same endpoints over RPC
// (errors stay typed), sending each plan's job once (normalizePlan) and
// receiving a slim plan result. Evaluations that reach the broker's
// delivery limit are marked failed with a delayed follow-up; superseded
// ones are canceled through Raft.
//
// Node liveness (node_liveness.go): the leader keeps a TTL timer per node,
// reset by Node.Register and Node.UpdateStatus; a node that misses it by
// the grace period is marked down with one evaluation per affected job, in
// one Raft entry.
//
// Usage:
//
//	srv, err := server.NewServer(&server.Config{
//	    Name: "s1", DataDir: dir, BindAddr: "127.0.0.1", RPCPort: 4647,
//	    BootstrapExpect: 3, RetryJoin: []string{"10.0.0.2:4647", "10.0.0.3:4647"},
//	})
//	defer srv.Shutdown()
//	var resp structs.JobRegisterResponse
//	err = srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
//
// This package must never schedule work itself (that is worker/ and
// scheduler/; Job.Plan only runs a scheduler on a scratch snapshot and
// writes nothing), never block in an FSM hook, never write state except through a Raft apply, and never
// match on error text: errors that cross an RPC are decoded once, by
// structs.DecodeRPCError in package pool.
package server

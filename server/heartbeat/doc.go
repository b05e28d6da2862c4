// Package heartbeat keeps the leader's per-node liveness timers.
//
// The leader calls Reset each time a node heartbeats (or registers); Reset
// returns the TTL to hand back to the client and arms a timer of TTL plus a
// grace period. When a timer fires, the Expired callback runs (the server
// then marks the node down through Raft). The TTL grows with the number of
// tracked nodes so that the cluster as a whole sees about MaxPerSecond
// heartbeats per second, never less than MinTTL, with random stagger so that
// nodes registered together do not all heartbeat together.
//
// After a leader change, Initialize arms every known node's timer with the
// longer FailoverTTL: clients need time to find the new leader, and must not
// be mass-marked down meanwhile. Extend does the same for one node whose
// timer fired while the leader could not reach a quorum (the fault was the
// server's); Alive tells whether a node heartbeated since its timer fired.
//
// The package does no I/O and takes its clock from Config, so tests drive
// it with a fake clock. It must never block in Reset: the heartbeat RPC path
// calls it for every node.
package heartbeat

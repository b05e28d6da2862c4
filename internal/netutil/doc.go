// Package netutil holds small network helpers shared by the RPC server and
// the RPC client pool: CoalescingConn, which gathers many small writes
// (yamux frames) into few system calls under load.
//
// It must never add latency when idle (no timers, no waiting for more
// bytes) and never hold an unbounded amount of unsent data.
package netutil

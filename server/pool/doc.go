// Package pool is the client side of Drover's RPC: a pool of yamux sessions,
// one per remote server address, over which each call opens (or reuses) a
// stream carrying msgpack net/rpc (internal/msgpackrpc's codec, which
// talks to servers using net-rpc-msgpackrpc's as well).
//
// Errors returned by the remote endpoint come back typed: the pool decodes
// them with structs.DecodeRPCError, so callers use errors.Is against the
// structs sentinels and never read error text. Transport failures are
// returned as they are and drop the broken session, so the next call dials
// again.
//
// The pool is used by servers (forwarding to the leader, joining peers) and
// by client agents. It must never import package server or know about Raft.
package pool

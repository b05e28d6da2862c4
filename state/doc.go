// Package state is Drover's in-memory state store: jobs, nodes,
// evaluations, allocations, job summaries and a per-table Raft index, kept
// in go-memdb so that readers get consistent, lock-free snapshots and can
// block until something they read changes.
//
// Usage: the FSM owns one StateStore and calls its write methods with the
// Raft index of the entry being applied. Everyone else reads: RPC endpoints
// through the read methods (optionally as a BlockingQuery), schedulers
// through a Snapshot.
//
// Every write has one shape: open a write txn (a Batch), defer Abort,
// change rows through an upsertXTxn helper, record the index of every
// table touched in the index table, Commit. A Batch may carry several
// writes with their own indexes: the FSM applies a batch of Raft entries
// in one transaction that way (one commit, one wake-up of watchers).
//
// Each node has one derived row (node_allocs.go), kept in the same
// transactions as the allocation writes: its usage (NodeUsage, the summed
// resources and count of its live allocations, read in O(1)), its
// allocations (ID and AllocModifyIndex, sorted by ID) and its allocation
// index (NodeAllocIndex, the highest AllocModifyIndex among them, the one
// row a client's watch blocks on; it wakes for server-side changes, for
// allocations joining or leaving the node, and for client updates that
// change the usage, not for the common "running" update). A transaction
// writes each changed node's row once, at commit. Snapshots do not carry
// the rows; a restore rebuilds them from the nodes and allocations.
//
// Allocations are not memdb rows: they live in persistent B-trees
// (internal/ptree) by ID and by job, next to the node rows, all held in
// the allocs table's one row (alloc_tables.go), so that a memdb read
// transaction sees them as of its own state. Reads by node start from the
// node's row, reads by job from the job's keys; both fetch each listed
// allocation by ID. With a watch set, reads by ID, job, node and
// evaluation watch precise keys (allocWatches), registered before they
// read; reads of every allocation watch the allocations row. Snapshots
// carry the allocations; a restore rebuilds the trees and node rows.
//
// This package must never:
//   - mutate an object after it has been handed to a reader (writers copy,
//     change the copy, and insert the copy);
//   - return (nil, nil) from a lookup: a missing object is an error that
//     satisfies errors.Is(err, structs.ErrNotFound);
//   - read a clock, generate IDs or do I/O: every value it writes comes from
//     its arguments, so all servers applying the same log reach the same
//     state;
//   - import anything from Drover but structs and internal packages.
package state

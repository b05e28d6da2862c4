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
// Node usage (NodeUsage) is derived data kept in the same transactions:
// every allocation write adjusts the summed resources and count of its
// node's live allocations, so readers get a node's usage in O(1).
// Snapshots do not carry it; a restore rebuilds it from the allocations.
// The node allocation index (NodeAllocIndex) is derived the same way: per
// node, the highest AllocModifyIndex of its allocations, one row a
// client's watch can block on without waking for client status updates.
//
// This package must never:
//   - mutate an object after it has been handed to a reader (writers copy,
//     change the copy, and insert the copy);
//   - return (nil, nil) from a lookup: a missing object is an error that
//     satisfies errors.Is(err, structs.ErrNotFound);
//   - read a clock, generate IDs or do I/O: every value it writes comes from
//     its arguments, so all servers applying the same log reach the same
//     state;
//   - import anything from Drover but structs.
package state

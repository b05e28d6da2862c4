// Package fsm is Drover's Raft state machine: it applies committed log
// entries to the state store, and writes and reads the snapshots Raft uses
// to compact its log and to bring new servers up to date.
//
// Apply reads the entry's first byte as a structs.MessageType and hands the
// rest to one applyX function per type. ApplyBatch (raft.BatchingFSM) does
// the same for a batch of entries in one state transaction; each entry
// still gets its own result and hook calls. Snapshot only takes a memdb
// snapshot (Raft blocks Apply while it runs); Persist streams it in the
// format described in snapshot.go. Restore loads a snapshot into a fresh
// store and swaps it in only once every byte has been verified; while it
// runs it raises the garbage collector's target (Config.RestoreGCPercent),
// the one process-wide setting this package touches.
//
// This package must never:
//   - do anything non-deterministic in Apply (no clocks, random IDs or
//     I/O): every server applies the same entries and must reach the same
//     state;
//   - block in Apply: Hooks are called synchronously and must be cheap;
//   - leave a partially restored store in place: a snapshot that fails to
//     verify leaves the current state untouched.
package fsm

package state

import (
	"github.com/drover-project/drover/structs"
)

// Batch is one write transaction that may carry several writes, each with
// its own Raft index: the FSM applies a whole batch of Raft entries with
// one Batch, so the entries share one commit, one notification of
// watchers and one write per table to the index table. Every write method
// of StateStore is a Batch with one write.
//
// Writes in a batch see the writes before them. Nothing is visible to
// readers until Commit. A write that returns an error may have left part
// of its changes in the batch: the caller must then Abort the batch (and,
// to keep the other writes, redo them in a new one). Reads on a Batch see
// the batch's own writes.
//
// A Batch holds the store's writer lock until Commit or Abort; it is not
// safe for concurrent use.
type Batch struct {
	txn *writeTxn
}

// Batch opens a write batch. Always Abort it (a deferred Abort after
// Commit does nothing).
func (s *StateStore) Batch() *Batch {
	return &Batch{txn: newWriteTxn(s.db, s.allocWatches, s.snapTables, s.jobVersions)}
}

// Commit writes the index table and makes every write of the batch
// visible at once.
func (b *Batch) Commit() error { return b.txn.commit() }

// Abort discards the batch. It does nothing after Commit or Abort.
func (b *Batch) Abort() { b.txn.txn.Abort() }

// JobByID reads a job as the batch sees it.
func (b *Batch) JobByID(namespace, id string) (*structs.Job, error) {
	return lookup[structs.Job](b.txn, TableJobs, "job", id, defaultNamespace(namespace), id)
}

// NodeByID reads a node as the batch sees it.
func (b *Batch) NodeByID(id string) (*structs.Node, error) {
	return lookup[structs.Node](b.txn, TableNodes, "node", id, id)
}

// AllocByID reads an allocation as the batch sees it.
func (b *Batch) AllocByID(id string) (*structs.Allocation, error) {
	a, err := b.txn.alloc(id)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", id)
	}
	return a, nil
}

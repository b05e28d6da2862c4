package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

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
	txn *memdb.Txn
	t   touched
}

// Batch opens a write batch. Always Abort it (a deferred Abort after
// Commit does nothing).
func (s *StateStore) Batch() *Batch {
	return &Batch{txn: s.db.Txn(true)}
}

// Commit writes the index table and makes every write of the batch
// visible at once.
func (b *Batch) Commit() error {
	if err := b.t.commitIndex(b.txn); err != nil {
		return err
	}
	b.txn.Commit()
	return nil
}

// Abort discards the batch. It does nothing after Commit or Abort.
func (b *Batch) Abort() { b.txn.Abort() }

// JobByID reads a job as the batch sees it.
func (b *Batch) JobByID(namespace, id string) (*structs.Job, error) {
	return firstTxn[structs.Job](b.txn, nil, TableJobs, "job", id, defaultNamespace(namespace), id)
}

// NodeByID reads a node as the batch sees it.
func (b *Batch) NodeByID(id string) (*structs.Node, error) {
	return firstTxn[structs.Node](b.txn, nil, TableNodes, "node", id, id)
}

// AllocByID reads an allocation as the batch sees it.
func (b *Batch) AllocByID(id string) (*structs.Allocation, error) {
	return firstTxn[structs.Allocation](b.txn, nil, TableAllocs, "allocation", id, id)
}

// indexedTables are the tables whose last write the index table records,
// in the order of touched.last.
var indexedTables = [...]string{TableJobs, TableJobSummary, TableNodes, TableEvals, TableAllocs}

// touched records, per table, the Raft index of the last write in a
// transaction that changed it, so that commitIndex writes each table's
// row of the index table once per transaction.
type touched struct {
	index uint64 // of the write in progress
	last  [len(indexedTables)]uint64
}

// begin starts a write at index. Writes come in increasing index order.
func (t *touched) begin(index uint64) { t.index = index }

// add records that the write in progress changed table.
func (t *touched) add(table string) {
	for i, name := range indexedTables {
		if name == table {
			t.last[i] = t.index
			return
		}
	}
	panic(fmt.Sprintf("state: table %q has no index row", table))
}

func (t *touched) commitIndex(txn *memdb.Txn) error {
	for i, index := range t.last {
		if index == 0 {
			continue
		}
		if err := txn.Insert(TableIndex, &IndexEntry{Key: indexedTables[i], Value: index}); err != nil {
			return fmt.Errorf("state: updating index of %s: %w", indexedTables[i], err)
		}
	}
	return nil
}

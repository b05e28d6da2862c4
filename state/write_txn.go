package state

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// writeTxn is the write transaction every write helper works through. It
// keeps the rows it has written, by table and primary key, so that a
// lookup by ID is answered from them or from base (the state the
// transaction started from) instead of from the memdb transaction: memdb
// forgets which tree nodes a write transaction has already copied each
// time that transaction reads an index it has changed, after which every
// insert copies its whole path again. A Batch of many writes would
// otherwise pay that on nearly every row.
//
// Helpers never call txn.Insert or txn.Delete directly: insert and delete
// keep rows in step. Secondary-index reads (get) go to the transaction,
// which sees every write.
type writeTxn struct {
	txn  *memdb.Txn
	base *memdb.Txn // read-only; the state before the transaction
	rows map[string]map[string]any
	t    touched
	// nodes is what the transaction's allocation writes change in each
	// node's row of node_allocs (usage and allocation index), by node ID;
	// commit writes it (see node_allocs.go).
	nodes map[string]*nodeDelta
	// aw holds the allocations once the transaction reads or writes one
	// (alloc_tables.go); watches are the store's allocation watches (nil
	// on a snapshot).
	aw      *allocWrite
	watches *allocWatches
	// snapTables is the snapshot's cached allocations row (nil on the
	// live store), which commit updates.
	snapTables *atomic.Pointer[allocTables]
	// newTables is the allocations row commitAllocs wrote, nil if none.
	newTables *allocTables
	// svcRows caches whether the service registrations table has rows
	// (services.go).
	svcRows svcRows
	// jobVersions is the store's number of kept job versions.
	jobVersions int
}

func newWriteTxn(db *memdb.MemDB, watches *allocWatches, snapTables *atomic.Pointer[allocTables], jobVersions int) *writeTxn {
	txn := db.Txn(true)
	// The writer lock is held now, so base is exactly the state txn
	// started from.
	return &writeTxn{txn: txn, base: db.Txn(false), watches: watches, snapTables: snapTables, jobVersions: jobVersions}
}

// primaryIndexers are the ID indexers of every table.
var primaryIndexers = func() map[string]primaryIndexer {
	out := map[string]primaryIndexer{}
	for name, table := range schema().Tables {
		out[name] = table.Indexes[IndexID].Indexer.(primaryIndexer)
	}
	return out
}()

type primaryIndexer interface {
	memdb.Indexer
	memdb.SingleIndexer
}

// first returns the row of table whose primary key is args, or nil.
func (w *writeTxn) first(table string, args ...any) (any, error) {
	obj, err := w.firstUnchecked(table, args...)
	if verifyLookups && err == nil {
		// Race-detector builds (the test suites) check every answer
		// against the transaction itself.
		if want, _ := w.txn.First(table, IndexID, args...); want != obj {
			panic(fmt.Sprintf("state: lookup of %s %v answered %v, transaction holds %v", table, args, obj, want))
		}
	}
	return obj, err
}

func (w *writeTxn) firstUnchecked(table string, args ...any) (any, error) {
	if table == TableAllocs {
		return nil, errAllocRow
	}
	if rows := w.rows[table]; rows != nil {
		key, err := primaryIndexers[table].FromArgs(args...)
		if err != nil {
			return nil, fmt.Errorf("state: %s lookup: %w", table, err)
		}
		if obj, ok := rows[string(key)]; ok {
			return obj, nil // nil: deleted by this transaction
		}
	}
	obj, err := w.base.First(table, IndexID, args...)
	if err != nil {
		return nil, fmt.Errorf("state: %s lookup: %w", table, err)
	}
	return obj, nil
}

// errAllocRow refuses a plain read or write of the allocs table:
// allocations are read with alloc and written with insertAlloc and
// deleteAlloc, which keep the allocation trees and the per-node rows
// (usage, allocation index) exact (alloc_tables.go).
var errAllocRow = fmt.Errorf("state: allocations are read with alloc and written with insertAlloc or deleteAlloc")

// insert inserts or replaces obj in table (any but the allocs table).
func (w *writeTxn) insert(table string, obj any) error {
	if table == TableAllocs {
		return errAllocRow
	}
	return w.put(table, obj)
}

// delete removes obj, which must be stored, from table (any but the
// allocs table).
func (w *writeTxn) delete(table string, obj any) error {
	if table == TableAllocs {
		return errAllocRow
	}
	return w.remove(table, obj)
}

// put inserts or replaces obj in table.
func (w *writeTxn) put(table string, obj any) error {
	if err := w.txn.Insert(table, obj); err != nil {
		return err
	}
	return w.remember(table, obj, obj)
}

// remove deletes obj, which must be stored, from table.
func (w *writeTxn) remove(table string, obj any) error {
	if err := w.txn.Delete(table, obj); err != nil {
		return err
	}
	return w.remember(table, obj, nil)
}

// remember records row (nil: deleted) under the primary key of obj.
func (w *writeTxn) remember(table string, obj, row any) error {
	ok, key, err := primaryIndexers[table].FromObject(obj)
	if err != nil || !ok {
		return fmt.Errorf("state: %s row without a primary key: %v", table, err)
	}
	if w.rows == nil {
		w.rows = make(map[string]map[string]any, len(primaryIndexers))
	}
	rows := w.rows[table]
	if rows == nil {
		rows = map[string]any{}
		w.rows[table] = rows
	}
	rows[string(key)] = row
	return nil
}

// get iterates over the rows of table matching args on index, as the
// transaction sees them.
func (w *writeTxn) get(table, index string, args ...any) (memdb.ResultIterator, error) {
	iter, err := w.txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s by %s: %w", table, index, err)
	}
	return iter, nil
}

// commit writes the per-node allocation rows and the index table, and
// commits.
func (w *writeTxn) commit() error {
	if err := w.flushNodeAllocs(); err != nil {
		return err
	}
	if err := w.commitAllocs(); err != nil {
		return err
	}
	if err := w.t.commitIndex(w.txn); err != nil {
		return err
	}
	if w.snapTables != nil && w.newTables != nil {
		w.snapTables.Store(w.newTables) // the writer lock is still held
	}
	w.txn.Commit()
	if w.aw != nil && w.watches != nil {
		// Only the live store wakes watchers: a snapshot's rows may be
		// the live store's too, whose own commits close their
		// channels.
		for _, row := range w.aw.superseded {
			close(row.changed)
		}
		w.watches.fire(w.aw.changed)
	}
	return nil
}

// lookup returns the row of table whose primary key is args, or a
// not-found error naming kind and id.
func lookup[T any](w *writeTxn, table, kind, id string, args ...any) (*T, error) {
	raw, err := w.first(table, args...)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "%s %q not found", kind, id)
	}
	return raw.(*T), nil
}

// listWrite collects every row of table matching args on index, as the
// transaction sees them.
func listWrite[T any](w *writeTxn, table, index string, args ...any) ([]*T, error) {
	iter, err := w.get(table, index, args...)
	if err != nil {
		return nil, err
	}
	var out []*T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*T))
	}
	return out, nil
}

// indexedTables are the tables whose last write the index table records,
// in the order of touched.last.
var indexedTables = [...]string{TableJobs, TableJobSummary, TableNodes, TableEvals, TableAllocs,
	TableACLPolicies, TableACLTokens, TableACLCluster, TableVariables, TableRootKeys, TableServiceRegs, TableJobVersions, TableScalingEvents, TablePeriodicLaunch, TableSchedulerConfig, TableNodePools, TableDeployments,
	TablePoolAutoscalers, TablePoolInstances, TablePoolAutoscaleStats, TableNodeQuarantine}

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

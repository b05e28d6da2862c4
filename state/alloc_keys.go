package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Allocation keys: the allocs table holds the allocations by ID alone, and
// the alloc_keys table holds one small row per allocation with what reads
// by job order on, {ID, Namespace, JobID}. An allocation's ID and job are
// set when it is created and never change, while the allocation itself is
// rewritten many times: a client status update, a stop or an in-place
// update touches one radix tree (allocs by ID) and leaves the key row as
// it was (the same object). Reads by node start from the node's row in
// node_allocs instead, which lists the node's allocations (node_allocs.go).
//
// The key table's one index, id (unique), is namespace, job ID,
// allocation ID: a Get with the namespace and job ID lists the job's
// allocations by ID.
//
// The rows are kept exact by construction: writeTxn.insertAlloc and
// writeTxn.deleteAlloc are the only writers of allocation rows (insert and
// delete refuse the allocs table), and they write or delete the key row
// with the allocation. Snapshots do not carry the table (it is not in
// Tables); a restore rebuilds it from the allocations it loads.
//
// Reads by job iterate the key rows, reads by node the node's list, and
// both fetch each allocation by ID from the same transaction. Blocking
// reads watch the key prefix or the node's row (an allocation joins or
// leaves the set) and each returned allocation's own row (it changes), up
// to allocWatchRows rows; above that they watch the allocs table's row of
// the index table instead, which fires on every commit that writes any
// allocation: coarse (a blocked query may wake for a write elsewhere and
// find its answer unchanged) but never missing a change. Reads without a
// watch set (the scheduler, the plan applier, the FSM) pay nothing for
// watches.

// allocKey is a row of the alloc_keys table. Rows are immutable.
type allocKey struct {
	ID, Namespace, JobID string
	// jobKey is the row's index key (namespace, job ID, allocation ID,
	// each NUL-terminated), built once by keyOf: the indexer hands it to
	// memdb as it is. It ends with the allocation's key in the allocs
	// table (see lookup).
	jobKey []byte
}

// lookup returns the allocation's key in the allocs table (ID, NUL): a
// read by key passes the row itself to a lookup by ID, which then
// allocates neither the key nor an interface for the argument.
func (k *allocKey) lookup() []byte {
	n := len(k.jobKey)
	return k.jobKey[n-len(k.ID)-1 : n : n]
}

// allocIDIndex is the primary index of the allocs table: a lookup takes
// the allocation ID or its *allocKey.
type allocIDIndex struct {
	fieldIndex[structs.Allocation]
}

func (x allocIDIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) == 1 {
		switch k := args[0].(type) {
		case *allocKey:
			return k.lookup(), nil
		case *nodeAllocRef:
			return k.key, nil
		}
	}
	return x.fieldIndex.FromArgs(args...)
}

// allocWatchRows is how many returned allocations a blocking read by key
// watches one by one; a larger answer watches the allocs table's index
// row (see above). It keeps a query's watch set within one memdb watch
// goroutine and the pooled sets of BlockingQuery.
const allocWatchRows = 32

func keyOf(a *structs.Allocation) *allocKey {
	k := &allocKey{ID: a.ID, Namespace: a.Namespace, JobID: a.JobID}
	buf := make([]byte, 0, len(a.Namespace)+len(a.JobID)+len(a.ID)+3)
	buf = appendTerminated(appendTerminated(appendTerminated(buf, a.Namespace), a.JobID), a.ID)
	k.jobKey = buf
	return k
}

// sameKey reports whether two versions of an allocation have the same key
// row.
func sameKey(a, b *structs.Allocation) bool {
	return a.ID == b.ID && a.Namespace == b.Namespace && a.JobID == b.JobID
}

// ClientAllocIndexes returns the AllocModifyIndex of every allocation on
// the node, by allocation ID, read from the node's row alone: what a
// client's watch (Node.GetClientAllocs) answers. It does not watch; the
// watch waits on the node's node_allocs row.
func (s *StateStore) ClientAllocIndexes(nodeID string) (map[string]uint64, error) {
	_, raw, err := s.db.Txn(false).FirstWatch(TableNodeAllocs, IndexID, nodeID)
	if err != nil {
		return nil, fmt.Errorf("state: node allocation row lookup: %w", err)
	}
	if raw == nil {
		return map[string]uint64{}, nil
	}
	refs := raw.(*nodeAllocs).Allocs
	out := make(map[string]uint64, len(refs))
	for _, r := range refs {
		out[r.ID] = r.AllocModifyIndex
	}
	return out, nil
}

// allocKeyJobIndex is the primary index of alloc_keys: namespace, job ID,
// allocation ID (each NUL-terminated; the row's jobKey). FromArgs takes two arguments
// (namespace, job ID: the job's prefix, which Get scans) or three (one
// row).
type allocKeyJobIndex struct{}

func (allocKeyJobIndex) FromObject(obj any) (bool, []byte, error) {
	k, ok := obj.(*allocKey)
	if !ok {
		return false, nil, fmt.Errorf("state: index expects %T, got %T", k, obj)
	}
	return true, k.jobKey, nil
}

func (allocKeyJobIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fmt.Errorf("state: allocation key index takes two or three arguments, got %d", len(args))
	}
	var b []byte
	for _, arg := range args {
		v, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("state: index arguments must be strings, got %T", arg)
		}
		b = appendTerminated(b, v)
	}
	return b, nil
}

// insertAlloc inserts or replaces allocation a; prev is the row it
// replaces (nil when new), as the transaction holds it.
func (w *writeTxn) insertAlloc(prev, a *structs.Allocation) error {
	if err := w.put(TableAllocs, a); err != nil {
		return fmt.Errorf("state: inserting alloc %q: %w", a.ID, err)
	}
	if err := w.allocKeyChanged(prev, a); err != nil {
		return err
	}
	w.allocChanged(prev, a)
	return nil
}

// deleteAlloc removes allocation a, which must be stored.
func (w *writeTxn) deleteAlloc(a *structs.Allocation) error {
	if err := w.remove(TableAllocs, a); err != nil {
		return fmt.Errorf("state: deleting alloc %q: %w", a.ID, err)
	}
	if err := w.allocKeyChanged(a, nil); err != nil {
		return err
	}
	w.allocChanged(a, nil)
	return nil
}

// allocKeyChanged keeps the key row of allocation prev (nil: none) as it
// becomes next (nil: deleted). A write that keeps the key writes nothing.
// Key rows go straight to the memdb transaction: nothing looks them up by
// primary key through writeTxn.first.
func (w *writeTxn) allocKeyChanged(prev, next *structs.Allocation) error {
	if prev != nil && next != nil && sameKey(prev, next) {
		return nil
	}
	if prev != nil {
		// memdb deletes the stored row found by this one's primary key.
		if err := w.txn.Delete(TableAllocKeys, keyOf(prev)); err != nil {
			return fmt.Errorf("state: deleting key of alloc %q: %w", prev.ID, err)
		}
	}
	if next != nil {
		if err := w.txn.Insert(TableAllocKeys, keyOf(next)); err != nil {
			return fmt.Errorf("state: inserting key of alloc %q: %w", next.ID, err)
		}
	}
	return nil
}

// eachAlloc calls fn with each allocation whose key row matches args on
// index (of alloc_keys), as the transaction holds it, in index order,
// until fn returns false. It reads the key table through the transaction
// (see writeTxn: later key writes in the transaction copy their paths
// again) and each allocation through first (the allocs table's write
// path is left alone).
func (w *writeTxn) eachAlloc(index string, fn func(*structs.Allocation) bool, args ...any) error {
	iter, err := w.get(TableAllocKeys, index, args...)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		k := raw.(*allocKey)
		obj, err := w.first(TableAllocs, k)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("state: key of alloc %q without its row", k.ID)
		}
		if !fn(obj.(*structs.Allocation)) {
			return nil
		}
	}
	return nil
}

// allocsByKeyTxn returns the allocations whose key rows match args on
// index (of alloc_keys) and that keep accepts (nil: all), in index order.
// With a watch set it adds the key prefix's watch and the rows' watches
// (see allocReads.watch).
func allocsByKeyTxn(txn *memdb.Txn, ws memdb.WatchSet, keep func(*structs.Allocation) bool, index string, args ...any) ([]*structs.Allocation, error) {
	iter, err := txn.Get(TableAllocKeys, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s by %s: %w", TableAllocKeys, index, err)
	}
	r := allocReads{keep: keep}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		k := raw.(*allocKey)
		if err := r.read(txn, k, k.ID); err != nil {
			return nil, err
		}
	}
	if err := r.watch(txn, ws, iter.WatchCh()); err != nil {
		return nil, err
	}
	return r.out, nil
}

// allocsByNodeTxn returns the node's allocations, sorted by ID, from its
// node_allocs row. With a watch set it adds the row's watch (it fires when
// an allocation joins or leaves the node) and the allocations' (see
// allocReads.watch).
func allocsByNodeTxn(txn *memdb.Txn, ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	rowCh, raw, err := txn.FirstWatch(TableNodeAllocs, IndexID, nodeID)
	if err != nil {
		return nil, fmt.Errorf("state: node allocation row lookup: %w", err)
	}
	var r allocReads
	if raw != nil {
		for _, ref := range raw.(*nodeAllocs).Allocs {
			if err := r.read(txn, ref, ref.ID); err != nil {
				return nil, err
			}
		}
	}
	if err := r.watch(txn, ws, rowCh); err != nil {
		return nil, err
	}
	return r.out, nil
}

// allocReads gathers the allocations of a read by job or by node, and
// what to watch for them.
type allocReads struct {
	keep  func(*structs.Allocation) bool // nil: all
	out   []*structs.Allocation
	rowCh [allocWatchRows]<-chan struct{}
	n     int // allocations read, kept or not
}

// read looks up one allocation by key (an *allocKey or *nodeAllocRef)
// and keeps it if keep accepts it; a set entry without its allocation is
// an error naming id.
func (r *allocReads) read(txn *memdb.Txn, key any, id string) error {
	ch, obj, err := txn.FirstWatch(TableAllocs, IndexID, key)
	if err != nil {
		return fmt.Errorf("state: allocation lookup: %w", err)
	}
	if obj == nil {
		return fmt.Errorf("state: alloc %q listed without its row", id)
	}
	if r.n < allocWatchRows {
		r.rowCh[r.n] = ch
	}
	r.n++
	if a := obj.(*structs.Allocation); r.keep == nil || r.keep(a) {
		r.out = append(r.out, a)
	}
	return nil
}

// watch adds to ws (if any) setCh, which fires when the set changes, and
// the watches of the allocations read, or the allocs table's index row
// when more than allocWatchRows were read; every allocation read is
// watched, kept or not, since a change may make keep accept it.
func (r *allocReads) watch(txn *memdb.Txn, ws memdb.WatchSet, setCh <-chan struct{}) error {
	if ws == nil {
		return nil
	}
	ws.Add(setCh)
	if r.n <= allocWatchRows {
		for _, ch := range r.rowCh[:r.n] {
			ws.Add(ch)
		}
		return nil
	}
	ch, _, err := txn.FirstWatch(TableIndex, IndexID, TableAllocs)
	if err != nil {
		return fmt.Errorf("state: index lookup: %w", err)
	}
	ws.Add(ch)
	return nil
}

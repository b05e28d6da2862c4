package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Allocation keys: the allocs table holds the allocations by ID alone, and
// the alloc_keys table holds one small row per allocation with what the
// reads by job and by node order on, {ID, Namespace, JobID, NodeID}, and
// the allocation's AllocModifyIndex. An allocation's ID, job and node are
// set when it is created and almost never change, and AllocModifyIndex
// changes only when the servers change the allocation (a stop, an
// in-place update, a desired transition), while the allocation itself is
// rewritten many times more: every client status update touches one radix
// tree (allocs by ID) instead of three, and leaves the key row as it was
// (the same object). A client's watch answers from the node's key rows
// alone (ClientAllocIndexes), without fetching an allocation.
//
// The key table has two indexes:
//
//   - id (unique): namespace, job ID, allocation ID. A Get with the
//     namespace and job ID lists the job's allocations by ID, the order
//     the allocs table's job index gave before;
//   - node (unique, allocations without a node are not in it): node ID,
//     allocation ID. A Get with the node ID lists the node's allocations
//     by ID.
//
// The rows are kept exact by construction: writeTxn.insertAlloc and
// writeTxn.deleteAlloc are the only writers of allocation rows (insert and
// delete refuse the allocs table), and they write, move or delete the key
// row with the allocation. Snapshots do not carry the table (it is not in
// Tables); a restore rebuilds it from the allocations it loads.
//
// Reads by key iterate the key rows and fetch each allocation by ID from
// the same transaction. Blocking reads watch the key prefix (an allocation
// joins or leaves the set) and each returned allocation's own row (it
// changes), up to allocWatchRows rows; above that they watch the allocs
// table's row of the index table instead, which fires on every commit
// that writes any allocation: coarse (a blocked query may wake for a
// write elsewhere and find its answer unchanged) but never missing a
// change. Reads without a watch set (the scheduler, the plan applier, the
// FSM) pay nothing for watches.

// allocKey is a row of the alloc_keys table. Rows are immutable.
type allocKey struct {
	ID, Namespace, JobID, NodeID string
	// AllocModifyIndex is the allocation's: the last server-side change
	// to it (client updates keep it), so that a client's watch answers
	// from the node's key rows alone (ClientAllocIndexes).
	AllocModifyIndex uint64
	// jobKey and nodeKey are the row's index keys (namespace, job ID,
	// allocation ID; node ID, allocation ID; each NUL-terminated; nodeKey
	// is nil without a node), built once, in one buffer, by keyOf: the
	// indexers hand them to memdb as they are. jobKey ends with the
	// allocation's key in the allocs table (see lookup).
	jobKey, nodeKey []byte
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
		if k, ok := args[0].(*allocKey); ok {
			return k.lookup(), nil
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
	k := &allocKey{ID: a.ID, Namespace: a.Namespace, JobID: a.JobID, NodeID: a.NodeID, AllocModifyIndex: a.AllocModifyIndex}
	size := len(a.Namespace) + len(a.JobID) + len(a.ID) + 3
	if a.NodeID != "" {
		size += len(a.NodeID) + len(a.ID) + 2
	}
	buf := make([]byte, 0, size)
	buf = appendTerminated(appendTerminated(appendTerminated(buf, a.Namespace), a.JobID), a.ID)
	k.jobKey = buf[:len(buf):len(buf)]
	if a.NodeID != "" {
		buf = appendTerminated(appendTerminated(buf, a.NodeID), a.ID)
		k.nodeKey = buf[len(k.jobKey):len(buf):len(buf)]
	}
	return k
}

// sameKey reports whether two versions of an allocation have the same key
// row.
func sameKey(a, b *structs.Allocation) bool {
	return a.ID == b.ID && a.Namespace == b.Namespace && a.JobID == b.JobID && a.NodeID == b.NodeID &&
		a.AllocModifyIndex == b.AllocModifyIndex
}

// ClientAllocIndexes returns the AllocModifyIndex of every allocation on
// the node, by allocation ID, read from the node's key rows alone: what a
// client's watch (Node.GetClientAllocs) answers. It does not watch; the
// watch waits on the node's node_allocs row.
func (s *StateStore) ClientAllocIndexes(nodeID string) (map[string]uint64, error) {
	iter, err := s.db.Txn(false).Get(TableAllocKeys, IndexNode, nodeID)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s by %s: %w", TableAllocKeys, IndexNode, err)
	}
	var keys []*allocKey
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		keys = append(keys, raw.(*allocKey))
	}
	out := make(map[string]uint64, len(keys))
	for _, k := range keys {
		out[k.ID] = k.AllocModifyIndex
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

// allocKeyNodeIndex indexes alloc_keys by node ID, allocation ID (the
// row's nodeKey). FromArgs
// takes the node ID (the node's prefix, which Get scans).
type allocKeyNodeIndex struct{}

func (allocKeyNodeIndex) FromObject(obj any) (bool, []byte, error) {
	k, ok := obj.(*allocKey)
	if !ok {
		return false, nil, fmt.Errorf("state: index expects %T, got %T", k, obj)
	}
	return k.nodeKey != nil, k.nodeKey, nil
}

func (allocKeyNodeIndex) FromArgs(args ...any) ([]byte, error) { return oneKeyArg(args) }

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
// With a watch set it adds the key prefix's watch and the rows' watches,
// or the allocs table's index row when more than allocWatchRows
// allocations were read (see above); every allocation read is watched,
// kept or not, since a change may make keep accept it.
func allocsByKeyTxn(txn *memdb.Txn, ws memdb.WatchSet, keep func(*structs.Allocation) bool, index string, args ...any) ([]*structs.Allocation, error) {
	iter, err := txn.Get(TableAllocKeys, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s by %s: %w", TableAllocKeys, index, err)
	}
	var (
		out   []*structs.Allocation
		rowCh [allocWatchRows]<-chan struct{}
		read  int
	)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		k := raw.(*allocKey)
		ch, obj, err := txn.FirstWatch(TableAllocs, IndexID, k)
		if err != nil {
			return nil, fmt.Errorf("state: allocation lookup: %w", err)
		}
		if obj == nil {
			return nil, fmt.Errorf("state: key of alloc %q without its row", k.ID)
		}
		if read < allocWatchRows {
			rowCh[read] = ch
		}
		read++
		if a := obj.(*structs.Allocation); keep == nil || keep(a) {
			out = append(out, a)
		}
	}
	if ws != nil {
		ws.Add(iter.WatchCh())
		if read <= allocWatchRows {
			for _, ch := range rowCh[:read] {
				ws.Add(ch)
			}
		} else {
			ch, _, err := txn.FirstWatch(TableIndex, IndexID, TableAllocs)
			if err != nil {
				return nil, fmt.Errorf("state: index lookup: %w", err)
			}
			ws.Add(ch)
		}
	}
	return out, nil
}

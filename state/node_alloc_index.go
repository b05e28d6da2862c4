package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Node allocation index: the node_alloc_index table holds, per node, the
// highest AllocModifyIndex among the node's allocations: the index of the
// last change the servers made to them (a placement, a stop or eviction,
// an in-place update, a desired transition, a lost or unknown mark).
// Client status updates keep AllocModifyIndex and so never touch it. A
// client's watch (Node.GetClientAllocs) blocks on this one row instead of
// on every write to the node's allocations.
//
// The row is exactly max(AllocModifyIndex) over the allocations stored on
// the node, whatever wrote them: writeTxn.insertAlloc and deleteAlloc (the
// only writers of allocation rows) record what enters and leaves each
// node's maximum, and the transaction writes each changed row once when it
// commits. When an allocation holding the maximum leaves the node
// (collected, or moved to another node) the row is recomputed from the
// node's allocations, and may go down.
//
// Every registered node has a row (index 0 while it has no allocations),
// written when the node is first registered: a watch on a missing row
// would be a watch on part of the table's tree, which every write to a
// neighbouring row fires. The row of a deleted node lasts as long as the
// node has allocations (of index above 0). Rows are thus kept for the
// registered nodes and the nodes with allocations, and no others.
//
// Like node_usage it is derived data: snapshots do not carry it (it is not
// in Tables) and a restore rebuilds it from the nodes and allocations it
// loads, to the same rows.

// nodeAllocIndex is a row of the node_alloc_index table.
type nodeAllocIndex struct {
	NodeID string
	Index  uint64 // highest AllocModifyIndex of the node's allocations
}

// allocIndexDelta is what one transaction's allocation writes did to one
// node's maximum.
type allocIndexDelta struct {
	entered uint64 // highest AllocModifyIndex written onto the node
	// left is the highest AllocModifyIndex that left the node: a deleted
	// or moved allocation, or one rewritten with a lower index. If it
	// reaches the stored maximum, the row is recomputed.
	left uint64
}

// allocIndexChanged records what allocation prev (nil: none) becoming next
// (nil: deleted) does to the maximum of the nodes involved. A write that
// keeps the node and the AllocModifyIndex (a client update) records
// nothing.
func (w *writeTxn) allocIndexChanged(prev, next *structs.Allocation) {
	samePlace := prev != nil && next != nil && prev.NodeID == next.NodeID
	if samePlace && prev.AllocModifyIndex == next.AllocModifyIndex {
		return
	}
	if next != nil && next.NodeID != "" {
		d := w.allocIndexOf(next.NodeID)
		d.entered = max(d.entered, next.AllocModifyIndex)
	}
	if prev != nil && prev.NodeID != "" && (!samePlace || next.AllocModifyIndex < prev.AllocModifyIndex) {
		d := w.allocIndexOf(prev.NodeID)
		d.left = max(d.left, prev.AllocModifyIndex)
	}
}

func (w *writeTxn) allocIndexOf(nodeID string) *allocIndexDelta {
	if w.allocIndex == nil {
		w.allocIndex = map[string]*allocIndexDelta{}
	}
	d := w.allocIndex[nodeID]
	if d == nil {
		d = &allocIndexDelta{}
		w.allocIndex[nodeID] = d
	}
	return d
}

// flushAllocIndex writes the new maximum of every node the transaction's
// allocation writes moved: the stored row raised to what entered, or, when
// an allocation that may have held the maximum left, the maximum over the
// node's allocations as the transaction holds them. A row that does not
// change is not written (its watchers do not wake).
func (w *writeTxn) flushAllocIndex() error {
	for nodeID, d := range w.allocIndex {
		raw, err := w.first(TableNodeAllocIndex, nodeID)
		if err != nil {
			return err
		}
		var stored uint64
		if raw != nil {
			stored = raw.(*nodeAllocIndex).Index
		}
		next := max(stored, d.entered)
		if d.left > 0 && d.left >= stored {
			if next, err = w.maxAllocModifyIndex(nodeID); err != nil {
				return err
			}
		}
		keep := next > 0
		if !keep {
			node, err := w.first(TableNodes, nodeID)
			if err != nil {
				return err
			}
			keep = node != nil
		}
		switch {
		case !keep:
			if raw != nil {
				if err := w.remove(TableNodeAllocIndex, raw); err != nil {
					return fmt.Errorf("state: deleting allocation index of node %q: %w", nodeID, err)
				}
			}
		case raw == nil || next != stored:
			if err := w.put(TableNodeAllocIndex, &nodeAllocIndex{NodeID: nodeID, Index: next}); err != nil {
				return fmt.Errorf("state: inserting allocation index of node %q: %w", nodeID, err)
			}
		}
	}
	w.allocIndex = nil
	return nil
}

// allocIndexNodeAdded gives a newly registered node its row (index 0),
// unless allocations on it already gave it one.
func (w *writeTxn) allocIndexNodeAdded(nodeID string) error {
	raw, err := w.first(TableNodeAllocIndex, nodeID)
	if err != nil || raw != nil {
		return err
	}
	if err := w.put(TableNodeAllocIndex, &nodeAllocIndex{NodeID: nodeID}); err != nil {
		return fmt.Errorf("state: inserting allocation index of node %q: %w", nodeID, err)
	}
	return nil
}

// allocIndexNodeDeleted removes a deleted node's row unless the node has
// allocations. (Allocation writes earlier in the transaction may not be
// in the row yet: flushAllocIndex decides again for those nodes.)
func (w *writeTxn) allocIndexNodeDeleted(nodeID string) error {
	raw, err := w.first(TableNodeAllocIndex, nodeID)
	if err != nil || raw == nil || raw.(*nodeAllocIndex).Index > 0 {
		return err
	}
	if err := w.remove(TableNodeAllocIndex, raw); err != nil {
		return fmt.Errorf("state: deleting allocation index of node %q: %w", nodeID, err)
	}
	return nil
}

// maxAllocModifyIndex scans the node's allocations as the transaction
// holds them. It reads the allocs table's node index, so it must only run
// once the transaction writes no more allocations (see writeTxn).
func (w *writeTxn) maxAllocModifyIndex(nodeID string) (uint64, error) {
	iter, err := w.get(TableAllocs, IndexNode, nodeID)
	if err != nil {
		return 0, err
	}
	var high uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		high = max(high, raw.(*structs.Allocation).AllocModifyIndex)
	}
	return high, nil
}

// NodeAllocIndex returns the highest AllocModifyIndex of the node's
// allocations: the index of the last change the servers made to them (0
// when it has none, or is unknown). For a registered node (or one with
// allocations) it adds to ws only the watch of that one value, which
// client status updates never fire; a collection that removes the
// allocation holding the maximum fires it and lowers it.
func (s *StateStore) NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableNodeAllocIndex, IndexID, nodeID)
	if err != nil {
		return 0, fmt.Errorf("state: node allocation index lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return 0, nil
	}
	return raw.(*nodeAllocIndex).Index, nil
}

// allocIndexRestore accumulates the rows while a restore loads nodes and
// allocations (in either order).
type allocIndexRestore map[string]uint64

// addNode gives a node a row.
func (r allocIndexRestore) addNode(n *structs.Node) {
	if _, ok := r[n.ID]; !ok {
		r[n.ID] = 0
	}
}

// add raises the row of the allocation's node to its AllocModifyIndex.
func (r allocIndexRestore) add(a *structs.Allocation) {
	if a.NodeID != "" && a.AllocModifyIndex > 0 {
		r[a.NodeID] = max(r[a.NodeID], a.AllocModifyIndex)
	}
}

// insert writes the rows.
func (r allocIndexRestore) insert(txn *memdb.Txn) error {
	for id, index := range r {
		if err := txn.Insert(TableNodeAllocIndex, &nodeAllocIndex{NodeID: id, Index: index}); err != nil {
			return fmt.Errorf("state: restoring allocation index of node %q: %w", id, err)
		}
	}
	return nil
}

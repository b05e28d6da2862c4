package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Per-node allocation rows: the node_allocs table holds one row per node
// with two values derived from the node's allocations:
//
//   - its usage (NodeUsage): the summed resources and the number of its
//     live (non-terminal) allocations, so that the scheduler and the plan
//     applier read a node's usage in O(1) instead of summing its
//     allocations;
//   - its allocation index (NodeAllocIndex): the highest AllocModifyIndex
//     among its allocations, the index of the last change the servers
//     made to them (a placement, a stop or eviction, an in-place update, a
//     desired transition, a lost or unknown mark). A client's watch
//     (Node.GetClientAllocs) blocks on this one row instead of on every
//     write to the node's allocations.
//
// Both are kept exact by construction: allocation rows are written only
// through writeTxn.insertAlloc and writeTxn.deleteAlloc (insert and delete
// refuse the allocs table), which record what each write takes from and
// adds to its node; the transaction folds those changes into the row once
// per node when it commits: one lookup and at most one insert per node,
// none for a node whose row does not change. When an allocation holding
// the maximum AllocModifyIndex leaves the node (collected, or moved to
// another node) the index is recomputed from the node's allocations, and
// may go down.
//
// A row is rewritten, and its watchers woken, when either value changes.
// Client status updates keep AllocModifyIndex, so the common one (running,
// same resources) writes nothing; one that makes an allocation terminal
// changes the usage and so wakes the node's client watch, which finds the
// allocation index where it was and waits again.
//
// Lifetime: a node has a row while it is registered (with zero values
// while it has no allocations; a watch on a missing row would be a watch
// on part of the table's tree, which every write to a neighbouring row
// fires), and after it is deleted for as long as it holds an allocation
// with an AllocModifyIndex above 0 or a live allocation (every write
// stamps AllocModifyIndex with its Raft index, so: as long as it holds
// allocations). This is the union of what the two separate tables this
// one replaced kept.
//
// The table is derived data: snapshots do not carry it (it is not in
// Tables) and a restore rebuilds it from the nodes and allocations it
// loads, to the same rows (the usage's ModifyIndex aside: see
// nodeAllocsRestore).

// nodeAllocs is a row of the node_allocs table.
type nodeAllocs struct {
	// Usage is the node's usage; NodeID is the row's key. It is zero
	// (ModifyIndex 0) while the node has no live allocations.
	Usage structs.NodeUsage
	// AllocIndex is the highest AllocModifyIndex of the node's
	// allocations (0 when it has none).
	AllocIndex uint64
}

// nodeDelta is what one transaction's allocation writes change in one
// node's row.
type nodeDelta struct {
	used   structs.ComparableResources
	allocs int
	// usageIndex is the index of the last write that changed the usage.
	usageIndex uint64
	entered    uint64 // highest AllocModifyIndex written onto the node
	// left is the highest AllocModifyIndex that left the node: a deleted
	// or moved allocation, or one rewritten with a lower index. If it
	// reaches the stored maximum, the index is recomputed.
	left uint64
}

// liveOnNode reports whether a counts towards a node's usage.
func liveOnNode(a *structs.Allocation) bool {
	return a != nil && a.NodeID != "" && !a.TerminalStatus()
}

// allocChanged records that allocation prev (nil: none) became next (nil:
// deleted) in the write in progress. A write that keeps the node, the
// AllocModifyIndex and the usage (the common client update) records
// nothing.
func (w *writeTxn) allocChanged(prev, next *structs.Allocation) {
	if prev != nil && next != nil && prev.NodeID == next.NodeID {
		if prev.NodeID != "" {
			w.allocUpdated(prev, next)
		}
		return
	}
	if prev != nil && prev.NodeID != "" {
		d := w.deltaOf(prev.NodeID)
		d.left = max(d.left, prev.AllocModifyIndex)
		if liveOnNode(prev) {
			d.used.Subtract(prev.AllocatedResources.Comparable())
			d.allocs--
			d.usageIndex = w.t.index
		}
	}
	if next != nil && next.NodeID != "" {
		d := w.deltaOf(next.NodeID)
		d.entered = max(d.entered, next.AllocModifyIndex)
		if liveOnNode(next) {
			d.used.Add(next.AllocatedResources.Comparable())
			d.allocs++
			d.usageIndex = w.t.index
		}
	}
}

// allocUpdated records an allocation rewritten on the same node.
func (w *writeTxn) allocUpdated(prev, next *structs.Allocation) {
	var d *nodeDelta
	if prev.AllocModifyIndex != next.AllocModifyIndex {
		d = w.deltaOf(next.NodeID)
		d.entered = max(d.entered, next.AllocModifyIndex)
		if next.AllocModifyIndex < prev.AllocModifyIndex {
			d.left = max(d.left, prev.AllocModifyIndex)
		}
	}
	wasLive, isLive := !prev.TerminalStatus(), !next.TerminalStatus()
	if !wasLive && !isLive {
		return
	}
	var before, after structs.ComparableResources
	if wasLive {
		before = prev.AllocatedResources.Comparable()
	}
	if isLive {
		after = next.AllocatedResources.Comparable()
	}
	if wasLive && isLive && before == after {
		return // still running, same size
	}
	if d == nil {
		d = w.deltaOf(next.NodeID)
	}
	d.used.Subtract(before)
	d.used.Add(after)
	switch {
	case wasLive && !isLive:
		d.allocs--
	case !wasLive && isLive:
		d.allocs++
	}
	d.usageIndex = w.t.index
}

// deltaOf returns the transaction's delta for nodeID.
func (w *writeTxn) deltaOf(nodeID string) *nodeDelta {
	if w.nodes == nil {
		w.nodes = map[string]*nodeDelta{}
	}
	d := w.nodes[nodeID]
	if d == nil {
		d = &nodeDelta{}
		w.nodes[nodeID] = d
	}
	return d
}

// flushNodeAllocs folds the transaction's deltas into the node_allocs
// table: for each node whose usage or allocation index moved, one lookup
// and one new row (or a deletion, for a deleted node left without
// allocations). A row that does not change is not written (its watchers
// do not wake).
func (w *writeTxn) flushNodeAllocs() error {
	for nodeID, d := range w.nodes {
		usageMoved := d.allocs != 0 || d.used != (structs.ComparableResources{})
		if !usageMoved && d.entered == 0 && d.left == 0 {
			continue
		}
		raw, err := w.first(TableNodeAllocs, nodeID)
		if err != nil {
			return err
		}
		next := nodeAllocs{Usage: structs.NodeUsage{NodeID: nodeID}}
		var prev *nodeAllocs
		if raw != nil {
			prev = raw.(*nodeAllocs)
			next = *prev
		}
		if usageMoved {
			u := &next.Usage
			u.Used.Add(d.used)
			u.Allocs += d.allocs
			u.ModifyIndex = d.usageIndex
			switch {
			case u.Allocs < 0 || u.Allocs == 0 && u.Used != (structs.ComparableResources{}):
				return fmt.Errorf("state: usage of node %q would be %+v over %d allocations", nodeID, u.Used, u.Allocs)
			case u.Allocs == 0:
				*u = structs.NodeUsage{NodeID: nodeID}
			}
		}
		stored := next.AllocIndex
		next.AllocIndex = max(stored, d.entered)
		if d.left > 0 && d.left >= stored {
			if next.AllocIndex, err = w.maxAllocModifyIndex(nodeID); err != nil {
				return err
			}
		}
		keep := next.AllocIndex > 0 || next.Usage.Allocs > 0
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
				if err := w.remove(TableNodeAllocs, raw); err != nil {
					return fmt.Errorf("state: deleting allocation row of node %q: %w", nodeID, err)
				}
			}
		case prev == nil || next != *prev:
			row := next
			if err := w.put(TableNodeAllocs, &row); err != nil {
				return fmt.Errorf("state: inserting allocation row of node %q: %w", nodeID, err)
			}
		}
	}
	w.nodes = nil
	return nil
}

// nodeAllocsNodeAdded gives a newly registered node its row (zero values),
// unless allocations on it already gave it one.
func (w *writeTxn) nodeAllocsNodeAdded(nodeID string) error {
	raw, err := w.first(TableNodeAllocs, nodeID)
	if err != nil || raw != nil {
		return err
	}
	row := &nodeAllocs{Usage: structs.NodeUsage{NodeID: nodeID}}
	if err := w.put(TableNodeAllocs, row); err != nil {
		return fmt.Errorf("state: inserting allocation row of node %q: %w", nodeID, err)
	}
	return nil
}

// nodeAllocsNodeDeleted removes a deleted node's row unless the node holds
// allocations. (Allocation writes earlier in the transaction may not be
// in the row yet: flushNodeAllocs decides again for those nodes.)
func (w *writeTxn) nodeAllocsNodeDeleted(nodeID string) error {
	raw, err := w.first(TableNodeAllocs, nodeID)
	if err != nil || raw == nil {
		return err
	}
	if row := raw.(*nodeAllocs); row.AllocIndex > 0 || row.Usage.Allocs > 0 {
		return nil
	}
	if err := w.remove(TableNodeAllocs, raw); err != nil {
		return fmt.Errorf("state: deleting allocation row of node %q: %w", nodeID, err)
	}
	return nil
}

// maxAllocModifyIndex scans the node's allocations as the transaction
// holds them. It reads the key table's node index, so it should only run
// once the transaction writes no more allocations (see writeTxn).
func (w *writeTxn) maxAllocModifyIndex(nodeID string) (uint64, error) {
	var high uint64
	err := w.eachAlloc(IndexNode, func(a *structs.Allocation) bool {
		high = max(high, a.AllocModifyIndex)
		return true
	}, nodeID)
	return high, err
}

// nodeAllocsRow returns the node's row, or nil, and adds its watch to ws.
func (s *StateStore) nodeAllocsRow(ws memdb.WatchSet, nodeID string) (*nodeAllocs, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableNodeAllocs, IndexID, nodeID)
	if err != nil {
		return nil, fmt.Errorf("state: node allocation row lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*nodeAllocs), nil
}

// NodeUsage returns what the node's live allocations use. A node without
// live allocations (or unknown to the store) has zero usage; that is not
// an error. It adds to ws the watch of the node's row, which fires when
// its usage or its allocation index changes.
func (s *StateStore) NodeUsage(ws memdb.WatchSet, nodeID string) (structs.NodeUsage, error) {
	row, err := s.nodeAllocsRow(ws, nodeID)
	if err != nil || row == nil {
		return structs.NodeUsage{NodeID: nodeID}, err
	}
	return row.Usage, nil
}

// NodeAllocIndex returns the highest AllocModifyIndex of the node's
// allocations: the index of the last change the servers made to them (0
// when it has none, or is unknown). For a registered node (or one with
// allocations) it adds to ws only the watch of the node's row, which
// fires when that index changes (a collection that removes the allocation
// holding the maximum fires it and lowers it) and when the node's usage
// changes (a client update making an allocation terminal), but not for a
// client update that changes neither (the common "running").
func (s *StateStore) NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	row, err := s.nodeAllocsRow(ws, nodeID)
	if err != nil || row == nil {
		return 0, err
	}
	return row.AllocIndex, nil
}

// nodeAllocsRestore accumulates the rows while a restore loads nodes and
// allocations (in either order).
type nodeAllocsRestore map[string]*restoredNodeAllocs

type restoredNodeAllocs struct {
	row        nodeAllocs
	registered bool
}

func (r nodeAllocsRestore) of(nodeID string) *restoredNodeAllocs {
	e := r[nodeID]
	if e == nil {
		e = &restoredNodeAllocs{row: nodeAllocs{Usage: structs.NodeUsage{NodeID: nodeID}}}
		r[nodeID] = e
	}
	return e
}

// addNode records a registered node: it has a row.
func (r nodeAllocsRestore) addNode(n *structs.Node) { r.of(n.ID).registered = true }

// add counts a restored allocation. After a restore the usage's
// ModifyIndex is the highest ModifyIndex of the node's allocations,
// terminal ones included: the index of the last change is not in the
// snapshot.
func (r nodeAllocsRestore) add(a *structs.Allocation) {
	if a.NodeID == "" {
		return
	}
	row := &r.of(a.NodeID).row
	row.AllocIndex = max(row.AllocIndex, a.AllocModifyIndex)
	row.Usage.ModifyIndex = max(row.Usage.ModifyIndex, a.ModifyIndex)
	if !a.TerminalStatus() {
		row.Usage.Used.Add(a.AllocatedResources.Comparable())
		row.Usage.Allocs++
	}
}

// insert writes the rows of the registered nodes and of the nodes holding
// allocations (see the lifetime rule above).
func (r nodeAllocsRestore) insert(txn *memdb.Txn) error {
	for id, e := range r {
		if e.row.Usage.Allocs == 0 {
			e.row.Usage = structs.NodeUsage{NodeID: id}
		}
		if !e.registered && e.row.AllocIndex == 0 && e.row.Usage.Allocs == 0 {
			continue
		}
		if err := txn.Insert(TableNodeAllocs, &e.row); err != nil {
			return fmt.Errorf("state: restoring allocation row of node %q: %w", id, err)
		}
	}
	return nil
}

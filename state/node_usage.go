package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Node usage: the node_usage table holds, per node, the summed resources
// and the number of its live (non-terminal) allocations, so that the
// scheduler and the plan applier read a node's usage in O(1) instead of
// summing its allocations.
//
// It is kept exact by construction: allocation rows are written only
// through writeTxn.insertAlloc and writeTxn.deleteAlloc (insert and delete
// refuse the allocs table), which record what each write takes from and
// adds to its node; the transaction folds those changes into the table
// once per node when it commits. The table is derived data: snapshots do
// not carry it (it is not in Tables) and a restore rebuilds it from the
// allocations it loads.

// usageDelta is what one transaction changes in one node's usage.
type usageDelta struct {
	used   structs.ComparableResources
	allocs int
	index  uint64 // of the last write that changed it
}

// liveOnNode reports whether a counts towards a node's usage.
func liveOnNode(a *structs.Allocation) bool {
	return a != nil && a.NodeID != "" && !a.TerminalStatus()
}

// insertAlloc inserts or replaces allocation a; prev is the row it
// replaces (nil when new), as the transaction holds it.
func (w *writeTxn) insertAlloc(prev, a *structs.Allocation) error {
	if err := w.put(TableAllocs, a); err != nil {
		return fmt.Errorf("state: inserting alloc %q: %w", a.ID, err)
	}
	w.allocChanged(prev, a)
	return nil
}

// deleteAlloc removes allocation a, which must be stored.
func (w *writeTxn) deleteAlloc(a *structs.Allocation) error {
	if err := w.remove(TableAllocs, a); err != nil {
		return fmt.Errorf("state: deleting alloc %q: %w", a.ID, err)
	}
	w.allocChanged(a, nil)
	return nil
}

// allocChanged records that allocation prev (nil: none) became next (nil:
// deleted) in the write in progress.
func (w *writeTxn) allocChanged(prev, next *structs.Allocation) {
	w.allocIndexChanged(prev, next)
	wasLive, isLive := liveOnNode(prev), liveOnNode(next)
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
	if wasLive && isLive && prev.NodeID == next.NodeID {
		if before == after {
			return // the common client update: still running, same size
		}
		d := w.usageOf(next.NodeID)
		d.used.Subtract(before)
		d.used.Add(after)
		return
	}
	if wasLive {
		d := w.usageOf(prev.NodeID)
		d.used.Subtract(before)
		d.allocs--
	}
	if isLive {
		d := w.usageOf(next.NodeID)
		d.used.Add(after)
		d.allocs++
	}
}

// usageOf returns the transaction's delta for nodeID, stamped with the
// index of the write in progress.
func (w *writeTxn) usageOf(nodeID string) *usageDelta {
	if w.usage == nil {
		w.usage = map[string]*usageDelta{}
	}
	d := w.usage[nodeID]
	if d == nil {
		d = &usageDelta{}
		w.usage[nodeID] = d
	}
	d.index = w.t.index
	return d
}

// flushUsage folds the transaction's deltas into the node_usage table: one
// new row per changed node, none for a node with no live allocations left.
func (w *writeTxn) flushUsage() error {
	for nodeID, d := range w.usage {
		if d.allocs == 0 && d.used == (structs.ComparableResources{}) {
			continue
		}
		raw, err := w.first(TableNodeUsage, nodeID)
		if err != nil {
			return err
		}
		next := &structs.NodeUsage{NodeID: nodeID}
		if raw != nil {
			*next = *raw.(*structs.NodeUsage)
		}
		next.Used.Add(d.used)
		next.Allocs += d.allocs
		next.ModifyIndex = d.index
		switch {
		case next.Allocs < 0 || next.Allocs == 0 && next.Used != (structs.ComparableResources{}):
			return fmt.Errorf("state: usage of node %q would be %+v over %d allocations", nodeID, next.Used, next.Allocs)
		case next.Allocs == 0:
			if raw != nil {
				if err := w.remove(TableNodeUsage, raw); err != nil {
					return fmt.Errorf("state: deleting usage of node %q: %w", nodeID, err)
				}
			}
		default:
			if err := w.put(TableNodeUsage, next); err != nil {
				return fmt.Errorf("state: inserting usage of node %q: %w", nodeID, err)
			}
		}
	}
	w.usage = nil
	return nil
}

// NodeUsage returns what the node's live allocations use. A node without
// live allocations (or unknown to the store) has zero usage; that is not
// an error.
func (s *StateStore) NodeUsage(ws memdb.WatchSet, nodeID string) (structs.NodeUsage, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableNodeUsage, IndexID, nodeID)
	if err != nil {
		return structs.NodeUsage{}, fmt.Errorf("state: node usage lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return structs.NodeUsage{NodeID: nodeID}, nil
	}
	return *raw.(*structs.NodeUsage), nil
}

// usageRestore accumulates node usage while a restore loads allocations.
type usageRestore map[string]*structs.NodeUsage

// add counts a restored allocation. After a restore a row's ModifyIndex is
// the highest ModifyIndex of the node's allocations, terminal ones
// included: the index of the last change is not in the snapshot.
func (u usageRestore) add(a *structs.Allocation) {
	if a.NodeID == "" {
		return
	}
	row := u[a.NodeID]
	if row == nil {
		row = &structs.NodeUsage{NodeID: a.NodeID}
		u[a.NodeID] = row
	}
	row.ModifyIndex = max(row.ModifyIndex, a.ModifyIndex)
	if !a.TerminalStatus() {
		row.Used.Add(a.AllocatedResources.Comparable())
		row.Allocs++
	}
}

// insert writes a row for every node with live allocations.
func (u usageRestore) insert(txn *memdb.Txn) error {
	for id, row := range u {
		if row.Allocs == 0 {
			continue
		}
		if err := txn.Insert(TableNodeUsage, row); err != nil {
			return fmt.Errorf("state: restoring usage of node %q: %w", id, err)
		}
	}
	return nil
}

package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Reads of the client's hot path. Thousands of clients each hold a
// blocking Node.GetClientAllocs, which re-runs on every change to its node
// or the node's allocation row, and carries what changed or leaves it
// to Alloc.GetAllocs. The reads here serve those two: each pass reads
// the node's allocation row, which also holds the node, in one lookup.

// NodeKey is a node ID and what the reads a client's watch repeats
// (ClientNode, ClientAllocIndexesOf) carry from one to the next. The
// zero value is ready for Reset. It is not safe for concurrent use; Reset
// makes it another node's.
type NodeKey struct {
	id string
	// row is the node's allocation row as the last ClientNode read it,
	// on store readOf, until Release (nil: the node has none).
	row    *nodeAllocs
	read   bool
	readOf *StateStore
	// missingAt is the latest index of the state in which the last
	// ClientNode found the node missing (0 otherwise).
	missingAt uint64
}

// Reset makes k the key of nodeID.
func (k *NodeKey) Reset(nodeID string) { k.id = nodeID }

// Release drops what k holds of the store (the last ClientNode's
// transaction pins that state's tree): call it before pooling k.
func (k *NodeKey) Release() {
	k.row, k.read, k.readOf, k.missingAt = nil, false, nil, 0
}

// MissingAt returns the latest index of the state in which the last
// ClientNode of k found the node missing, or 0 if it found it. A node
// created at or below that index was deleted; one created above it may
// simply not have reached this server yet. (LatestIndex read after the
// lookup may describe a later state than the one the lookup saw.)
func (k *NodeKey) MissingAt() uint64 { return k.missingAt }

// ID returns the node ID k was reset to.
func (k *NodeKey) ID() string { return k.id }

// ClientNode returns the node k names and its allocation index (see
// NodeAllocIndex), the values NodeByID and NodeAllocIndex return, read in
// one lookup of the node's allocation row, which holds the node; it adds
// to ws that row's watch, which fires when the node or its allocation
// index changes. A missing node is a not-found error, as from NodeByID;
// the watch added then fires when the node appears. k keeps the node's
// row, for ClientAllocIndexesOf (until Release).
func (s *StateStore) ClientNode(ws memdb.WatchSet, k *NodeKey) (*structs.Node, uint64, error) {
	txn := s.db.Txn(false)
	k.row, k.read, k.readOf, k.missingAt = nil, false, s, 0
	row, watchCh, err := nodeRowOf(txn, k.id)
	if err != nil {
		return nil, 0, err
	}
	ws.Add(watchCh)
	if row == nil || row.Node == nil {
		latest, err := latestIndexTxn(txn)
		if err != nil {
			return nil, 0, err
		}
		k.missingAt = max(latest, 1)
		return nil, 0, structs.NewError(structs.ErrCodeNotFound, "node %q not found", k.id)
	}
	k.row, k.read = row, true
	return row.Node, row.AllocIndex, nil
}

// ClientAllocIndexesOf is ClientAllocIndexes for the node k names, which
// also returns the highest AllocModifyIndex it lists (0 for none). With
// latest it reads the store as it is now; without, it answers from the
// node's row as the last ClientNode of k on s read it (no lookup), or
// reads the store as it is now if there was none. It does not watch. k
// keeps the row it answered from, for ClientAllocsChanged.
func (s *StateStore) ClientAllocIndexesOf(k *NodeKey, latest bool) (structs.AllocIndexes, uint64, error) {
	row := k.row
	if latest || !k.read || k.readOf != s {
		var err error
		if row, _, err = nodeRowOf(s.db.Txn(false), k.id); err != nil {
			return nil, 0, err
		}
		k.row, k.read, k.readOf = row, true, s
	}
	if row == nil || row.Allocs == nil {
		return structs.AllocIndexes{}, 0, nil
	}
	return row.Allocs, row.AllocIndex, nil
}

// ClientAllocsChanged appends to out up to limit of the allocations the
// last ClientAllocIndexesOf of k listed with an AllocModifyIndex above
// above, in ID order, read from the store as it is now (the same state or
// a later one: an allocation collected since is left out, one changed
// since is as it is now). It does not watch.
func (s *StateStore) ClientAllocsChanged(k *NodeKey, above uint64, limit int, out []*structs.Allocation) ([]*structs.Allocation, error) {
	if k.row == nil || limit <= 0 {
		return out, nil
	}
	var t *allocTables
	n := 0
	for _, r := range k.row.Allocs {
		if r.AllocModifyIndex <= above {
			continue
		}
		if n == limit {
			break
		}
		n++
		if t == nil {
			var err error
			if t, _, err = s.tables(nil); err != nil {
				return out, err
			}
		}
		if a, ok := t.byID.Get(r.ID); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// AllocsByIDs looks up each of ids in one read transaction and appends
// the allocations found to out, in the order of ids; unknown IDs are
// left out (not an error). It returns out and the highest ModifyIndex of
// the allocations found (0 for none). ws wakes when any of them changes,
// appears or goes, as with AllocByID.
func (s *StateStore) AllocsByIDs(ws memdb.WatchSet, ids []string, out []*structs.Allocation) ([]*structs.Allocation, uint64, error) {
	if len(ids) == 0 {
		return out, 0, nil
	}
	var keys []string
	if ws != nil {
		keys = make([]string, len(ids))
		for i, id := range ids {
			keys[i] = allocWatchKey(id)
		}
	}
	t, err := s.watchedTables(ws, keys...)
	if err != nil {
		return out, 0, err
	}
	var high uint64
	for _, id := range ids {
		a, ok := t.byID.Get(id)
		if !ok {
			continue
		}
		out = append(out, a)
		high = max(high, a.ModifyIndex)
	}
	return out, high, nil
}

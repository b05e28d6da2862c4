package state

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/drover-project/drover/structs"
)

// NodeView is an immutable view of the nodes table at one version: every
// node sorted by ID, a lookup from ID to position, and the positions of
// the ready nodes (structs.Node.Ready) per datacenter. It is built once
// per version of the table and shared by every reader of that version, so
// a scheduler gets the cluster's nodes without listing or indexing them
// per evaluation.
//
// A NodeView and everything it returns are shared: callers must not
// modify them (nor the nodes, as with every object the store returns). It
// is safe for concurrent use.
type NodeView struct {
	index uint64             // the nodes table's index when built
	key   <-chan struct{}    // identity of the table version (see NodeView)
	nodes []*structs.Node    // sorted by ID
	pos   map[string]int32   // node ID -> position in nodes
	ready map[string][]int32 // datacenter -> positions of its ready nodes, ascending
	dcs   []string           // datacenters with ready nodes, sorted
	// pool is the node pool every node is in ("" when they differ or
	// there are none): a scheduler then needs no pool check for it.
	pool string
}

// nodeViewCache holds the last NodeView built for a store and its
// snapshots; it only ever moves to a newer table version.
type nodeViewCache = atomic.Pointer[NodeView]

// NodeView returns the view of the nodes table as this store (or
// snapshot) sees it, in O(1) when a view of that version was built
// before.
//
// The view is keyed by the version of the table's ID index (memdb hands
// out a new watch channel for the root of an index's tree whenever a
// write changes the tree, and never reuses one), not by the table's Raft
// index: a snapshot may be written to (the plan applier evaluates plans
// that way) and shares this cache, so only the tree's identity proves two
// readers see the same rows. The cache keeps the view with the highest
// table index, so an old snapshot does not evict the view current readers
// use.
func (s *StateStore) NodeView() (*NodeView, error) {
	txn := s.db.Txn(false)
	iter, err := txn.Get(TableNodes, IndexID)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s: %w", TableNodes, err)
	}
	key := iter.WatchCh()
	if v := s.nodeViews.Load(); v != nil && v.key == key {
		return v, nil
	}
	raw, err := txn.First(TableIndex, IndexID, TableNodes)
	if err != nil {
		return nil, fmt.Errorf("state: index lookup %q: %w", TableNodes, err)
	}
	v := &NodeView{key: key, pos: map[string]int32{}, ready: map[string][]int32{}}
	if raw != nil {
		v.index = raw.(*IndexEntry).Value
	}
	mixed := false
	for obj := iter.Next(); obj != nil; obj = iter.Next() {
		n := obj.(*structs.Node)
		pool := n.NodePool
		if pool == "" {
			pool = structs.NodePoolDefault
		}
		switch {
		case len(v.nodes) == 0:
			v.pool = pool
		case pool != v.pool:
			mixed = true
		}
		i := int32(len(v.nodes))
		v.nodes = append(v.nodes, n)
		v.pos[n.ID] = i
		if n.Ready() {
			if _, ok := v.ready[n.Datacenter]; !ok {
				v.dcs = append(v.dcs, n.Datacenter)
			}
			v.ready[n.Datacenter] = append(v.ready[n.Datacenter], i)
		}
	}
	if mixed {
		v.pool = ""
	}
	slices.Sort(v.dcs)
	for dc, list := range v.ready {
		v.ready[dc] = slices.Clip(list) // an append by a reader must copy
	}
	for {
		cur := s.nodeViews.Load()
		if cur != nil && cur.index > v.index {
			break // an older version: do not evict the newer view
		}
		if s.nodeViews.CompareAndSwap(cur, v) {
			break
		}
	}
	return v, nil
}

// OnlyPool returns the node pool every node of the view is in, or "" when
// they are in different pools (or there are no nodes).
func (v *NodeView) OnlyPool() string { return v.pool }

// Index is the Raft index of the last write to the nodes table the view
// includes.
func (v *NodeView) Index() uint64 { return v.index }

// Len is the number of nodes.
func (v *NodeView) Len() int { return len(v.nodes) }

// Nodes returns every node, sorted by ID. The slice is shared: do not
// modify it.
func (v *NodeView) Nodes() []*structs.Node { return v.nodes }

// Node returns the node at position i (0 <= i < Len()).
func (v *NodeView) Node(i int) *structs.Node { return v.nodes[i] }

// Position returns the position of the node with the given ID.
func (v *NodeView) Position(id string) (int, bool) {
	i, ok := v.pos[id]
	return int(i), ok
}

// ByID returns the node with the given ID, or nil when there is none.
func (v *NodeView) ByID(id string) *structs.Node {
	if i, ok := v.pos[id]; ok {
		return v.nodes[i]
	}
	return nil
}

// ReadyDatacenters returns the datacenters that have ready nodes, sorted.
// The slice is shared: do not modify it.
func (v *NodeView) ReadyDatacenters() []string { return v.dcs }

// Ready returns the positions of dc's ready nodes, ascending. The slice
// is shared: do not modify it.
func (v *NodeView) Ready(dc string) []int32 { return v.ready[dc] }

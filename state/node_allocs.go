package state

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/ptree"
	"github.com/drover-project/drover/structs"
)

// Per-node allocation rows: the byNode tree of the allocations row
// (alloc_tables.go) holds one row per node with what is derived from the
// node's allocations:
//
//   - its usage (NodeUsage): the summed resources and the number of its
//     live (non-terminal) allocations, so that the scheduler and the plan
//     applier read a node's usage in O(1) instead of summing its
//     allocations;
//   - its allocations (Allocs): each one's ID and AllocModifyIndex, sorted
//     by ID. Reads by node (AllocsByNode, and a client's watch, which
//     answers from the list alone: ClientAllocIndexes) start here; there
//     is no per-allocation index by node;
//   - its allocation index (NodeAllocIndex): the highest AllocModifyIndex
//     in Allocs, the index of the last change the servers made to them (a
//     placement, a stop or eviction, an in-place update, a desired
//     transition, a lost or unknown mark). A client's watch
//     (Node.GetClientAllocs) blocks on this one row instead of on every
//     write to the node's allocations.
//
// All are kept exact by construction: allocations are written only
// through writeTxn.insertAlloc and writeTxn.deleteAlloc, which record
// what each write takes from and adds to its node; the transaction folds
// those changes into the row once per node when it commits: one lookup
// and at most one insert per node, none for a node whose row does not
// change. A row is immutable: a change writes a new row with a new list
// (copying a node's list is cheap next to a tree insert per allocation,
// and a node holds tens to thousands).
//
// A row is rewritten, and its watchers woken, when any value changes.
// Client status updates keep AllocModifyIndex, so the common one (running,
// same resources) writes nothing; one that makes an allocation terminal
// changes the usage and so wakes the node's client watch, which finds the
// allocation index where it was and waits again.
//
// The row also holds the node itself (the nodes table's object, written
// with it), so that a client's watch reads its node and its allocations
// in one lookup.
//
// Lifetime: a node has a row while it is registered (with zero values
// while it has no allocations: a watch on a missing row waits on the
// allocations row, which every allocation write fires), and after it is
// deleted for as long as it holds allocations (with no node).
//
// The rows are derived data: snapshots do not carry them and a restore
// rebuilds them from the nodes and allocations it loads, to the same rows (the usage's ModifyIndex aside: see
// nodeAllocsRestore).

// nodeAllocs is a node's row.
type nodeAllocs struct {
	// Usage is the node's usage; NodeID is the row's key. It is zero
	// (ModifyIndex 0) while the node has no live allocations.
	Usage structs.NodeUsage
	// AllocIndex is the highest AllocModifyIndex in Allocs (0 when there
	// are none).
	AllocIndex uint64
	// Allocs are the node's allocations, sorted by ID. Shared between
	// rows and with the answers of client watches: never modified.
	Allocs structs.AllocIndexes
	// Node is the node as the nodes table holds it (the same object), nil
	// once it is deleted. A client's watch reads the node and its
	// allocations here, in one lookup (ClientNode).
	Node *structs.Node
	// Ports are the ports its live allocations hold (nil: none), so that
	// the scheduler and the plan applier check ports without loading the
	// node's allocations. Shared between rows: never modified.
	Ports *structs.NodePorts
	// changed is closed when a commit of the live store replaces or
	// deletes the row (set by putNodeRow).
	changed chan struct{}
}

// nodeRow returns the node's row as the transaction holds it, or nil.
func (w *writeTxn) nodeRow(nodeID string) (*nodeAllocs, error) {
	aw, err := w.allocs()
	if err != nil {
		return nil, err
	}
	row, _ := aw.byNode.Get(nodeID)
	return row, nil
}

// putNodeRow writes row, a new object, as its node's row.
func (w *writeTxn) putNodeRow(row *nodeAllocs) error {
	aw, err := w.allocs()
	if err != nil {
		return err
	}
	row.changed = make(chan struct{})
	if prev, ok := aw.byNode.Set(row.Usage.NodeID, row); ok {
		aw.superseded = append(aw.superseded, prev)
	}
	aw.nodesMoved = true
	return nil
}

// deleteNodeRow removes the node's row, if any.
func (w *writeTxn) deleteNodeRow(nodeID string) error {
	aw, err := w.allocs()
	if err != nil {
		return err
	}
	if prev, ok := aw.byNode.Delete(nodeID); ok {
		aw.superseded = append(aw.superseded, prev)
		aw.nodesMoved = true
	}
	return nil
}

func allocIndexOf(a *structs.Allocation) structs.AllocIndex {
	return structs.AllocIndex{ID: a.ID, AllocModifyIndex: a.AllocModifyIndex}
}

// nodeDelta is what one transaction's allocation writes change in one
// node's row.
type nodeDelta struct {
	used   structs.ComparableResources
	allocs int
	// usageIndex is the index of the last write that changed the usage.
	usageIndex uint64
	// refs are the allocations written onto the node or that left it
	// (removed), in write order.
	refs []refChange
	// ports are the changes to what the node's live allocations hold of
	// its ports, in write order (an empty Ports: the allocation holds
	// none any more).
	ports []structs.AllocPorts
	// node is the node as last written to the nodes table (nil: deleted),
	// if nodeSet.
	node    *structs.Node
	nodeSet bool
}

type refChange struct {
	ref     structs.AllocIndex // what the allocation's entry becomes
	removed bool               // the allocation left (ref.ID alone is set)
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
		d.refs = append(d.refs, refChange{ref: structs.AllocIndex{ID: prev.ID}, removed: true})
		if liveOnNode(prev) {
			d.used.Subtract(prev.AllocatedResources.Comparable())
			d.allocs--
			d.usageIndex = w.t.index
			if prev.HasPorts() {
				d.ports = append(d.ports, structs.AllocPorts{AllocID: prev.ID})
			}
		}
	}
	if next != nil && next.NodeID != "" {
		d := w.deltaOf(next.NodeID)
		d.refs = append(d.refs, refChange{ref: allocIndexOf(next)})
		if liveOnNode(next) {
			d.used.Add(next.AllocatedResources.Comparable())
			d.allocs++
			d.usageIndex = w.t.index
			if keys := structs.AllocPortKeys(next); keys != nil {
				d.ports = append(d.ports, structs.AllocPorts{AllocID: next.ID, Ports: keys})
			}
		}
	}
}

// allocUpdated records an allocation rewritten on the same node.
func (w *writeTxn) allocUpdated(prev, next *structs.Allocation) {
	var d *nodeDelta
	if prev.AllocModifyIndex != next.AllocModifyIndex {
		d = w.deltaOf(next.NodeID)
		d.refs = append(d.refs, refChange{ref: allocIndexOf(next)})
	}
	wasLive, isLive := !prev.TerminalStatus(), !next.TerminalStatus()
	if !wasLive && !isLive {
		return
	}
	if wasLive != isLive || prev.AllocatedResources != next.AllocatedResources {
		w.allocPortsUpdated(prev, next, wasLive, isLive)
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

// allocPortsUpdated records a change of the ports an allocation rewritten
// on its node holds: it became terminal or live again, or its resources
// were replaced.
func (w *writeTxn) allocPortsUpdated(prev, next *structs.Allocation, wasLive, isLive bool) {
	var before, after []structs.PortKey
	if wasLive {
		before = structs.AllocPortKeys(prev)
	}
	if isLive {
		after = structs.AllocPortKeys(next)
	}
	if slices.Equal(before, after) {
		return
	}
	d := w.deltaOf(next.NodeID)
	d.ports = append(d.ports, structs.AllocPorts{AllocID: next.ID, Ports: after})
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
// table: for each node whose usage, allocations or node moved, one lookup and
// one new row (or a deletion, for a deleted node left without
// allocations). A row that does not change is not written (its watchers
// do not wake).
func (w *writeTxn) flushNodeAllocs() error {
	for nodeID, d := range w.nodes {
		usageMoved := d.allocs != 0 || d.used != (structs.ComparableResources{})
		if !usageMoved && len(d.refs) == 0 && !d.nodeSet && len(d.ports) == 0 {
			continue
		}
		prev, err := w.nodeRow(nodeID)
		if err != nil {
			return err
		}
		next := nodeAllocs{Usage: structs.NodeUsage{NodeID: nodeID}}
		if prev != nil {
			next = *prev
		}
		if d.nodeSet {
			next.Node = d.node
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
		refsMoved := false
		if len(d.refs) > 0 {
			next.Allocs, refsMoved = mergeRefs(next.Allocs, d.refs)
			if refsMoved {
				next.AllocIndex = 0
				for _, r := range next.Allocs {
					next.AllocIndex = max(next.AllocIndex, r.AllocModifyIndex)
				}
			}
		}
		if len(d.ports) > 0 {
			next.Ports = next.Ports.WithHolders(d.ports)
		}
		keep := len(next.Allocs) > 0 || next.Usage.Allocs > 0 || next.Node != nil
		switch {
		case !keep:
			if prev != nil {
				if err := w.deleteNodeRow(nodeID); err != nil {
					return err
				}
			}
		case prev == nil || refsMoved || next.Usage != prev.Usage || next.AllocIndex != prev.AllocIndex || next.Node != prev.Node || next.Ports != prev.Ports:
			row := next
			if err := w.putNodeRow(&row); err != nil {
				return err
			}
		}
	}
	w.nodes = nil
	return nil
}

// mergeRefs returns refs with changes applied (the last change to an ID
// wins), as a new slice sorted by ID, and whether anything changed; refs
// itself is not modified. A change that sets what is already there (the
// same AllocModifyIndex) or removes what is not there is no change. It
// costs O(k log n) comparisons for k changes to n entries, plus a copy:
// a plan adds one or a few allocations to each of many nodes.
func mergeRefs(refs structs.AllocIndexes, changes []refChange) (structs.AllocIndexes, bool) {
	// The last change per ID, sorted by ID.
	if len(changes) > 1 {
		slices.SortStableFunc(changes, func(a, b refChange) int { return strings.Compare(a.ref.ID, b.ref.ID) })
	}
	last := changes[:0]
	for i, c := range changes {
		if i+1 < len(changes) && changes[i+1].ref.ID == c.ref.ID {
			continue
		}
		last = append(last, c)
	}
	var out structs.AllocIndexes
	i := 0 // refs[:i] are decided
	for _, c := range last {
		j, found := refs[i:].Search(c.ref.ID)
		j += i
		if c.removed && !found || !c.removed && found && refs[j].AllocModifyIndex == c.ref.AllocModifyIndex {
			continue // no change: refs[i:j+1] stay undecided, copied later
		}
		if out == nil {
			out = make(structs.AllocIndexes, 0, len(refs)+len(last))
		}
		out = append(out, refs[i:j]...)
		if !c.removed {
			out = append(out, c.ref)
		}
		i = j
		if found {
			i++
		}
	}
	if out == nil {
		return refs, false
	}
	return append(out, refs[i:]...), true
}

// nodeAllocsNodeWritten records that node was just written to the nodes
// table: its row will hold it (a newly registered node gets a row).
func (w *writeTxn) nodeAllocsNodeWritten(node *structs.Node) {
	d := w.deltaOf(node.ID)
	d.node, d.nodeSet = node, true
}

// nodeAllocsNodeDeleted records that the node was deleted: its row goes,
// unless the node still holds allocations (the row then names no node).
func (w *writeTxn) nodeAllocsNodeDeleted(nodeID string) {
	d := w.deltaOf(nodeID)
	d.node, d.nodeSet = nil, true
}

// nodeAllocsRow returns the node's row, or nil, and adds its watch to ws.
func (s *StateStore) nodeAllocsRow(ws memdb.WatchSet, nodeID string) (*nodeAllocs, error) {
	t, ch, err := s.tables(ws)
	if err != nil {
		return nil, err
	}
	row, ch := nodeRowIn(t, ch, nodeID)
	ws.Add(ch)
	return row, nil
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

// NodePorts returns the ports the node's live allocations hold (nil:
// none), shared: never modify it. It adds to ws the watch of the node's
// row.
func (s *StateStore) NodePorts(ws memdb.WatchSet, nodeID string) (*structs.NodePorts, error) {
	row, err := s.nodeAllocsRow(ws, nodeID)
	if err != nil || row == nil {
		return nil, err
	}
	return row.Ports, nil
}

// NodeAllocIndex returns the highest AllocModifyIndex of the node's
// allocations: the index of the last change the servers made to them (0
// when it has none, or is unknown). For a registered node (or one with
// allocations) it adds to ws only the watch of the node's row, which
// fires when that index changes (a collection that removes the allocation
// holding the maximum fires it and lowers it), when an allocation joins
// or leaves the node, when the node's usage changes (a client update
// making an allocation terminal) and when the node itself is written
// (the row holds it), but not for a client update that changes none of
// these (the common "running").
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
	row   nodeAllocs
	ports []structs.AllocPorts
}

func (r nodeAllocsRestore) of(nodeID string) *restoredNodeAllocs {
	e := r[nodeID]
	if e == nil {
		e = &restoredNodeAllocs{row: nodeAllocs{Usage: structs.NodeUsage{NodeID: nodeID}}}
		r[nodeID] = e
	}
	return e
}

// addNode records a registered node: it has a row, which holds it.
func (r nodeAllocsRestore) addNode(n *structs.Node) { r.of(n.ID).row.Node = n }

// add counts a restored allocation. After a restore the usage's
// ModifyIndex is the highest ModifyIndex of the node's allocations,
// terminal ones included: the index of the last change is not in the
// snapshot.
func (r nodeAllocsRestore) add(a *structs.Allocation) {
	if a.NodeID == "" {
		return
	}
	row := &r.of(a.NodeID).row
	row.Allocs = append(row.Allocs, allocIndexOf(a))
	row.AllocIndex = max(row.AllocIndex, a.AllocModifyIndex)
	row.Usage.ModifyIndex = max(row.Usage.ModifyIndex, a.ModifyIndex)
	if !a.TerminalStatus() {
		row.Usage.Used.Add(a.AllocatedResources.Comparable())
		row.Usage.Allocs++
		if keys := structs.AllocPortKeys(a); keys != nil {
			e := r.of(a.NodeID)
			e.ports = append(e.ports, structs.AllocPorts{AllocID: a.ID, Ports: keys})
		}
	}
}

// insert writes the rows of the registered nodes and of the nodes holding
// allocations (see the lifetime rule above).
func (r nodeAllocsRestore) insert(byNode *ptree.Txn[*nodeAllocs]) {
	for id, e := range r {
		e.row.Allocs.Sort()
		if len(e.ports) > 0 {
			slices.SortFunc(e.ports, func(a, b structs.AllocPorts) int { return strings.Compare(a.AllocID, b.AllocID) })
			e.row.Ports = structs.NewNodePorts(e.ports)
		}
		if e.row.Usage.Allocs == 0 {
			e.row.Usage = structs.NodeUsage{NodeID: id}
		}
		if e.row.Node == nil && len(e.row.Allocs) == 0 {
			continue
		}
		e.row.changed = make(chan struct{})
		byNode.Set(id, &e.row)
	}
}

package state

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/ptree"
	"github.com/drover-project/drover/structs"
)

// Allocations are not memdb rows. They live in persistent B-trees
// (internal/ptree), held together in the one row of the allocs table:
//
//   - byID: every allocation by ID;
//   - byJob: one key per allocation, namespace NUL job ID NUL allocation
//     ID, so that a prefix scan lists a job's allocations by ID;
//   - byNode: the per-node rows (node_allocs.go), hashed by node ID.
//
// Reads by node start from the node's row, which lists the node's
// allocation IDs.
//
// Why not memdb tables: a memdb insert copies the radix path to the key,
// with a new watch channel per copied node, tracks every replaced channel
// to close it at commit and keeps each copied node in an LRU cache; at
// c1m-small scale (100,000 allocations, 100 written per plan, on three
// servers) that was most of the FSM's time and of the garbage. A ptree
// write copies each B-tree node on its path once per transaction and
// makes no channel: 100 inserts into 100,000 keys take about 200 us,
// against 700-800 us in iradix with mutation tracking on (measured once,
// with BenchmarkSet100Into100k and the same loop over iradix).
//
// Since the trees are a memdb row, a memdb read transaction sees the
// allocations of exactly its own state, and a write transaction commits
// its allocations with everything else (commit writes the new row).
//
// Watches: the row's own watch channel fires on every commit that
// changes any allocation; reads of all allocations (Allocs,
// AllocsByIDPrefix) watch it. Reads by ID, job, node and evaluation
// watch precisely instead, through the store's allocWatches: the read
// registers its keys (the allocation ID, the job, the node) and then
// reads; a commit closes the channels of the keys it changed (an
// allocation's ID, job and nodes, before and after). Registering before
// reading is what makes this safe: a commit either published before the
// read (which then sees it) or looks at the registrations after them.

// allocTables is the one row of the allocs table. Immutable.
type allocTables struct {
	byID  *ptree.Tree[*structs.Allocation]
	byJob *ptree.Tree[struct{}]
	// byNode holds the per-node rows of node_allocs.go, by node ID.
	byNode *ptree.Tree[*nodeAllocs]
}

// allocTablesKey is the primary key of the allocs table's one row.
const allocTablesKey = "allocations"

// byNode is hashed: it is only looked up by node ID, and generated node
// IDs often share a long prefix (see ptree).
var emptyAllocTables = &allocTables{byID: ptree.New[*structs.Allocation](), byJob: ptree.New[struct{}](), byNode: ptree.NewHashed[*nodeAllocs]()}

// allocTablesOf returns the allocations txn sees and the watch channel of
// their row (it fires when any allocation changes).
func allocTablesOf(txn *memdb.Txn) (*allocTables, <-chan struct{}, error) {
	ch, raw, err := txn.FirstWatch(TableAllocs, IndexID, allocTablesKey)
	if err != nil {
		return nil, nil, fmt.Errorf("state: allocations row lookup: %w", err)
	}
	if raw == nil {
		return emptyAllocTables, ch, nil
	}
	return raw.(*allocTables), ch, nil
}

// tables returns the allocations the store holds, and the channel that
// fires when they change. A snapshot read without a watch set uses the
// snapshot's cached row (see StateStore.snapTables) instead of a memdb
// lookup: the scheduler and the plan applier read node usages and
// allocations by the hundred per evaluation.
func (s *StateStore) tables(ws memdb.WatchSet) (*allocTables, <-chan struct{}, error) {
	if s.snapTables != nil && ws == nil {
		return s.snapTables.Load(), nil, nil
	}
	return allocTablesOf(s.db.Txn(false))
}

// jobKey is an allocation's key in byJob.
func jobKey(namespace, jobID, allocID string) string {
	var b strings.Builder
	b.Grow(len(namespace) + len(jobID) + len(allocID) + 2)
	b.WriteString(namespace)
	b.WriteByte(0)
	b.WriteString(jobID)
	b.WriteByte(0)
	b.WriteString(allocID)
	return b.String()
}

// jobPrefix is the byJob prefix of a job's allocations.
func jobPrefix(namespace, jobID string) string { return namespace + "\x00" + jobID + "\x00" }

// allocWrite is a write transaction's allocations: ptree transactions
// started from the state the write transaction started from.
type allocWrite struct {
	byID    *ptree.Txn[*structs.Allocation]
	byJob   *ptree.Txn[struct{}]
	byNode  *ptree.Txn[*nodeAllocs]
	changed []allocChange // in write order
	// superseded are the node rows the transaction replaced or deleted:
	// their watch channels close once it commits (node_allocs.go).
	superseded []*nodeAllocs
	nodesMoved bool // a node row was written or deleted
}

// allocChange is one allocation write, for the watches: prev or next is
// nil for a create or a delete.
type allocChange struct{ prev, next *structs.Allocation }

// allocs returns the transaction's allocations, starting them on first
// use.
func (w *writeTxn) allocs() (*allocWrite, error) {
	if w.aw != nil {
		return w.aw, nil
	}
	t, _, err := allocTablesOf(w.base)
	if err != nil {
		return nil, err
	}
	w.aw = &allocWrite{byID: t.byID.Txn(), byJob: t.byJob.Txn(), byNode: t.byNode.Txn()}
	return w.aw, nil
}

// alloc returns the allocation as the transaction holds it, or nil.
func (w *writeTxn) alloc(id string) (*structs.Allocation, error) {
	aw, err := w.allocs()
	if err != nil {
		return nil, err
	}
	a, _ := aw.byID.Get(id)
	return a, nil
}

// insertAlloc inserts or replaces allocation a; prev is the allocation it
// replaces (nil when new), as the transaction holds it.
func (w *writeTxn) insertAlloc(prev, a *structs.Allocation) error {
	aw, err := w.allocs()
	if err != nil {
		return err
	}
	aw.byID.Set(a.ID, a)
	if prev == nil || prev.Namespace != a.Namespace || prev.JobID != a.JobID {
		if prev != nil {
			aw.byJob.Delete(jobKey(prev.Namespace, prev.JobID, prev.ID))
		}
		aw.byJob.Set(jobKey(a.Namespace, a.JobID, a.ID), struct{}{})
	}
	aw.changed = append(aw.changed, allocChange{prev, a})
	w.allocChanged(prev, a)
	return w.allocServicesEnd(prev, a)
}

// deleteAlloc removes allocation a, which must be stored.
func (w *writeTxn) deleteAlloc(a *structs.Allocation) error {
	aw, err := w.allocs()
	if err != nil {
		return err
	}
	if _, ok := aw.byID.Delete(a.ID); !ok {
		return fmt.Errorf("state: deleting alloc %q: not stored", a.ID)
	}
	aw.byJob.Delete(jobKey(a.Namespace, a.JobID, a.ID))
	aw.changed = append(aw.changed, allocChange{a, nil})
	w.allocChanged(a, nil)
	return w.allocServicesEnd(a, nil)
}

// commitAllocs writes the transaction's allocations row, if it changed
// any allocation or node row.
func (w *writeTxn) commitAllocs() error {
	if w.aw == nil || len(w.aw.changed) == 0 && !w.aw.nodesMoved {
		return nil
	}
	row := &allocTables{byID: w.aw.byID.Commit(), byJob: w.aw.byJob.Commit(), byNode: w.aw.byNode.Commit()}
	if err := w.txn.Insert(TableAllocs, row); err != nil {
		return fmt.Errorf("state: writing the allocations row: %w", err)
	}
	// A snapshot's cached row follows once nothing can fail (commit): an
	// aborted transaction leaves it as memdb's.
	w.newTables = row
	return nil
}

// eachAlloc calls fn with each of the job's allocations, as the
// transaction holds them, in ID order, until fn returns false. fn must
// not write allocations.
func (w *writeTxn) eachAlloc(namespace, jobID string, fn func(*structs.Allocation) bool) error {
	aw, err := w.allocs()
	if err != nil {
		return err
	}
	return eachJobAlloc(aw.byJob, aw.byID, namespace, jobID, fn)
}

// eachJobAlloc calls fn with each of the job's allocations, by its keys
// in byJob and their rows in byID (of a Tree or a Txn), in ID order,
// until fn returns false.
func eachJobAlloc(byJob interface {
	AscendPrefix(string, func(string, struct{}) bool)
}, byID interface {
	Get(string) (*structs.Allocation, bool)
}, namespace, jobID string, fn func(*structs.Allocation) bool) error {
	var err error
	prefix := jobPrefix(namespace, jobID)
	byJob.AscendPrefix(prefix, func(k string, _ struct{}) bool {
		a, ok := byID.Get(k[len(prefix):])
		if !ok {
			err = fmt.Errorf("state: alloc %q listed by job without its row", k[len(prefix):])
			return false
		}
		return fn(a)
	})
	return err
}

// ClientAllocIndexes returns the AllocModifyIndex of every allocation on
// the node, by allocation ID, read from the node's row alone: what a
// client's watch (Node.GetClientAllocs) answers, shared with the store
// (never modify it). It does not watch; the watch waits on the node's
// allocation row.
func (s *StateStore) ClientAllocIndexes(nodeID string) (structs.AllocIndexes, error) {
	t, _, err := s.tables(nil)
	if err != nil {
		return nil, err
	}
	row, _ := t.byNode.Get(nodeID)
	if row == nil || row.Allocs == nil {
		return structs.AllocIndexes{}, nil
	}
	return row.Allocs, nil
}

// allocsByJobTxn returns the job's allocations that keep accepts (nil:
// all), sorted by ID.
func allocsByJobTxn(t *allocTables, keep func(*structs.Allocation) bool, namespace, jobID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	err := eachJobAlloc(t.byJob, t.byID, namespace, jobID, func(a *structs.Allocation) bool {
		if keep == nil || keep(a) {
			out = append(out, a)
		}
		return true
	})
	return out, err
}

// allocsByNode returns the node's allocations, sorted by ID, from its
// row.
func allocsByNode(t *allocTables, nodeID string) ([]*structs.Allocation, error) {
	row, ok := t.byNode.Get(nodeID)
	if !ok {
		return nil, nil
	}
	refs := row.Allocs
	out := make([]*structs.Allocation, 0, len(refs))
	for _, ref := range refs {
		a, ok := t.byID.Get(ref.ID)
		if !ok {
			return nil, fmt.Errorf("state: alloc %q listed on node %q without its row", ref.ID, nodeID)
		}
		out = append(out, a)
	}
	return out, nil
}

// nodeRowOf returns the node's row of node_allocs as txn sees it (nil:
// none) and the channel that fires when it changes: the row's own, or
// for a missing row the allocations row's (coarse: it fires on any
// allocation write, but a missing row is rare: a node not registered
// yet, or deleted).
func nodeRowOf(txn *memdb.Txn, nodeID string) (*nodeAllocs, <-chan struct{}, error) {
	t, ch, err := allocTablesOf(txn)
	if err != nil {
		return nil, nil, err
	}
	row, ch := nodeRowIn(t, ch, nodeID)
	return row, ch, nil
}

// nodeRowIn is nodeRowOf on allocations already read, whose row's channel
// is tablesCh.
func nodeRowIn(t *allocTables, tablesCh <-chan struct{}, nodeID string) (*nodeAllocs, <-chan struct{}) {
	row, ok := t.byNode.Get(nodeID)
	if !ok {
		return nil, tablesCh
	}
	return row, row.changed
}

// Watch keys of allocWatches: an allocation, a job's allocations, a
// node's allocations.
func allocWatchKey(id string) string             { return "a\x00" + id }
func jobWatchKey(namespace, jobID string) string { return "j\x00" + namespace + "\x00" + jobID }
func nodeWatchKey(nodeID string) string          { return "n\x00" + nodeID }
func jobWatchKeyOf(a *structs.Allocation) string { return jobWatchKey(a.Namespace, a.JobID) }
func (c allocChange) nodes() (prev, next string) { return nodeOf(c.prev), nodeOf(c.next) }
func nodeOf(a *structs.Allocation) string {
	if a == nil {
		return ""
	}
	return a.NodeID
}

// allocWatches are the watch channels of allocation reads by key (see
// the top of this file). A commit closes and forgets the channels of the
// keys it changed. Keys nothing changes would stay forever (a watch on
// an ID that never existed), so once there are more than
// maxAllocWatches the next registration closes them all: each of their
// readers wakes once, runs again and registers what it still needs.
type allocWatches struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
	n     atomic.Int64 // len(chans), read by commits without the lock
}

const maxAllocWatches = 1 << 16

// watch adds the channel of each key to ws. Call it before reading.
func (w *allocWatches) watch(ws memdb.WatchSet, keys ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.chans)+len(keys) > maxAllocWatches {
		for _, ch := range w.chans {
			close(ch)
		}
		clear(w.chans)
	}
	if w.chans == nil {
		w.chans = map[string]chan struct{}{}
	}
	for _, k := range keys {
		ch := w.chans[k]
		if ch == nil {
			ch = make(chan struct{})
			w.chans[k] = ch
		}
		ws.Add(ch)
	}
	w.n.Store(int64(len(w.chans)))
}

// fire closes the channels of the keys changes touch. Call it after the
// commit that made them is visible.
func (w *allocWatches) fire(changes []allocChange) {
	if len(changes) == 0 || w.n.Load() == 0 {
		// No registration precedes the commit, so every reader that
		// registers from now on reads the committed state.
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	closeKey := func(k string) {
		if ch := w.chans[k]; ch != nil {
			close(ch)
			delete(w.chans, k)
		}
	}
	for _, c := range changes {
		a := c.next
		if a == nil {
			a = c.prev
		}
		closeKey(allocWatchKey(a.ID))
		closeKey(jobWatchKeyOf(a))
		prev, next := c.nodes()
		if prev != "" {
			closeKey(nodeWatchKey(prev))
		}
		if next != "" && next != prev {
			closeKey(nodeWatchKey(next))
		}
		if len(w.chans) == 0 {
			break
		}
	}
	w.n.Store(int64(len(w.chans)))
}

// watchedTables returns the allocations for a read with watch set ws
// (nil: none) of what keys name. On the live store it registers keys with
// the allocation watches first (see the top of this file); a snapshot,
// which nothing blocks on, has none, and ws gets the allocations row's
// channel instead (coarse).
func (s *StateStore) watchedTables(ws memdb.WatchSet, keys ...string) (*allocTables, error) {
	precise := ws != nil && s.allocWatches != nil
	if precise {
		s.allocWatches.watch(ws, keys...)
	}
	t, ch, err := s.tables(ws)
	if err != nil {
		return nil, err
	}
	if !precise {
		ws.Add(ch)
	}
	return t, nil
}

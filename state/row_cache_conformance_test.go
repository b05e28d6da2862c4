package state

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/structs"
)

// TestConformanceRowCachesAgainstMemdb holds the store's caches of memdb
// rows to memdb itself: a snapshot's cached allocations row (snapTables,
// read by every read without a watch set) and the NodeView shared by a
// store and its snapshots. Random allocation and node writes, alone and
// batched, some aborted, restores, and snapshots that later steps write
// to (as the plan applier does), and after every step, for the store
// written and for the stores of earlier steps (which must not see it):
//
//   - the cached allocations row is the very row memdb holds;
//   - reads without a watch set (cached) answer what reads with one
//     (memdb) answer, object for object: every allocation, by ID, by job,
//     by node;
//   - the NodeView holds exactly memdb's nodes, in ID order, at the nodes
//     table's index, with the ready nodes of each datacenter.
func TestConformanceRowCachesAgainstMemdb(t *testing.T) {
	var seen []*StateStore // the stores of the last steps of this rapid run
	checkRandomStoreWrites(t, true, func(rt *rapid.T, s *StateStore, when string) {
		if strings.HasPrefix(when, "step 0 ") {
			seen = nil // a new run
		}
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
			if len(seen) > 4 {
				seen = seen[1:]
			}
		}
		for i, st := range seen {
			checkRowCaches(rt, st, fmt.Sprintf("%s, store %d of %d", when, i+1, len(seen)))
		}
	})
}

func checkRowCaches(t *rapid.T, s *StateStore, when string) {
	ws := memdb.NewWatchSet()
	if s.snapTables != nil {
		want, _, err := allocTablesOf(s.db.Txn(false))
		ok(t, err)
		if got := s.snapTables.Load(); got != want {
			t.Fatalf("%s: the snapshot's cached allocations row is not memdb's", when)
		}
	}
	same := func(what string, cached, direct []*structs.Allocation, err1, err2 error) {
		ok(t, err1)
		ok(t, err2)
		if !slices.Equal(cached, direct) {
			t.Fatalf("%s: %s: cached read %v, memdb %v", when, what, allocIDs(cached), allocIDs(direct))
		}
	}
	cached, err1 := s.Allocs(nil)
	direct, err2 := s.Allocs(ws)
	same("every allocation", cached, direct, err1, err2)
	jobs := map[structs.NamespacedID]bool{}
	for _, a := range direct {
		c, found, err := s.LookupAlloc(nil, a.ID)
		ok(t, err)
		if !found || c != a {
			t.Fatalf("%s: allocation %s by ID: cached %p (found %v), memdb %p", when, a.ID, c, found, a)
		}
		jobs[structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] = true
	}
	for id := range jobs {
		c, err1 := s.AllocsByJob(nil, id.Namespace, id.ID)
		d, err2 := s.AllocsByJob(ws, id.Namespace, id.ID)
		same("by job "+id.ID, c, d, err1, err2)
	}
	for _, node := range propertyNodeIDs {
		c, err1 := s.AllocsByNode(nil, node)
		d, err2 := s.AllocsByNode(ws, node)
		same("by node "+node, c, d, err1, err2)
	}

	view, err := s.NodeView()
	ok(t, err)
	nodes, err := s.Nodes(ws)
	ok(t, err)
	if !slices.Equal(view.Nodes(), nodes) {
		t.Fatalf("%s: NodeView holds %d nodes, memdb %d (or other objects)", when, view.Len(), len(nodes))
	}
	index, err := s.Index(TableNodes)
	ok(t, err)
	if view.Index() != index {
		t.Fatalf("%s: NodeView at index %d, the nodes table at %d", when, view.Index(), index)
	}
	ready := map[string][]int32{}
	for i, n := range nodes {
		if p, found := view.Position(n.ID); !found || p != i || view.ByID(n.ID) != n {
			t.Fatalf("%s: NodeView position of %s: %d, %v; want %d", when, n.ID, p, found, i)
		}
		if n.Ready() {
			ready[n.Datacenter] = append(ready[n.Datacenter], int32(i))
		}
	}
	dcs := slices.Sorted(func(yield func(string) bool) {
		for dc := range ready {
			if !yield(dc) {
				return
			}
		}
	})
	if !slices.Equal(view.ReadyDatacenters(), dcs) {
		t.Fatalf("%s: NodeView ready datacenters %v, memdb %v", when, view.ReadyDatacenters(), dcs)
	}
	for dc, want := range ready {
		if got := view.Ready(dc); !slices.Equal(got, want) {
			t.Fatalf("%s: NodeView ready nodes of %s %v, memdb %v", when, dc, got, want)
		}
	}
}

func allocIDs(as []*structs.Allocation) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

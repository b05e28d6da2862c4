package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// fired reports whether any channel of ws is closed.
func fired(ws memdb.WatchSet) bool {
	for ch := range ws {
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

// TestNodeAllocIndex walks one node's allocation index through every kind
// of allocation write, checking its value and whether a watch taken before
// the write fires: only server-side changes (and collections of the
// allocation holding the maximum) do.
func TestNodeAllocIndex(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	node, other := mock.Node(), mock.Node()
	must(t, s.UpsertNode(2, node, nil))
	must(t, s.UpsertNode(3, other, nil))
	a1, a2 := mock.Alloc(job, node), mock.Alloc(job, node)
	copyOf := func(id string) *structs.Allocation {
		a, err := s.AllocByID(nil, id)
		must(t, err)
		return a.Copy()
	}
	migrate := true

	steps := []struct {
		name        string
		write       func(index uint64) error
		want, other uint64 // the index of node and of other after the write
		fires       bool   // the write fires a watch on node's index
	}{
		{name: "no allocations", write: func(uint64) error { return nil }},
		{
			// node's row exists (index 0), so its watch is its own.
			name: "a placement on another node",
			write: func(index uint64) error {
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{mock.Alloc(job, other)}})
			},
			other: 13,
		},
		{
			name: "placements",
			write: func(index uint64) error {
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a1, a2}})
			},
			want: 15, other: 13, fires: true,
		},
		{
			name: "client update",
			write: func(index uint64) error {
				return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a1.ID, ClientStatus: structs.AllocClientStatusRunning}}, nil)
			},
			want: 15, other: 13,
		},
		{
			name: "node status change",
			write: func(index uint64) error {
				return s.UpdateNodeStatus(index, node.ID, structs.NodeStatusDown, 1, nil, nil)
			},
			want: 15, other: 13,
		},
		{
			name: "desired transition",
			write: func(index uint64) error {
				return s.UpdateAllocsDesiredTransition(index, map[string]*structs.DesiredTransition{a1.ID: {Migrate: &migrate}}, 1, nil)
			},
			want: 21, other: 13, fires: true,
		},
		{
			name: "lost mark",
			write: func(index uint64) error {
				lost := copyOf(a2.ID)
				lost.ClientStatus = structs.AllocClientStatusLost
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{lost}})
			},
			want: 23, other: 13, fires: true,
		},
		{
			name: "stop",
			write: func(index uint64) error {
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: a1.ID}}})
			},
			want: 25, other: 13, fires: true,
		},
		{
			name: "collecting an allocation below the maximum",
			write: func(index uint64) error {
				return s.DeleteEvalsAndAllocs(index, nil, []string{a2.ID})
			},
			want: 25, other: 13,
		},
		{
			name: "a new placement, then its move to another node",
			write: func(index uint64) error {
				a3 := mock.Alloc(job, node)
				a3.ID = "a3"
				must(t, s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a3}}))
				moved := copyOf("a3")
				moved.NodeID = other.ID
				return s.UpsertPlanResults(index+1, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{moved}})
			},
			// a1 holds the maximum again; the moved allocation raises
			// other.
			want: 25, other: 30, fires: true,
		},
		{
			name: "collecting the allocation holding the maximum",
			write: func(index uint64) error {
				return s.DeleteEvalsAndAllocs(index, nil, []string{a1.ID})
			},
			want: 0, other: 30, fires: true,
		},
		{
			name: "the node deleted: its allocations keep the index",
			write: func(index uint64) error {
				must(t, s.DeleteNodes(index, []string{other.ID}))
				return nil
			},
			other: 30,
		},
	}
	index := uint64(11) // of each step's write; steps are two apart
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			ws := memdb.NewWatchSet()
			if _, err := s.NodeAllocIndex(ws, node.ID); err != nil {
				t.Fatal(err)
			}
			if err := step.write(index); err != nil {
				t.Fatal(err)
			}
			index += 2
			got, err := s.NodeAllocIndex(nil, node.ID)
			must(t, err)
			gotOther, err := s.NodeAllocIndex(nil, other.ID)
			must(t, err)
			if got != step.want || gotOther != step.other {
				t.Fatalf("indexes %d, %d; want %d, %d", got, gotOther, step.want, step.other)
			}
			if f := fired(ws); f != step.fires {
				t.Fatalf("the watch fired: %v, want %v", f, step.fires)
			}
		})
	}
	if n := allocIndexRows(t, s); n != 2 {
		t.Fatalf("%d rows, want 2 (the registered node's, and the deleted node's, which still has an allocation)", n)
	}
}

// TestNodeAllocIndexProperty applies random sequences of allocation writes
// and restores, and checks after every step that each node's index is the
// highest AllocModifyIndex of its allocations.
func TestNodeAllocIndexProperty(t *testing.T) { checkRandomAllocWrites(t, checkAllocIndex) }

func checkAllocIndex(t *rapid.T, s *StateStore, when string) {
	allocs, err := s.Allocs(nil)
	ok(t, err)
	nodes, err := s.Nodes(nil)
	ok(t, err)
	want := map[string]uint64{} // the rows there must be
	for _, n := range nodes {
		want[n.ID] = 0
	}
	for _, a := range allocs {
		if a.NodeID != "" && a.AllocModifyIndex > 0 {
			want[a.NodeID] = max(want[a.NodeID], a.AllocModifyIndex)
		}
	}
	for _, id := range propertyNodeIDs {
		got, err := s.NodeAllocIndex(nil, id)
		ok(t, err)
		if got != want[id] {
			t.Fatalf("%s: allocation index of %q is %d, its allocations' highest is %d", when, id, got, want[id])
		}
	}
	if n := allocIndexRows(t, s); n != len(want) {
		t.Fatalf("%s: %d allocation index rows for %d nodes registered or with allocations", when, n, len(want))
	}
}

// allocIndexRows counts the rows of the node_alloc_index table.
func allocIndexRows(t fataler, s *StateStore) int {
	t.Helper()
	iter, err := s.db.Txn(false).Get(TableNodeAllocIndex, IndexID)
	ok(t, err)
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n++
	}
	return n
}

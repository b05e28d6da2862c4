package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// allocKeyRows returns the rows of the alloc_keys table by allocation ID.
func allocKeyRows(t fataler, s *StateStore) map[string]*allocKey {
	t.Helper()
	iter, err := s.db.Txn(false).Get(TableAllocKeys, IndexID)
	ok(t, err)
	out := map[string]*allocKey{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		k := raw.(*allocKey)
		if out[k.ID] != nil {
			t.Fatalf("two key rows for allocation %q", k.ID)
		}
		out[k.ID] = k
	}
	return out
}

// keyValues is a key row without its lookup key, for comparisons.
type keyValues struct {
	ID, Namespace, JobID string
}

func (k *allocKey) values() keyValues {
	return keyValues{k.ID, k.Namespace, k.JobID}
}

// TestAllocKeysProperty applies random sequences of allocation writes
// (alone and batched, some aborted) and restores, and checks after every
// step that the alloc_keys table is what the allocs table gives, that the
// reads by job and node answer what a filter over every allocation gives,
// and that a key row whose values did not change was not rewritten (a
// client update, a stop or an in-place update on the same node leaves the
// row object as it was).
func TestAllocKeysProperty(t *testing.T) {
	var c allocKeysChecker
	checkRandomAllocWrites(t, c.check)
}

type allocKeysChecker struct {
	last *StateStore
	rows map[string]*allocKey
}

func (c *allocKeysChecker) check(t *rapid.T, s *StateStore, when string) {
	allocs, err := s.Allocs(nil)
	ok(t, err)
	rows := allocKeyRows(t, s)
	if len(rows) != len(allocs) {
		t.Fatalf("%s: %d key rows for %d allocations", when, len(rows), len(allocs))
	}
	byJob := map[structs.NamespacedID][]string{}
	byNode := map[string][]string{}
	for _, a := range allocs {
		want := keyValues{ID: a.ID, Namespace: a.Namespace, JobID: a.JobID}
		got := rows[a.ID]
		if got == nil || got.values() != want || string(got.lookup()) != a.ID+"\x00" ||
			string(got.jobKey) != a.Namespace+"\x00"+a.JobID+"\x00"+a.ID+"\x00" {
			t.Fatalf("%s: key row of %q is %+v, want %+v", when, a.ID, got, want)
		}
		// A batch deleting an allocation and writing it again gives a new
		// row with the old values. No other write changes an
		// allocation's job.
		recreated := strings.Contains(when, "batch") && strings.Contains(when, "delete allocs")
		if prev := c.rows[a.ID]; c.last == s && prev != nil && prev.values() == want && prev != got && !recreated {
			t.Fatalf("%s: key row of %q rewritten with the same values", when, a.ID)
		}
		id := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
		byJob[id] = append(byJob[id], a.ID) // Allocs is sorted by ID
		if a.NodeID != "" {
			byNode[a.NodeID] = append(byNode[a.NodeID], a.ID)
		}
	}
	ids := func(as []*structs.Allocation, err error) []string {
		ok(t, err)
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	for id, want := range byJob {
		if got := ids(s.AllocsByJob(nil, id.Namespace, id.ID)); !slices.Equal(got, want) {
			t.Fatalf("%s: AllocsByJob(%v) = %v, want %v", when, id, got, want)
		}
	}
	for _, node := range propertyNodeIDs[:3] {
		if got := ids(s.AllocsByNode(memdb.NewWatchSet(), node)); !slices.Equal(got, byNode[node]) {
			t.Fatalf("%s: AllocsByNode(%q) = %v, want %v", when, node, got, byNode[node])
		}
		idx, err := s.ClientAllocIndexes(node)
		ok(t, err)
		want := map[string]uint64{}
		for _, a := range allocs {
			if a.NodeID == node {
				want[a.ID] = a.AllocModifyIndex
			}
		}
		if !maps.Equal(idx, want) {
			t.Fatalf("%s: ClientAllocIndexes(%q) = %v, want %v", when, node, idx, want)
		}
	}
	c.last, c.rows = s, rows
}

// TestAllocKeyRowKept checks by hand which writes keep an allocation's key
// row (the same object) and which replace or remove it.
func TestAllocKeyRowKept(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	n1, n2 := mock.Node(), mock.Node()
	a := mock.Alloc(job, n1)
	a.Job = nil
	id := a.ID
	must(t, s.UpsertPlanResults(2, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a}}))
	row := func() *allocKey { return allocKeyRows(t, s)[id] }
	first := row()
	if first == nil || first.values() != (keyValues{ID: id, Namespace: job.Namespace, JobID: job.ID}) {
		t.Fatalf("key row after placement: %+v", first)
	}
	stored := func() *structs.Allocation {
		got, err := s.AllocByID(nil, id)
		must(t, err)
		return got.Copy()
	}
	steps := []struct {
		name  string
		write func() error
		same  bool
	}{
		// No write but a deletion changes an allocation's ID or job: the
		// row stays the same object through all of these. The node's row
		// in node_allocs follows the node and AllocModifyIndex.
		{"client update", func() error {
			return s.UpdateAllocsFromClient(3, []*structs.Allocation{{ID: id, ClientStatus: structs.AllocClientStatusRunning}}, nil)
		}, true},
		{"in-place update", func() error {
			return s.UpsertPlanResults(4, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{stored()}})
		}, true},
		{"desired transition", func() error {
			migrate := true
			return s.UpdateAllocsDesiredTransition(5, map[string]*structs.DesiredTransition{id: {Migrate: &migrate}}, 5, nil)
		}, true},
		{"stop", func() error {
			return s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: id}}})
		}, true},
		{"move to another node", func() error {
			moved := stored()
			moved.NodeID = n2.ID
			return s.UpsertAllocs(7, []*structs.Allocation{moved})
		}, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := row()
			must(t, st.write())
			after := row()
			if (after == before) != st.same {
				t.Fatalf("key row %p became %p (%+v); want the same object: %v", before, after, after, st.same)
			}
			a := stored()
			idx, err := s.ClientAllocIndexes(a.NodeID)
			must(t, err)
			if len(idx) != 1 || idx[id] != a.AllocModifyIndex {
				t.Fatalf("node %q lists %v, allocation at %d", a.NodeID, idx, a.AllocModifyIndex)
			}
			if a.NodeID == n2.ID {
				if idx, _ := s.ClientAllocIndexes(n1.ID); len(idx) != 0 {
					t.Fatalf("old node still lists %v", idx)
				}
			}
		})
	}
	t.Run("delete", func(t *testing.T) {
		must(t, s.DeleteEvalsAndAllocs(8, nil, []string{id}))
		if r := row(); r != nil {
			t.Fatalf("key row %+v left after the allocation was deleted", r)
		}
		allocs, err := s.AllocsByNode(nil, n2.ID)
		must(t, err)
		if len(allocs) != 0 {
			t.Fatalf("node still lists %d allocations", len(allocs))
		}
	})
}

// otherAllocID is the allocation TestAllocReadsWake's reads must not
// watch.
const otherAllocID = "other-alloc"

// TestAllocReadsWake checks that a blocking read by job, node or
// evaluation wakes when an allocation it read changes, when one joins or
// leaves its set, and (below the row limit) not for an allocation of
// another job and node; above the limit it still wakes on every change.
func TestAllocReadsWake(t *testing.T) {
	type reader func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error)
	reads := map[string]reader{
		"by job": func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error) {
			return s.AllocsByJob(ws, a.Namespace, a.JobID)
		},
		"by node": func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error) {
			return s.AllocsByNode(ws, a.NodeID)
		},
		"by eval": func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error) {
			return s.AllocsByEval(ws, a.EvalID)
		},
	}
	type change struct {
		name  string
		write func(s *StateStore, index uint64, a *structs.Allocation, job *structs.Job) error
		wake  bool
	}
	changes := []change{
		{"client update of a returned allocation", func(s *StateStore, index uint64, a *structs.Allocation, _ *structs.Job) error {
			return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning}}, nil)
		}, true},
		{"allocation added", func(s *StateStore, index uint64, a *structs.Allocation, job *structs.Job) error {
			b := a.Copy()
			b.ID = structs.GenerateUUID()
			b.Job = nil
			return s.UpsertAllocs(index, []*structs.Allocation{b})
		}, true},
		{"allocation removed", func(s *StateStore, index uint64, a *structs.Allocation, _ *structs.Job) error {
			return s.DeleteEvalsAndAllocs(index, nil, []string{a.ID})
		}, true},
		{"client update of another job's allocation on another node", func(s *StateStore, index uint64, _ *structs.Allocation, _ *structs.Job) error {
			return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: otherAllocID, ClientStatus: structs.AllocClientStatusFailed}}, nil)
		}, false},
	}
	for _, size := range []int{3, allocWatchRows + 5} {
		for name, read := range reads {
			for _, ch := range changes {
				t.Run(fmt.Sprintf("%d allocations %s %s", size, name, ch.name), func(t *testing.T) {
					s := testStore(t)
					job := mock.Job()
					must(t, s.UpsertJob(1, job, nil))
					node := mock.Node()
					eval := mock.EvalFor(job)
					must(t, s.UpsertEvals(2, []*structs.Evaluation{eval}))
					var allocs []*structs.Allocation
					for range size {
						a := mock.Alloc(job, node)
						a.EvalID = eval.ID
						allocs = append(allocs, a)
					}
					must(t, s.UpsertAllocs(3, allocs))
					other := mock.Job()
					must(t, s.UpsertJob(4, other, nil))
					otherAlloc := mock.Alloc(other, mock.Node())
					otherAlloc.ID = otherAllocID
					must(t, s.UpsertAllocs(5, []*structs.Allocation{otherAlloc}))
					ws := memdb.NewWatchSet()
					got, err := read(s, ws, allocs[0])
					must(t, err)
					if len(got) != size {
						t.Fatalf("read %d allocations, want %d", len(got), size)
					}
					if limit := allocWatchRows + 2; len(ws) > limit {
						t.Fatalf("watch set of %d channels, want at most %d", len(ws), limit)
					}
					if fired(ws) {
						t.Fatal("watch fired before any write")
					}
					must(t, ch.write(s, 10, allocs[0], job))
					wake := ch.wake || size > allocWatchRows // coarse above the limit
					if got := fired(ws); got != wake {
						t.Fatalf("watch fired: %v, want %v", got, wake)
					}
				})
			}
		}
	}
}

// TestAllocReadsWithoutWatchSet checks that reads with a nil watch set
// work on a large answer (no coarse watch lookup needed).
func TestAllocReadsWithoutWatchSet(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	node := mock.Node()
	allocs := planFor(job, []*structs.Node{node}, 2*allocWatchRows)
	must(t, s.UpsertPlanResults(2, &structs.ApplyPlanResultsRequest{AllocsUpdated: allocs}))
	byJob, err := s.AllocsByJob(nil, job.Namespace, job.ID)
	must(t, err)
	byNode, err := s.AllocsByNode(nil, node.ID)
	must(t, err)
	if len(byJob) != len(allocs) || len(byNode) != len(allocs) {
		t.Fatalf("by job %d, by node %d, want %d", len(byJob), len(byNode), len(allocs))
	}
}

// BenchmarkAllocsByNode reads the 20 allocations of one node among 100,000
// (the c1m-small shape), without and with a watch set.
func BenchmarkAllocsByNode(b *testing.B) {
	s := testStore(b)
	nodes := make([]*structs.Node, 5000)
	for i := range nodes {
		nodes[i] = mock.Node()
	}
	index := uint64(1)
	for j := range 1000 {
		job := mock.Job()
		must(b, s.UpsertJob(index, job, nil))
		start := j * 100 % len(nodes)
		must(b, s.UpsertPlanResults(index+1, &structs.ApplyPlanResultsRequest{
			AllocsUpdated: planFor(job, nodes[start:start+100], 100)}))
		index += 2
	}
	for _, ws := range []bool{false, true} {
		b.Run(fmt.Sprintf("watch=%v", ws), func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				var set memdb.WatchSet
				if ws {
					set = memdb.NewWatchSet()
				}
				allocs, err := s.AllocsByNode(set, nodes[i%len(nodes)].ID)
				must(b, err)
				n += len(allocs)
			}
			b.ReportMetric(float64(n)/float64(b.N), "allocs/read")
		})
	}
}

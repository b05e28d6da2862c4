package state

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// jobKeys returns the byJob keys of the store's allocations tree.
func jobKeys(t fataler, s *StateStore) []string {
	t.Helper()
	tables, _, err := allocTablesOf(s.db.Txn(false))
	ok(t, err)
	var out []string
	tables.byJob.Ascend("", func(k string, _ struct{}) bool { out = append(out, k); return true })
	return out
}

// TestAllocTablesProperty applies random sequences of allocation writes
// (alone and batched, some aborted) and restores, and checks after every
// step that the byJob tree is what the allocations give, and that the
// reads by job and node answer what a filter over every allocation gives.
func TestAllocTablesProperty(t *testing.T) {
	checkRandomAllocWrites(t, checkAllocTables)
}

func checkAllocTables(t *rapid.T, s *StateStore, when string) {
	allocs, err := s.Allocs(nil)
	ok(t, err)
	var want []string
	byJob := map[structs.NamespacedID][]string{}
	byNode := map[string][]string{}
	for _, a := range allocs {
		want = append(want, jobKey(a.Namespace, a.JobID, a.ID))
		id := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
		byJob[id] = append(byJob[id], a.ID) // Allocs is sorted by ID
		if a.NodeID != "" {
			byNode[a.NodeID] = append(byNode[a.NodeID], a.ID)
		}
	}
	slices.Sort(want)
	if got := jobKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("%s: byJob holds %q, want %q", when, got, want)
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
		if !maps.Equal(idx.Map(), want) {
			t.Fatalf("%s: ClientAllocIndexes(%q) = %v, want %v", when, node, idx, want)
		}
	}
}

// TestAllocWritesKeepNodeRows walks one allocation through every kind of
// write and checks the node rows and the byJob tree after each.
func TestAllocWritesKeepNodeRows(t *testing.T) {
	s, job := storeWithJob(t)
	n1, n2 := mock.Node(), mock.Node()
	a := mock.Alloc(job, n1)
	a.Job = nil
	id := a.ID
	must(t, s.UpsertPlanResults(2, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a}}))
	key := []string{jobKey(job.Namespace, job.ID, id)}
	if got := jobKeys(t, s); !slices.Equal(got, key) {
		t.Fatalf("byJob after placement: %q", got)
	}
	stored := func() *structs.Allocation {
		got, err := s.AllocByID(nil, id)
		must(t, err)
		return got.Copy()
	}
	steps := []struct {
		name  string
		write func() error
	}{
		// No write but a deletion changes an allocation's ID or job. The
		// node's row in node_allocs follows the node and
		// AllocModifyIndex.
		{"client update", func() error {
			return s.UpdateAllocsFromClient(3, []*structs.Allocation{{ID: id, ClientStatus: structs.AllocClientStatusRunning}}, nil)
		}},
		{"in-place update", func() error {
			return s.UpsertPlanResults(4, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{stored()}})
		}},
		{"desired transition", func() error {
			migrate := true
			return s.UpdateAllocsDesiredTransition(5, map[string]*structs.DesiredTransition{id: {Migrate: &migrate}}, 5, nil)
		}},
		{"stop", func() error {
			return s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: id}}})
		}},
		{"move to another node", func() error {
			moved := stored()
			moved.NodeID = n2.ID
			return s.UpsertAllocs(7, []*structs.Allocation{moved})
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			must(t, st.write())
			if got := jobKeys(t, s); !slices.Equal(got, key) {
				t.Fatalf("byJob holds %q", got)
			}
			a := stored()
			idx, err := s.ClientAllocIndexes(a.NodeID)
			must(t, err)
			if got, _ := idx.Get(id); len(idx) != 1 || got != a.AllocModifyIndex {
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
		if got := jobKeys(t, s); len(got) != 0 {
			t.Fatalf("byJob holds %q after the allocation was deleted", got)
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

// TestAllocReadsWake checks that a blocking read by ID, IDs, job, node or
// evaluation wakes when an allocation it read changes, when one joins or
// leaves its set, and not for an allocation of another job and node.
func TestAllocReadsWake(t *testing.T) {
	type reader func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error)
	reads := map[string]reader{
		"by ID": func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error) {
			got, err := s.AllocByID(ws, a.ID)
			return []*structs.Allocation{got}, err
		},
		"by IDs": func(s *StateStore, ws memdb.WatchSet, a *structs.Allocation) ([]*structs.Allocation, error) {
			got, _, err := s.AllocsByIDs(ws, []string{a.ID, "no-such-alloc"}, nil)
			return got, err
		},
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
		// wake: whether a read that returned a (and, by job, node or
		// eval, its siblings) must wake; byID: the same for a read of a
		// alone.
		wake, byID bool
	}
	changes := []change{
		{"client update of a returned allocation", func(s *StateStore, index uint64, a *structs.Allocation, _ *structs.Job) error {
			return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning}}, nil)
		}, true, true},
		{"allocation added", func(s *StateStore, index uint64, a *structs.Allocation, job *structs.Job) error {
			b := a.Copy()
			b.ID = structs.GenerateUUID()
			b.Job = nil
			return s.UpsertAllocs(index, []*structs.Allocation{b})
		}, true, false},
		{"allocation removed", func(s *StateStore, index uint64, a *structs.Allocation, _ *structs.Job) error {
			return s.DeleteEvalsAndAllocs(index, nil, []string{a.ID})
		}, true, true},
		{"client update of another job's allocation on another node", func(s *StateStore, index uint64, _ *structs.Allocation, _ *structs.Job) error {
			return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: otherAllocID, ClientStatus: structs.AllocClientStatusFailed}}, nil)
		}, false, false},
	}
	for name, read := range reads {
		for _, ch := range changes {
			t.Run(name+" "+ch.name, func(t *testing.T) {
				s, job := storeWithJob(t)
				node := mock.Node()
				eval := mock.EvalFor(job)
				must(t, s.UpsertEvals(2, []*structs.Evaluation{eval}))
				var allocs []*structs.Allocation
				for range 40 {
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
				if len(got) == 0 || got[0].ID != allocs[0].ID && name != "by job" && name != "by node" && name != "by eval" {
					t.Fatalf("read %d allocations", len(got))
				}
				if len(ws) > 3 {
					t.Fatalf("watch set of %d channels, want at most 3", len(ws))
				}
				if fired(ws) {
					t.Fatal("watch fired before any write")
				}
				must(t, ch.write(s, 10, allocs[0], job))
				wake := ch.wake
				if name == "by ID" || name == "by IDs" {
					wake = ch.byID
				}
				if got := fired(ws); got != wake {
					t.Fatalf("watch fired: %v, want %v", got, wake)
				}
			})
		}
	}
}

// TestAllocWatchesLoseNoWake has readers wait, with blocking queries by
// ID, job and node, for each of a stream of writes to one allocation, as
// fast as the writer can make them: a wake lost between a read and its
// registration would leave a reader waiting out its timeout.
func TestAllocWatchesLoseNoWake(t *testing.T) {
	s, job := storeWithJob(t)
	a := mock.Alloc(job, mock.Node())
	must(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	const last = 2 + 300
	reads := map[string]func(ws memdb.WatchSet, st *StateStore) (uint64, error){
		"by ID": func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
			got, err := st.AllocByID(ws, a.ID)
			if err != nil {
				return 0, err
			}
			return got.ModifyIndex, nil
		},
		"by job": func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
			got, err := st.AllocsByJob(ws, a.Namespace, a.JobID)
			if err != nil || len(got) != 1 {
				return 0, fmt.Errorf("by job: %d allocations, %v", len(got), err)
			}
			return got[0].ModifyIndex, nil
		},
		"by node": func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
			got, err := st.AllocsByNode(ws, a.NodeID)
			if err != nil || len(got) != 1 {
				return 0, fmt.Errorf("by node: %d allocations, %v", len(got), err)
			}
			return got[0].ModifyIndex, nil
		},
	}
	var wg sync.WaitGroup
	for name, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := uint64(2)
			for seen < last {
				var index uint64
				err := s.BlockingQuery(t.Context(), seen, 5*time.Second, func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
					var err error
					index, err = read(ws, st)
					return index, err
				})
				if err != nil || index <= seen {
					t.Errorf("%s: waiting past %d: index %d, %v", name, seen, index, err)
					return
				}
				seen = index
			}
		}()
	}
	for index := uint64(3); index <= last; index++ {
		status := structs.AllocClientStatusRunning
		if index%2 == 0 {
			status = structs.AllocClientStatusPending
		}
		must(t, s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a.ID, ClientStatus: status}}, nil))
		runtime.Gosched()
	}
	wg.Wait()
}

// TestAllocWatchesOverflow checks that registrations past
// maxAllocWatches close every channel (their readers wake and run
// again) instead of growing without bound.
func TestAllocWatchesOverflow(t *testing.T) {
	s := testStore(t)
	first := memdb.NewWatchSet()
	_, _, err := s.LookupAlloc(first, "never-written")
	must(t, err)
	for i := 0; i < maxAllocWatches; i++ {
		_, _, err := s.LookupAlloc(memdb.NewWatchSet(), fmt.Sprintf("missing-%d", i))
		must(t, err)
	}
	if !fired(first) {
		t.Fatal("the oldest registration did not fire when the table overflowed")
	}
	if n := s.allocWatches.n.Load(); n > maxAllocWatches {
		t.Fatalf("%d registrations kept", n)
	}
}

// TestAllocReadsWithoutWatchSet checks that reads with a nil watch set
// work, on the store and on a snapshot.
func TestAllocReadsWithoutWatchSet(t *testing.T) {
	s, job := storeWithJob(t)
	node := mock.Node()
	allocs := planFor(job, []*structs.Node{node}, 64)
	must(t, s.UpsertPlanResults(2, &structs.ApplyPlanResultsRequest{AllocsUpdated: allocs}))
	snap, err := s.Snapshot()
	must(t, err)
	for _, st := range []*StateStore{s, snap.StateStore} {
		byJob, err := st.AllocsByJob(nil, job.Namespace, job.ID)
		must(t, err)
		byNode, err := st.AllocsByNode(nil, node.ID)
		must(t, err)
		byIDs, _, err := st.AllocsByIDs(nil, []string{allocs[0].ID}, nil)
		must(t, err)
		if len(byJob) != len(allocs) || len(byNode) != len(allocs) || len(byIDs) != 1 {
			t.Fatalf("by job %d, by node %d, by IDs %d; want %d, %d, 1", len(byJob), len(byNode), len(byIDs), len(allocs), len(allocs))
		}
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

// TestSnapshotAllocsIsolated checks that a snapshot's reads (which use
// its cached allocations row) see its own writes and none of the live
// store's made after it was taken, and the other way round.
func TestSnapshotAllocsIsolated(t *testing.T) {
	s, job, node := storeWithJobAndNode(t)
	snap, err := s.Snapshot()
	must(t, err)
	live := planFor(job, []*structs.Node{node}, 1)[0]
	must(t, s.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{live}}))
	mine := planFor(job, []*structs.Node{node}, 1)[0]
	must(t, snap.UpsertPlanResults(4, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{mine}}))
	has := func(st *StateStore, id string) bool {
		_, found, err := st.LookupAlloc(nil, id)
		must(t, err)
		return found
	}
	if has(snap.StateStore, live.ID) || !has(snap.StateStore, mine.ID) {
		t.Fatal("the snapshot sees the live store's write, or not its own")
	}
	if !has(s, live.ID) || has(s, mine.ID) {
		t.Fatal("the live store sees the snapshot's write, or not its own")
	}
	u, err := snap.NodeUsage(nil, node.ID)
	must(t, err)
	if u.Allocs != 1 || u.ModifyIndex != 4 {
		t.Fatalf("snapshot's node usage %+v, want its one allocation at 4", u)
	}
}

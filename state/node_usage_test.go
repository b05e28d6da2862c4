package state

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestNodeUsage(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	node := mock.Node()
	must(t, s.UpsertNode(2, node, nil))

	sized := func(cpu, mem, disk int64) *structs.Allocation {
		a := mock.Alloc(job, node)
		a.AllocatedResources = &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{
				"a": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}},
				"b": {Cpu: structs.AllocatedCpuResources{CpuShares: 1}, Memory: structs.AllocatedMemoryResources{MemoryMB: 1}},
			},
			Shared: structs.AllocatedSharedResources{DiskMB: disk},
		}
		return a
	}
	want := func(t *testing.T, cpu, mem, disk int64, n int, index uint64) {
		t.Helper()
		u, err := s.NodeUsage(nil, node.ID)
		must(t, err)
		w := structs.NodeUsage{NodeID: node.ID, Used: structs.ComparableResources{CPU: cpu, MemoryMB: mem, DiskMB: disk},
			Allocs: n, ModifyIndex: index}
		if u != w {
			t.Fatalf("usage %+v, want %+v", u, w)
		}
	}
	a1, a2 := sized(100, 200, 300), sized(10, 20, 30)
	id1, id2 := a1.ID, a2.ID

	t.Run("empty node", func(t *testing.T) { want(t, 0, 0, 0, 0, 0) })
	t.Run("placements add", func(t *testing.T) {
		must(t, s.UpsertPlanResults(10, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a1, a2}}))
		want(t, 112, 222, 330, 2, 10)
	})
	t.Run("client update of the same size changes nothing", func(t *testing.T) {
		must(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: id1, ClientStatus: structs.AllocClientStatusRunning}}, nil))
		want(t, 112, 222, 330, 2, 10)
	})
	t.Run("in-place resize", func(t *testing.T) {
		stored, err := s.AllocByID(nil, id2)
		must(t, err)
		up := stored.Copy()
		up.AllocatedResources.Tasks["a"].Cpu.CpuShares = 50
		must(t, s.UpsertPlanResults(12, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{up}}))
		want(t, 152, 222, 330, 2, 12)
	})
	t.Run("plan stop subtracts", func(t *testing.T) {
		must(t, s.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: id1}}}))
		want(t, 51, 21, 30, 1, 13)
	})
	t.Run("deleting a terminal allocation changes nothing", func(t *testing.T) {
		must(t, s.DeleteEvalsAndAllocs(14, nil, []string{id1}))
		want(t, 51, 21, 30, 1, 13)
	})
	t.Run("client failure subtracts; the row goes", func(t *testing.T) {
		must(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{{ID: id2, ClientStatus: structs.AllocClientStatusFailed}}, nil))
		want(t, 0, 0, 0, 0, 0)
		if n := usageRows(t, s); n != 0 {
			t.Fatalf("%d usage rows, want 0", n)
		}
	})
	t.Run("aborted batch changes nothing", func(t *testing.T) {
		b := s.Batch()
		must(t, b.UpsertAllocs(16, []*structs.Allocation{sized(1, 1, 1)}))
		orphan := sized(1, 1, 1)
		orphan.Job, orphan.JobID = nil, "no-such-job"
		if err := b.UpsertAllocs(17, []*structs.Allocation{orphan}); !errors.Is(err, structs.ErrNotFound) {
			t.Fatalf("upsert of an allocation without a job: %v", err)
		}
		b.Abort()
		want(t, 0, 0, 0, 0, 0)
	})
}

// fataler is what the helpers below need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func ok(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func newStore(t fataler) *StateStore {
	t.Helper()
	s, err := NewStateStore()
	ok(t, err)
	return s
}

// usageRows counts the rows of the node_usage table.
func usageRows(t fataler, s *StateStore) int {
	t.Helper()
	iter, err := s.db.Txn(false).Get(TableNodeUsage, IndexID)
	ok(t, err)
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n++
	}
	return n
}

// TestNodeUsageProperty applies random sequences of allocation writes
// (alone and batched) and restores, and checks after every step that each
// node's usage equals the sum over its live allocations.
func TestNodeUsageProperty(t *testing.T) { checkRandomAllocWrites(t, checkUsage) }

// propertyNodeIDs are the nodes checkRandomAllocWrites places allocations
// on ("": none).
var propertyNodeIDs = []string{"node-a", "node-b", "node-c", ""}

// checkRandomAllocWrites applies random sequences of allocation writes
// (alone and batched, some aborted) and restores, and calls check after
// every step with the store and a description of the step.
func checkRandomAllocWrites(t *testing.T, check func(rt *rapid.T, s *StateStore, when string)) {
	nodeIDs := propertyNodeIDs
	clientStatuses := []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
		structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost,
		structs.AllocClientStatusUnknown}
	desiredStatuses := []string{structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop, structs.AllocDesiredStatusEvict}

	rapid.Check(t, func(rt *rapid.T) {
		s := newStore(rt)
		job := mock.Job()
		ok(rt, s.UpsertJob(1, job, nil))
		index := uint64(10)
		var ids []string // every allocation ID ever written, some since deleted

		resources := func() *structs.AllocatedResources {
			if rapid.IntRange(0, 9).Draw(rt, "nil_resources") == 0 {
				return nil
			}
			ar := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{}}
			for i := range rapid.IntRange(0, 2).Draw(rt, "tasks") {
				ar.Tasks[fmt.Sprintf("t%d", i)] = &structs.AllocatedTaskResources{
					Cpu:    structs.AllocatedCpuResources{CpuShares: int64(rapid.IntRange(0, 500).Draw(rt, "cpu"))},
					Memory: structs.AllocatedMemoryResources{MemoryMB: int64(rapid.IntRange(0, 500).Draw(rt, "mem"))},
				}
			}
			ar.Shared.DiskMB = int64(rapid.IntRange(0, 500).Draw(rt, "disk"))
			return ar
		}
		newAlloc := func() *structs.Allocation {
			a := mock.Alloc(job, &structs.Node{ID: rapid.SampledFrom(nodeIDs).Draw(rt, "node")})
			a.Job = nil
			a.AllocatedResources = resources()
			ids = append(ids, a.ID)
			return a
		}
		someIDs := func() []string {
			if len(ids) == 0 {
				return nil
			}
			return rapid.SliceOfN(rapid.SampledFrom(ids), 1, 4).Draw(rt, "ids")
		}
		// stored returns copies of the stored allocations among someIDs.
		stored := func() []*structs.Allocation {
			var out []*structs.Allocation
			for _, id := range someIDs() {
				if a, err := s.AllocByID(nil, id); err == nil {
					out = append(out, a.Copy())
				}
			}
			return out
		}
		// writes are the operations a Batch can carry, each at index.
		writes := []func(b *Batch, index uint64) (string, error){
			func(b *Batch, index uint64) (string, error) {
				req := &structs.ApplyPlanResultsRequest{UpdatedAt: int64(index)}
				for range rapid.IntRange(1, 3).Draw(rt, "placements") {
					req.AllocsUpdated = append(req.AllocsUpdated, newAlloc())
				}
				for _, a := range stored() { // in-place updates, resized or moved
					a.AllocatedResources = resources()
					if rapid.Bool().Draw(rt, "move") {
						a.NodeID = rapid.SampledFrom(nodeIDs).Draw(rt, "to_node")
					}
					a.DesiredStatus = rapid.SampledFrom(desiredStatuses).Draw(rt, "desired")
					a.ClientStatus = rapid.SampledFrom(clientStatuses).Draw(rt, "client")
					req.AllocsUpdated = append(req.AllocsUpdated, a)
				}
				return "plan placements and updates", b.UpsertPlanResults(index, req)
			},
			func(b *Batch, index uint64) (string, error) {
				req := &structs.ApplyPlanResultsRequest{UpdatedAt: int64(index)}
				for _, id := range someIDs() {
					req.AllocsStopped = append(req.AllocsStopped, &structs.Allocation{ID: id,
						DesiredStatus: rapid.SampledFrom([]string{"", structs.AllocDesiredStatusStop, structs.AllocDesiredStatusEvict}).Draw(rt, "stop"),
						ClientStatus:  rapid.SampledFrom([]string{"", structs.AllocClientStatusLost}).Draw(rt, "stop_client")})
				}
				return "plan stops", b.UpsertPlanResults(index, req)
			},
			func(b *Batch, index uint64) (string, error) {
				var upd []*structs.Allocation
				for _, id := range someIDs() {
					upd = append(upd, &structs.Allocation{ID: id, ClientStatus: rapid.SampledFrom(clientStatuses).Draw(rt, "client")})
				}
				return "client updates", b.UpdateAllocsFromClient(index, upd, nil)
			},
			func(b *Batch, index uint64) (string, error) {
				allocs := stored()
				for _, a := range allocs {
					a.AllocatedResources = resources()
					a.DesiredStatus = rapid.SampledFrom(desiredStatuses).Draw(rt, "desired")
					a.ClientStatus = rapid.SampledFrom(clientStatuses).Draw(rt, "client")
				}
				if rapid.Bool().Draw(rt, "upsert_new") {
					allocs = append(allocs, newAlloc())
				}
				return "upsert allocs", b.UpsertAllocs(index, allocs)
			},
			func(b *Batch, index uint64) (string, error) {
				return "delete allocs", b.DeleteEvalsAndAllocs(index, nil, append(someIDs(), "unknown"))
			},
			func(b *Batch, index uint64) (string, error) {
				tr := map[string]*structs.DesiredTransition{}
				migrate := true
				for _, id := range someIDs() {
					tr[id] = &structs.DesiredTransition{Migrate: &migrate}
				}
				return "desired transitions", b.UpdateAllocsDesiredTransition(index, tr, int64(index), nil)
			},
			func(b *Batch, index uint64) (string, error) {
				id := rapid.SampledFrom(nodeIDs[:3]).Draw(rt, "node_id")
				if _, err := b.NodeByID(id); err == nil {
					return "delete node " + id, b.DeleteNodes(index, []string{id})
				}
				n := mock.Node()
				n.ID = id
				return "register node " + id, b.UpsertNode(index, n, nil)
			},
			func(b *Batch, index uint64) (string, error) {
				if _, err := b.JobByID(job.Namespace, job.ID); err == nil {
					return "purge job", b.DeregisterJob(index, job.Namespace, job.ID, true, 0, nil)
				}
				return "register job", b.UpsertJob(index, job.Copy(), nil)
			},
		}

		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for step := range steps {
			var what string
			switch op := rapid.IntRange(0, len(writes)+1).Draw(rt, "op"); {
			case op < len(writes):
				b := s.Batch()
				var err error
				what, err = writes[op](b, index)
				if err != nil && !errors.Is(err, structs.ErrNotFound) {
					rt.Fatalf("step %d %s: %v", step, what, err)
				}
				if err == nil {
					ok(rt, b.Commit())
				}
				b.Abort()
				index++
			case op == len(writes):
				what = "batch"
				b := s.Batch()
				failed := false
				for range rapid.IntRange(2, 5).Draw(rt, "batch_writes") {
					w, err := writes[rapid.IntRange(0, len(writes)-1).Draw(rt, "batch_op")](b, index)
					index++
					what += ", " + w
					if err != nil {
						if !errors.Is(err, structs.ErrNotFound) {
							rt.Fatalf("step %d %s: %v", step, what, err)
						}
						failed = true // a failed write leaves the batch to be aborted
						break
					}
				}
				if failed || rapid.Bool().Draw(rt, "abort") {
					what += ", aborted"
				} else {
					ok(rt, b.Commit())
				}
				b.Abort()
			default:
				what = "restore"
				s = restoreCopy(rt, s)
			}
			check(rt, s, fmt.Sprintf("step %d (%s)", step, what))
		}
	})
}

// checkUsage compares every node's usage with a sum over the allocations.
func checkUsage(t *rapid.T, s *StateStore, when string) {
	allocs, err := s.Allocs(nil)
	ok(t, err)
	want := map[string]*structs.NodeUsage{}
	for _, a := range allocs {
		if a.NodeID == "" || a.TerminalStatus() {
			continue
		}
		u := want[a.NodeID]
		if u == nil {
			u = &structs.NodeUsage{NodeID: a.NodeID}
			want[a.NodeID] = u
		}
		u.Used.Add(a.AllocatedResources.Comparable())
		u.Allocs++
	}
	latest, err := s.LatestIndex()
	ok(t, err)
	for _, id := range propertyNodeIDs {
		got, err := s.NodeUsage(nil, id)
		ok(t, err)
		w := want[id]
		if w == nil {
			w = &structs.NodeUsage{NodeID: id}
		}
		if got.NodeID != id || got.Used != w.Used || got.Allocs != w.Allocs {
			t.Fatalf("%s: usage of %q is %+v, allocations sum to %+v", when, id, got, *w)
		}
		if got.ModifyIndex > latest || (got.Allocs > 0) != (got.ModifyIndex > 0) {
			t.Fatalf("%s: usage of %q modified at %d (latest index %d)", when, id, got.ModifyIndex, latest)
		}
	}
	if n := usageRows(t, s); n != len(want) {
		t.Fatalf("%s: %d usage rows for %d nodes with live allocations", when, n, len(want))
	}
}

// restoreCopy loads every table of s into a new store through Restore, as
// an FSM snapshot restore does.
func restoreCopy(t *rapid.T, s *StateStore) *StateStore {
	out := newStore(t)
	r := out.Restore()
	defer r.Abort()
	idx, err := s.Indexes()
	ok(t, err)
	for _, e := range idx {
		ok(t, r.IndexRestore(e))
	}
	nodes, err := s.Nodes(nil)
	ok(t, err)
	for _, n := range nodes {
		ok(t, r.NodeRestore(n))
	}
	jobs, err := s.Jobs(nil)
	ok(t, err)
	for _, j := range jobs {
		ok(t, r.JobRestore(j))
	}
	sums, err := s.JobSummaries(nil)
	ok(t, err)
	for _, js := range sums {
		ok(t, r.JobSummaryRestore(js))
	}
	evals, err := s.Evals(nil)
	ok(t, err)
	for _, e := range evals {
		ok(t, r.EvalRestore(e))
	}
	allocs, err := s.Allocs(nil)
	ok(t, err)
	for _, a := range allocs {
		ok(t, r.AllocRestore(a))
	}
	r.Commit()
	return out
}

func TestLookupAlloc(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	a := mock.Alloc(job, mock.Node())
	must(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	for _, tc := range []struct {
		id    string
		found bool
	}{{a.ID, true}, {"missing", false}, {a.ID[:8], false}} {
		t.Run(tc.id, func(t *testing.T) {
			got, found, err := s.LookupAlloc(nil, tc.id)
			must(t, err)
			if found != tc.found || (got != nil) != tc.found || found && got.ID != a.ID {
				t.Fatalf("LookupAlloc(%q) = %v, %v", tc.id, got, found)
			}
		})
	}
}

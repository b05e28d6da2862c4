package state

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestNodeUsage(t *testing.T) {
	s, job, node := storeWithJobAndNode(t)

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
	t.Run("client failure subtracts; the node keeps its row", func(t *testing.T) {
		must(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{{ID: id2, ClientStatus: structs.AllocClientStatusFailed}}, nil))
		want(t, 0, 0, 0, 0, 0)
		rows := nodeAllocsRows(t, s)
		if r := rows[node.ID]; len(rows) != 1 || r == nil || r.AllocIndex != 12 {
			t.Fatalf("rows %v, want the registered node's alone, at allocation index 12", rows)
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

// storeWithJob returns a store holding one mock job, written at index 1.
func storeWithJob(t *testing.T) (*StateStore, *structs.Job) {
	t.Helper()
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	return s, job
}

// storeWithJobAndNode is storeWithJob plus one mock node, registered at
// index 2.
func storeWithJobAndNode(t *testing.T) (*StateStore, *structs.Job, *structs.Node) {
	t.Helper()
	s, job := storeWithJob(t)
	node := mock.Node()
	must(t, s.UpsertNode(2, node, nil))
	return s, job, node
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

// nodeAllocsRows returns the node rows by node ID, checking that each is
// under its own node's key.
func nodeAllocsRows(t fataler, s *StateStore) map[string]*nodeAllocs {
	t.Helper()
	tables, _, err := allocTablesOf(s.db.Txn(false))
	ok(t, err)
	out := map[string]*nodeAllocs{}
	tables.byNode.Ascend("", func(id string, row *nodeAllocs) bool {
		if row.Usage.NodeID != id || row.changed == nil {
			t.Fatalf("row of node %q under key %q, channel %v", row.Usage.NodeID, id, row.changed)
		}
		out[id] = row
		return true
	})
	return out
}

// TestNodeAllocsProperty applies random sequences of allocation writes
// (alone and batched) and restores, and checks after every step that the
// node_allocs table is what a computation from scratch gives: a row for
// each registered node and each node holding allocations, with the usage
// summed over its live allocations and the highest AllocModifyIndex of
// its allocations; and that a row whose values did not change was not
// rewritten.
func TestNodeAllocsProperty(t *testing.T) {
	var c nodeAllocsChecker
	checkRandomAllocWrites(t, c.check)
}

// propertyNodeIDs are the nodes checkRandomAllocWrites places allocations
// on ("": none).
var propertyNodeIDs = []string{"node-a", "node-b", "node-c", ""}

// checkRandomAllocWrites applies random sequences of allocation writes
// (alone and batched, some aborted) and restores, and calls check after
// every step with the store and a description of the step.
func checkRandomAllocWrites(t *testing.T, check func(rt *rapid.T, s *StateStore, when string)) {
	checkRandomStoreWrites(t, false, check)
}

// checkRandomStoreWrites is checkRandomAllocWrites; with snapshots, a step
// may also take a snapshot of the store, to which later steps write (as
// the plan applier writes to its snapshot).
func checkRandomStoreWrites(t *testing.T, snapshots bool, check func(rt *rapid.T, s *StateStore, when string)) {
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
			// Ports from a small range, so that allocations share some.
			for range rapid.IntRange(0, 2).Draw(rt, "ports") {
				ar.Shared.Ports = append(ar.Shared.Ports, structs.AllocatedPortMapping{Label: "p",
					HostIP: "10.0.0.1", Value: rapid.IntRange(20000, 20004).Draw(rt, "port")})
			}
			for _, tr := range ar.Tasks {
				if rapid.IntRange(0, 3).Draw(rt, "task_net") == 0 {
					tr.Networks = []*structs.NetworkResource{{IP: "10.0.0.1",
						ReservedPorts: []structs.Port{{Label: "s", Value: rapid.IntRange(20000, 20004).Draw(rt, "static")}}}}
				}
			}
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
		lastOp := len(writes) + 1 // restore
		if snapshots {
			lastOp++ // snapshot
		}
		for step := range steps {
			var what string
			switch op := rapid.IntRange(0, lastOp).Draw(rt, "op"); {
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
			case op == len(writes)+2:
				what = "snapshot"
				snap, err := s.Snapshot()
				ok(rt, err)
				s = snap.StateStore
			default:
				what = "restore"
				s = restoreCopy(rt, s)
			}
			check(rt, s, fmt.Sprintf("step %d (%s)", step, what))
		}
	})
}

// nodeAllocsChecker compares the node_allocs table with a computation
// from the nodes and allocations. It remembers the last store it checked,
// to tell a rewritten row from one left alone.
type nodeAllocsChecker struct {
	last  *StateStore
	rows  map[string]*nodeAllocs // as stored at the last check
	want  map[string]wantRow     // as computed at the last check
	nodes map[string]*structs.Node
}

func (c *nodeAllocsChecker) check(t *rapid.T, s *StateStore, when string) {
	allocs, err := s.Allocs(nil)
	ok(t, err)
	nodeList, err := s.Nodes(nil)
	ok(t, err)
	want := map[string]wantRow{}
	nodes := map[string]*structs.Node{}
	for _, n := range nodeList {
		nodes[n.ID] = n
		want[n.ID] = wantRow{Usage: structs.NodeUsage{NodeID: n.ID}}
	}
	for _, a := range allocs { // sorted by ID, as a row's list
		live := !a.TerminalStatus()
		if a.NodeID == "" {
			continue
		}
		w, seen := want[a.NodeID]
		if !seen {
			w.Usage.NodeID = a.NodeID
		}
		w.refs += fmt.Sprintf("%s@%d,", a.ID, a.AllocModifyIndex)
		w.AllocIndex = max(w.AllocIndex, a.AllocModifyIndex)
		if live {
			w.Usage.Used.Add(a.AllocatedResources.Comparable())
			w.Usage.Allocs++
			if keys := structs.AllocPortKeys(a); keys != nil {
				slices.SortFunc(keys, structs.PortKey.Compare)
				w.ports += fmt.Sprintf("%s%v;", a.ID, keys)
			}
		}
		want[a.NodeID] = w
	}
	latest, err := s.LatestIndex()
	ok(t, err)
	rows := nodeAllocsRows(t, s)
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows for %d nodes registered or holding allocations", when, len(rows), len(want))
	}
	for id, w := range want {
		got := rows[id]
		if got == nil {
			t.Fatalf("%s: node %q has no row", when, id)
		}
		u := got.Usage
		if u.NodeID != id || u.Used != w.Usage.Used || u.Allocs != w.Usage.Allocs || got.AllocIndex != w.AllocIndex ||
			refsString(got.Allocs) != w.refs || portsString(got.Ports) != w.ports {
			t.Fatalf("%s: row of %q is %+v (%s), its allocations give %+v", when, id, *got, refsString(got.Allocs), w)
		}
		if got.Node != nodes[id] {
			t.Fatalf("%s: row of %q holds node %p, the nodes table %p", when, id, got.Node, nodes[id])
		}
		if u.ModifyIndex > latest || (u.Allocs > 0) != (u.ModifyIndex > 0) {
			t.Fatalf("%s: usage of %q modified at %d (latest index %d)", when, id, u.ModifyIndex, latest)
		}
		// Same store, same values, same node object: the row must be
		// the one the last check saw (no write, no wake-up).
		if c.last == s && c.rows[id] != nil && c.want[id] == w && c.nodes[id] == nodes[id] && c.rows[id] != got {
			t.Fatalf("%s: row of %q rewritten with the same values %+v", when, id, w)
		}
	}
	for _, id := range propertyNodeIDs {
		u, err := s.NodeUsage(nil, id)
		ok(t, err)
		index, err := s.NodeAllocIndex(nil, id)
		ok(t, err)
		w := want[id]
		if u.NodeID != id || u.Used != w.Usage.Used || u.Allocs != w.Usage.Allocs || index != w.AllocIndex {
			t.Fatalf("%s: node %q reads usage %+v and allocation index %d, its allocations give %+v", when, id, u, index, w)
		}
	}
	c.last, c.rows, c.want, c.nodes = s, rows, want, nodes
}

// wantRow is a node_allocs row as the allocations give it, comparable.
type wantRow struct {
	Usage      structs.NodeUsage
	AllocIndex uint64
	refs       string // "ID@AllocModifyIndex," for each, by ID
	ports      string // "ID[ports];" for each live holder, by ID
}

// portsString renders a row's ports as wantRow does, after checking that
// its keys are its holders' ports, sorted.
func portsString(p *structs.NodePorts) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	var all []structs.PortKey
	for _, h := range p.Holders {
		keys := slices.SortedFunc(slices.Values(h.Ports), structs.PortKey.Compare)
		fmt.Fprintf(&b, "%s%v;", h.AllocID, keys)
		all = append(all, h.Ports...)
	}
	slices.SortFunc(all, structs.PortKey.Compare)
	if !slices.Equal(all, p.Keys) {
		return fmt.Sprintf("keys %v, holders' ports %v", p.Keys, all)
	}
	return b.String()
}

func refsString(refs structs.AllocIndexes) string {
	var b strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&b, "%s@%d,", r.ID, r.AllocModifyIndex)
	}
	return b.String()
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
	s, job := storeWithJob(t)
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
	s, job := storeWithJob(t)
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
			// The row holds the node: rewritten, it fires.
			name: "node status change",
			write: func(index uint64) error {
				return s.UpdateNodeStatus(index, node.ID, structs.NodeStatusDown, 1, nil, nil)
			},
			want: 15, other: 13, fires: true,
		},
		{
			// The usage changes, the index does not: the row is
			// rewritten, so the watch fires (a client's watch runs again
			// and waits on).
			name: "a client failure",
			write: func(index uint64) error {
				return s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a2.ID, ClientStatus: structs.AllocClientStatusFailed}}, nil)
			},
			want: 15, other: 13, fires: true,
		},
		{
			name: "desired transition",
			write: func(index uint64) error {
				return s.UpdateAllocsDesiredTransition(index, map[string]*structs.DesiredTransition{a1.ID: {Migrate: &migrate}}, 1, nil)
			},
			want: 23, other: 13, fires: true,
		},
		{
			name: "lost mark",
			write: func(index uint64) error {
				lost := copyOf(a2.ID)
				lost.ClientStatus = structs.AllocClientStatusLost
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{lost}})
			},
			want: 25, other: 13, fires: true,
		},
		{
			name: "stop",
			write: func(index uint64) error {
				return s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: a1.ID}}})
			},
			want: 27, other: 13, fires: true,
		},
		{
			// The index stays, but the row lists the node's allocations,
			// so it is rewritten (a client's watch wakes, finds the
			// index where it was and waits again).
			name: "collecting an allocation below the maximum",
			write: func(index uint64) error {
				return s.DeleteEvalsAndAllocs(index, nil, []string{a2.ID})
			},
			want: 27, other: 13, fires: true,
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
			want: 27, other: 32, fires: true,
		},
		{
			name: "collecting the allocation holding the maximum",
			write: func(index uint64) error {
				return s.DeleteEvalsAndAllocs(index, nil, []string{a1.ID})
			},
			want: 0, other: 32, fires: true,
		},
		{
			name: "the node deleted: its allocations keep the index",
			write: func(index uint64) error {
				must(t, s.DeleteNodes(index, []string{other.ID}))
				return nil
			},
			other: 32,
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
	if rows := nodeAllocsRows(t, s); len(rows) != 2 || rows[node.ID] == nil || rows[other.ID] == nil {
		t.Fatalf("rows %v, want 2 (the registered node's, and the deleted node's, which still has an allocation)", rows)
	}
}

// TestNodeRowWatchIgnoresSnapshotWrites checks that a write to a snapshot
// (as the plan applier makes) does not wake a watch on the live store's
// node row, which the snapshot shares, and that the live store's own
// write to that row then wakes it once.
func TestNodeRowWatchIgnoresSnapshotWrites(t *testing.T) {
	s, job, node := storeWithJobAndNode(t)
	ws := memdb.NewWatchSet()
	if _, err := s.NodeAllocIndex(ws, node.ID); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	must(t, err)
	must(t, snap.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{AllocsUpdated: planFor(job, []*structs.Node{node}, 2)}))
	if fired(ws) {
		t.Fatal("a snapshot write woke a watch on the live store")
	}
	if idx, err := snap.NodeAllocIndex(nil, node.ID); err != nil || idx != 3 {
		t.Fatalf("snapshot's allocation index %d, %v; want 3", idx, err)
	}
	must(t, s.UpsertPlanResults(4, &structs.ApplyPlanResultsRequest{AllocsUpdated: planFor(job, []*structs.Node{node}, 1)}))
	if !fired(ws) {
		t.Fatal("the live write did not wake the watch")
	}
	// The snapshot writes again over the row it replaced: nothing closes
	// a channel twice.
	must(t, snap.UpsertPlanResults(5, &structs.ApplyPlanResultsRequest{AllocsUpdated: planFor(job, []*structs.Node{node}, 1)}))
}

func TestMergeRefs(t *testing.T) {
	refs := structs.AllocIndexes{{ID: "b", AllocModifyIndex: 2}, {ID: "d", AllocModifyIndex: 4}, {ID: "f", AllocModifyIndex: 6}}
	set := func(id string, idx uint64) refChange {
		return refChange{ref: structs.AllocIndex{ID: id, AllocModifyIndex: idx}}
	}
	del := func(id string) refChange { return refChange{ref: structs.AllocIndex{ID: id}, removed: true} }
	for _, tc := range []struct {
		name    string
		refs    structs.AllocIndexes
		changes []refChange
		want    string // refsString of the result
		moved   bool
	}{
		{"add to none", nil, []refChange{set("a", 1)}, "a@1,", true},
		{"add first", refs, []refChange{set("a", 1)}, "a@1,b@2,d@4,f@6,", true},
		{"add between", refs, []refChange{set("c", 3)}, "b@2,c@3,d@4,f@6,", true},
		{"add last", refs, []refChange{set("g", 7)}, "b@2,d@4,f@6,g@7,", true},
		{"same index", refs, []refChange{set("d", 4)}, "b@2,d@4,f@6,", false},
		{"new index", refs, []refChange{set("d", 9)}, "b@2,d@9,f@6,", true},
		{"remove", refs, []refChange{del("b")}, "d@4,f@6,", true},
		{"remove last", refs, []refChange{del("f")}, "b@2,d@4,", true},
		{"remove absent", refs, []refChange{del("c")}, "b@2,d@4,f@6,", false},
		{"last change wins", refs, []refChange{set("c", 3), del("c"), set("d", 8), set("d", 4)}, "b@2,d@4,f@6,", false},
		{"several, unsorted", refs, []refChange{set("g", 7), del("d"), set("a", 1), set("b", 2), set("e", 5)}, "a@1,b@2,e@5,f@6,g@7,", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refsString(tc.refs)
			got, moved := mergeRefs(tc.refs, slices.Clone(tc.changes))
			if refsString(got) != tc.want || moved != tc.moved {
				t.Fatalf("mergeRefs = %s, %v; want %s, %v", refsString(got), moved, tc.want, tc.moved)
			}
			if refsString(tc.refs) != before {
				t.Fatalf("mergeRefs modified its input: %s, was %s", refsString(tc.refs), before)
			}
			if !moved && len(tc.refs) > 0 && &got[0] != &tc.refs[0] {
				t.Fatal("an unchanged list was copied")
			}
		})
	}
}

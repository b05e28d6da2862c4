package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// testContext returns an evaluation context for job over the harness's
// current state.
func testContext(t *testing.T, h *Harness, job *structs.Job, evalID string) *evalContext {
	t.Helper()
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	e := mock.Eval(job)
	e.ID = evalID
	ctx, err := newEvalContext(snap, h.Logger, e, job, HarnessEpoch)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestShuffledNodesDrawOnDemand(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 200)
	job := addJob(t, h, mock.Job())
	order := func(evalID string, k int) ([]string, *evalContext) {
		ctx := testContext(t, h, job, evalID)
		st := newStack(ctx, false, dropFixed)
		var ids []string
		for i := 0; i < k; i++ {
			ids = append(ids, st.cands.At(i).node.ID)
		}
		return ids, ctx
	}

	// Drawing k candidates touches k nodes.
	first, ctx := order("eval-a", 3)
	if len(ctx.infos) != 3 || len(ctx.groupCounts) != 3 {
		t.Fatalf("3 draws created %d node infos, %d group counts", len(ctx.infos), len(ctx.groupCounts))
	}

	// The full order is a permutation, fixed by the evaluation.
	all, ctx := order("eval-a", 200)
	if !slices.Equal(all[:3], first) {
		t.Fatalf("the first draws changed when more were drawn: %v then %v", first, all[:3])
	}
	again, _ := order("eval-a", 200)
	if !slices.Equal(all, again) {
		t.Fatal("same evaluation, same state, different order")
	}
	var want []string
	for _, n := range ctx.view.Nodes() {
		want = append(want, n.ID)
	}
	if sorted := slices.Sorted(slices.Values(all)); !slices.Equal(sorted, want) {
		t.Fatalf("the order is not a permutation of the candidates (%d entries)", len(all))
	}
	if other, _ := order("eval-b", 200); slices.Equal(all, other) {
		t.Fatal("two evaluations shuffled the same way")
	}
	if slices.Equal(all, want) {
		t.Fatal("the candidates were not shuffled")
	}
}

// ringModel is the source ring stated plainly: the live entries in
// ascending order, a cursor, and the round's budget.
type ringModel struct {
	live        []int
	pos         int // entry the next call returns
	seen, round int
}

func (m *ringModel) next() int {
	if m.seen >= m.round || len(m.live) == 0 {
		return -1
	}
	e := m.pos
	i, _ := slices.BinarySearch(m.live, e)
	m.pos = m.live[(i+1)%len(m.live)]
	m.seen++
	return e
}

func (m *ringModel) unlink(e int) {
	i, _ := slices.BinarySearch(m.live, e)
	m.live = slices.Delete(m.live, i, i+1)
}

func (m *ringModel) reset() { m.seen, m.round = 0, len(m.live) }

// The source's lazily linked ring behaves as the plain model under any
// sequence of rounds and rejections, and keeps links only for the entries
// it has reached.
func TestSourceIteratorMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		nodes := testNodes(n)
		var m placementMetrics
		m.init()
		src := newSourceIterator(&m, nodes, dropFixed)
		model := &ringModel{round: n}
		for i := range n {
			model.live = append(model.live, i)
		}
		reached := -1
		for step := range rapid.IntRange(0, 120).Draw(rt, "steps") {
			if rapid.IntRange(0, 9).Draw(rt, "reset") == 0 {
				src.Reset()
				model.reset()
				continue
			}
			got, want := src.Next(), model.next()
			if (got == nil) != (want < 0) || got != nil && got.idx != want {
				rt.Fatalf("step %d: source returned %v, model %d", step, got, want)
			}
			if got == nil {
				continue
			}
			reached = max(reached, want)
			if rapid.Bool().Draw(rt, "reject") {
				src.filter(got, "test", true)
				model.unlink(want)
			}
			if src.alive != len(model.live) {
				rt.Fatalf("step %d: %d alive, model %d", step, src.alive, len(model.live))
			}
			if len(src.next) > reached+1 {
				rt.Fatalf("step %d: %d links kept after reaching entry %d", step, len(src.next), reached)
			}
		}
	})
}

// A batch placement on a large cluster looks at two nodes and touches
// only those; the metrics still describe the whole pool exactly.
func TestPlacementTouchesFewNodes(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 1000, func(i int, n *structs.Node) {
		n.Datacenter = []string{"dc1", "dc2", "dc3"}[i%3]
		if i%10 == 0 {
			n.Status = structs.NodeStatusDown
		}
	})
	j := mock.BatchJob()
	j.Datacenters = []string{"dc1", "dc3"}
	j.TaskGroups[0].Count = 1
	job := addJob(t, h, j)

	ctx := testContext(t, h, job, "eval-a")
	st := newStack(ctx, true, dropAll)
	wantAvail := map[string]int{}
	for _, n := range ctx.view.Nodes() {
		if n.Ready() && n.Datacenter != "dc2" {
			wantAvail[n.Datacenter]++
		}
	}
	if !maps.Equal(st.nodesAvailable, wantAvail) || st.nodesInPool != wantAvail["dc1"]+wantAvail["dc3"] {
		t.Fatalf("available %v in pool %d, want %v", st.nodesAvailable, st.nodesInPool, wantAvail)
	}
	tg := job.TaskGroups[0]
	if _, ok := st.Select(tg, 0, ""); !ok {
		t.Fatal("no node selected")
	}
	if ctx.metrics.evaluated != batchLimit || len(ctx.infos) != batchLimit {
		t.Fatalf("one batch placement evaluated %d nodes and touched %d, want %d", ctx.metrics.evaluated, len(ctx.infos), batchLimit)
	}

	// The allocation's metric, through the whole scheduler.
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 1 {
		t.Fatalf("placed %d allocations", len(live))
	}
	m := live[0].Metrics
	if m.NodesEvaluated != batchLimit || m.NodesInPool != st.nodesInPool || !maps.Equal(m.NodesAvailable, wantAvail) {
		t.Fatalf("metric evaluated %d in pool %d available %v", m.NodesEvaluated, m.NodesInPool, m.NodesAvailable)
	}
	if dc := ctx.view.ByID(live[0].NodeID).Datacenter; dc == "dc2" {
		t.Fatalf("placed in %s", dc)
	}
}

// Datacenter patterns select the candidates; with several datacenters
// the view's shared lists stay untouched.
func TestStackDatacenterPatterns(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 12, func(i int, n *structs.Node) {
		n.Datacenter = []string{"us-east", "us-west", "eu-1"}[i%3]
	})
	cases := []struct {
		patterns []string
		want     map[string]int
	}{
		{[]string{"us-*"}, map[string]int{"us-east": 4, "us-west": 4}},
		{[]string{"eu-1", "us-west"}, map[string]int{"eu-1": 4, "us-west": 4}},
		{[]string{"*"}, map[string]int{"eu-1": 4, "us-east": 4, "us-west": 4}},
		{[]string{"ap-*"}, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.patterns), func(t *testing.T) {
			j := mock.Job()
			j.Datacenters = tc.patterns
			ctx := testContext(t, h, j, "eval-"+fmt.Sprint(tc.patterns))
			before := map[string][]int32{}
			for _, dc := range ctx.view.ReadyDatacenters() {
				before[dc] = slices.Clone(ctx.view.Ready(dc))
			}
			st := newStack(ctx, false, dropFixed)
			total := 0
			for _, c := range tc.want {
				total += c
			}
			if !maps.Equal(st.nodesAvailable, tc.want) || st.nodesInPool != total || st.cands.Len() != total {
				t.Fatalf("available %v pool %d, want %v", st.nodesAvailable, st.nodesInPool, tc.want)
			}
			seen := map[string]bool{}
			for i := range st.cands.Len() {
				n := st.cands.At(i).node
				if tc.want[n.Datacenter] == 0 || seen[n.ID] {
					t.Fatalf("candidate %s in %s (seen before: %v)", n.ID, n.Datacenter, seen[n.ID])
				}
				seen[n.ID] = true
			}
			for dc, list := range before {
				if !slices.Equal(ctx.view.Ready(dc), list) {
					t.Fatalf("the view's ready list of %s changed", dc)
				}
			}
		})
	}
}

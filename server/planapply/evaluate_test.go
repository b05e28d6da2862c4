package planapply

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// TestEvaluatePlanInPlaceOnFullNode: an allocation already on a full node
// is counted once when the plan updates it in place, from the snapshot or
// from a commit still in flight.
func TestEvaluatePlanInPlaceOnFullNode(t *testing.T) {
	// Capacity after reserve: 900 MHz, 900 MB.
	full := testAlloc("full", 600, 600)
	other := testAlloc("full", 300, 300)
	s := newStore(t, testNode("full", 1000, 1000))
	if err := s.UpsertAllocs(100, []*structs.Allocation{full, other}); err != nil {
		t.Fatal(err)
	}
	resized := func(a *structs.Allocation, cpu int64) *structs.Allocation {
		c := a.Copy()
		c.AllocatedResources.Tasks["t"].Cpu.CpuShares = cpu
		return c
	}
	flying := testAlloc("full", 0, 0) // placed by a commit in flight
	tests := []struct {
		name    string
		pending inflight
		allocs  []*structs.Allocation // the plan's placements
		stops   []*structs.Allocation
		fits    bool
	}{
		{"same size", nil, []*structs.Allocation{full.Copy()}, nil, true},
		{"smaller", nil, []*structs.Allocation{resized(full, 500)}, nil, true},
		{"one more MHz", nil, []*structs.Allocation{resized(full, 601)}, nil, false},
		{"updated twice in one plan", nil, []*structs.Allocation{full.Copy(), full.Copy()}, nil, false},
		{"updated and stopped", nil, []*structs.Allocation{full.Copy()}, []*structs.Allocation{full}, true},
		{"grows into a stopped allocation's room", nil, []*structs.Allocation{resized(full, 900)}, []*structs.Allocation{other}, true},
		{"in flight update of the same allocation", inflight{{"full": {resized(full, 600)}}}, []*structs.Allocation{full.Copy()}, nil, true},
		{"in flight placement fills the node", inflight{{"full": {resized(flying, 1)}}}, []*structs.Allocation{full.Copy()}, nil, false},
		{"plan replaces the in flight placement", inflight{{"full": {resized(flying, 1)}}},
			[]*structs.Allocation{full.Copy(), resized(flying, 0)}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := &structs.Plan{Job: testJob}
			for _, a := range tc.stops {
				plan.AppendStoppedAlloc(a, "stop", "")
			}
			for _, a := range tc.allocs {
				plan.AppendAlloc(a)
			}
			fits, reason, err := evaluateNode(snapshot(t, s), tc.pending, plan, "full")
			if err != nil {
				t.Fatal(err)
			}
			if fits != tc.fits {
				t.Fatalf("fits = %v (%s), want %v", fits, reason, tc.fits)
			}
		})
	}
}

// referenceUsed is how the applier summed a node before the state kept
// node usage: every allocation on the node, the in-flight placements it
// does not hold, less what the plan stops or replaces, plus the plan's
// placements. The property test below holds usedAfter to it.
func referenceUsed(snap *state.StateSnapshot, pending inflight, nodeID string, stops, placements []*structs.Allocation, onlyUpdates bool) (structs.ComparableResources, string, error) {
	var used structs.ComparableResources
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return used, "", err
	}
	seen := map[string]bool{}
	for _, a := range existing {
		seen[a.ID] = true
	}
	for _, m := range pending {
		for _, a := range m[nodeID] {
			if !seen[a.ID] {
				seen[a.ID] = true
				existing = append(existing, a)
			}
		}
	}
	if onlyUpdates {
		for _, p := range placements {
			if !seen[p.ID] {
				return used, "node is draining or ineligible", nil
			}
		}
	}
	removed := map[string]bool{}
	for _, a := range stops {
		removed[a.ID] = true
	}
	for _, a := range placements {
		removed[a.ID] = true
	}
	for _, a := range existing {
		if !removed[a.ID] && !a.TerminalStatus() {
			used.Add(a.AllocatedResources.Comparable())
		}
	}
	for _, a := range placements {
		used.Add(a.AllocatedResources.Comparable())
	}
	return used, "", nil
}

// TestUsedAfterMatchesReference draws stored allocations (live and
// terminal, on two nodes), commits in flight and a plan that mixes new
// placements, in-place updates (of stored and in-flight allocations, some
// moved between nodes, some twice) and stops, and checks that usedAfter
// gives exactly what summing every allocation gives, whether it looks
// allocations up by ID or reads the node's allocations.
func TestUsedAfterMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nodes := []string{"n1", "n2"}
		s, err := state.NewStateStore()
		if err != nil {
			rt.Fatal(err)
		}
		if err := s.UpsertJob(1, testJob.Copy(), nil); err != nil {
			rt.Fatal(err)
		}
		var pool []*structs.Allocation // every allocation drawn, stored or not
		draw := func() *structs.Allocation {
			a := testAlloc(rapid.SampledFrom(nodes).Draw(rt, "node"),
				int64(rapid.IntRange(0, 300).Draw(rt, "cpu")), int64(rapid.IntRange(0, 300).Draw(rt, "mem")))
			switch rapid.IntRange(0, 5).Draw(rt, "status") {
			case 0:
				a.DesiredStatus = structs.AllocDesiredStatusStop
			case 1:
				a.ClientStatus = structs.AllocClientStatusFailed
			}
			pool = append(pool, a)
			return a
		}
		// variant returns a new allocation or a changed copy of a drawn one.
		variant := func() *structs.Allocation {
			if len(pool) == 0 || rapid.IntRange(0, 2).Draw(rt, "new") == 0 {
				return draw()
			}
			c := rapid.SampledFrom(pool).Draw(rt, "base").Copy()
			c.AllocatedResources.Tasks["t"].Cpu.CpuShares = int64(rapid.IntRange(0, 300).Draw(rt, "cpu2"))
			if rapid.IntRange(0, 4).Draw(rt, "move") == 0 {
				c.NodeID = rapid.SampledFrom(nodes).Draw(rt, "to")
			}
			if rapid.IntRange(0, 4).Draw(rt, "terminal") == 0 {
				c.ClientStatus = structs.AllocClientStatusComplete
			}
			return c
		}
		var stored []*structs.Allocation
		for range rapid.IntRange(0, 8).Draw(rt, "stored") {
			stored = append(stored, draw().Copy())
		}
		if err := s.UpsertAllocs(10, stored); err != nil {
			rt.Fatal(err)
		}
		var pending inflight
		for range rapid.IntRange(0, 3).Draw(rt, "commits") {
			m := map[string][]*structs.Allocation{}
			for range rapid.IntRange(0, 4).Draw(rt, "placed") {
				a := variant()
				m[a.NodeID] = append(m[a.NodeID], a)
			}
			pending = append(pending, m)
		}
		var stops, placements []*structs.Allocation
		for range rapid.IntRange(0, 3).Draw(rt, "stops") {
			stops = append(stops, rapid.SampledFrom(append(pool, draw())).Draw(rt, "stop"))
		}
		for range rapid.IntRange(1, 4).Draw(rt, "placements") {
			placements = append(placements, variant())
		}
		onlyUpdates := rapid.Bool().Draw(rt, "draining")
		snap, err := s.Snapshot()
		if err != nil {
			rt.Fatal(err)
		}
		for _, node := range nodes {
			want, wantReason, _ := referenceUsed(snap, pending, node, stops, placements, onlyUpdates)
			usage, err := snap.NodeUsage(nil, node)
			if err != nil {
				rt.Fatal(err)
			}
			for _, scan := range []bool{false, true} {
				held, err := newHeldOn(snap, node, scan)
				if err != nil {
					rt.Fatal(err)
				}
				got, gotReason, err := usedAfter(usage.Used, held, pending, stops, placements, onlyUpdates)
				if err != nil {
					rt.Fatal(err)
				}
				if gotReason != wantReason || (wantReason == "" && got != want) {
					rt.Fatalf("node %s, scan %v: used %+v (%q), reference %+v (%q)", node, scan, got, gotReason, want, wantReason)
				}
			}
		}
	})
}

// benchEvaluate stores nodes nodes holding perNode allocations each and
// measures EvaluatePlan of a plan placing perPlan new allocations on each.
func benchEvaluate(b *testing.B, nodes, perNode, perPlan int) {
	var ns []*structs.Node
	for i := 0; i < nodes; i++ {
		ns = append(ns, testNode(fmt.Sprintf("n%05d", i), int64(perNode+perPlan)*10+100, int64(perNode+perPlan)*10+100))
	}
	s := newStore(b, ns...)
	var existing []*structs.Allocation
	for _, n := range ns {
		for i := 0; i < perNode; i++ {
			existing = append(existing, testAlloc(n.ID, 10, 10))
		}
	}
	if err := s.UpsertAllocs(1000, existing); err != nil {
		b.Fatal(err)
	}
	plan := &structs.Plan{Job: testJob}
	for _, n := range ns {
		for i := 0; i < perPlan; i++ {
			plan.AppendAlloc(testAlloc(n.ID, 10, 10))
		}
	}
	snap := snapshot(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := EvaluatePlan(snap, plan)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.RejectedNodes) != 0 {
			b.Fatalf("rejected %v", res.RejectedNodes)
		}
	}
}

// BenchmarkEvaluatePlan100On100Busy: a plan of 100 placements, one on each
// of 100 nodes that hold 20 allocations each.
func BenchmarkEvaluatePlan100On100Busy(b *testing.B) { benchEvaluate(b, 100, 20, 1) }

// BenchmarkEvaluatePlanDense5kOn1: a plan of 5,000 placements on one node
// that holds 5,000 allocations.
func BenchmarkEvaluatePlanDense5kOn1(b *testing.B) { benchEvaluate(b, 1, 5000, 5000) }

// BenchmarkEvaluatePlan10OnDense5k: a plan of 10 placements on one node
// that holds 5,000 allocations: what each small plan pays for a dense node.
func BenchmarkEvaluatePlan10OnDense5k(b *testing.B) { benchEvaluate(b, 1, 5000, 10) }

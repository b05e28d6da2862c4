package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// dcNode is a nodeInfo in datacenter dc, for the iterator unit tests.
func dcNode(idx int, dc string) *nodeInfo {
	n := mock.Node()
	n.Datacenter = dc
	return &nodeInfo{node: n, idx: idx}
}

// TestSpreadSetEvenCounts: the histogram's least and most used counts
// match a recount after every random add and remove.
func TestSpreadSetEvenCounts(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
	ss := newSpreadSets(job, job.TaskGroups[0])[0]
	nodes := []*nodeInfo{dcNode(0, "a"), dcNode(1, "b"), dcNode(2, "c"), dcNode(3, "d")}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 5000; step++ {
		n := nodes[rng.IntN(len(nodes))]
		if rng.IntN(3) == 0 {
			ss.add(n, -1)
		} else {
			ss.add(n, 1)
		}
		var lo, hi int32
		inUse := 0
		for _, c := range ss.counts {
			if c < 0 {
				t.Fatalf("step %d: a value counted %d times", step, c)
			}
			if c == 0 {
				continue
			}
			inUse++
			if lo == 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
		if lo != ss.lo || hi != ss.hi || inUse != ss.inUse {
			t.Fatalf("step %d: counts %v: lo, hi, in use = %d, %d, %d; want %d, %d, %d", step, ss.counts, ss.lo, ss.hi, ss.inUse, lo, hi, inUse)
		}
	}
}

// TestSpreadSetScores: Nomad's scores, with and without targets.
func TestSpreadSetScores(t *testing.T) {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = 10
	a, b, c, x := dcNode(0, "dc1"), dcNode(1, "dc2"), dcNode(2, "dc3"), dcNode(3, "dc4")
	x.node.Datacenter = "dc4"

	t.Run("even", func(t *testing.T) {
		tg.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
		ss := newSpreadSets(job, tg)[0]
		if s := ss.score(a); s != 0 {
			t.Fatalf("nothing placed: %v, want 0", s)
		}
		ss.add(a, 1)
		// dc1 is used once, dc2 not at all: dc2 is below the minimum.
		if s := ss.score(b); s != 1 {
			t.Fatalf("unused value: %v, want 1", s)
		}
		if s := ss.score(a); s != -1 {
			t.Fatalf("even counts: %v, want -1", s)
		}
		ss.add(a, 1)
		ss.add(b, 1)
		// dc1: 2, dc2: 1. dc2 is at the minimum with the counts uneven.
		if s := ss.score(b); s != 1 {
			t.Fatalf("at the minimum: %v, want (2-1)/1", s)
		}
		if s := ss.score(a); s != -1 {
			t.Fatalf("above the minimum: %v, want (1-2)/1", s)
		}
		noDC := dcNode(4, "dc1")
		ss.target = parseTarget("${meta.zone}") // the node lacks it
		if s := ss.score(noDC); s != -1 {
			t.Fatalf("missing attribute: %v, want -1", s)
		}
	})
	t.Run("targets", func(t *testing.T) {
		tg.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 60,
			SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 30}}}}
		job.Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 40}}
		defer func() { job.Spreads = nil }()
		sets := newSpreadSets(job, tg)
		ss := sets[0]
		if ss.weight != 0.6 || sets[1].weight != 0.4 {
			t.Fatalf("weights %v, %v; want 0.6, 0.4", ss.weight, sets[1].weight)
		}
		// Wanted: dc1 5, dc2 3, the rest 2.
		if s := ss.score(a); s != (5.0-1)/5*0.6 {
			t.Fatalf("dc1 empty: %v", s)
		}
		for i := 0; i < 4; i++ {
			ss.add(a, 1)
		}
		if s := ss.score(a); s != 0 {
			t.Fatalf("dc1 at its last wanted: %v, want 0", s)
		}
		ss.add(a, 1)
		if s := ss.score(a); s != (5.0-6)/5*0.6 {
			t.Fatalf("dc1 over: %v", s)
		}
		if s := ss.score(c); s != (2.0-1)/2*0.6 {
			t.Fatalf("dc3 takes the rest: %v", s)
		}
		full := newSpreadSets(&structs.Job{}, &structs.TaskGroup{Count: 10, Spreads: []*structs.Spread{{
			Attribute: "${node.datacenter}", Weight: 50,
			SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 100}, {Value: "dc2", Percent: 0}}}}})[0]
		if s := full.score(c); s != -1 {
			t.Fatalf("a value no target wants, none left: %v, want -1", s)
		}
		if s := full.score(b); s != -1 {
			t.Fatalf("a 0%% target: %v, want -1", s)
		}
	})
}

// spreadCluster stores nodes per datacenter (dc1..dcN) and returns them.
func spreadCluster(t *testing.T, h *Harness, perDC ...int) []*structs.Node {
	var out []*structs.Node
	for d, k := range perDC {
		dc := "dc" + string(rune('1'+d))
		out = append(out, mockNodes(t, h, k, func(_ int, n *structs.Node) { n.Datacenter = dc })...)
	}
	return out
}

// countByDC counts the job's live allocations per node datacenter.
func countByDC(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) map[string]int {
	t.Helper()
	dc := map[string]string{}
	for _, n := range nodes {
		dc[n.ID] = n.Datacenter
	}
	live, _ := jobAllocs(t, h, job)
	out := map[string]int{}
	for _, a := range live {
		out[dc[a.NodeID]]++
	}
	return out
}

// TestSpreadPlacement: 9 nodes in 3 datacenters. An even spread places
// count 9 as 3/3/3; targets 50/30/20 place count 10 as 5/3/2; a scale-up
// from allocations already in one datacenter evens out. Each case runs
// over several evaluations (seeds).
func TestSpreadPlacement(t *testing.T) {
	cases := []struct {
		name     string
		count    int
		targets  []*structs.SpreadTarget
		existing int // allocations already running in dc1
		want     map[string]int
	}{
		{"even", 9, nil, 0, map[string]int{"dc1": 3, "dc2": 3, "dc3": 3}},
		{"targets", 10, []*structs.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 30}, {Value: "dc3", Percent: 20}},
			0, map[string]int{"dc1": 5, "dc2": 3, "dc3": 2}},
		{"scale up from one datacenter", 9, nil, 3, map[string]int{"dc1": 3, "dc2": 3, "dc3": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := 0; seed < 20; seed++ {
				h := testHarness(t)
				nodes := spreadCluster(t, h, 3, 3, 3)
				job := mock.Job()
				job.Datacenters = []string{"dc1", "dc2", "dc3"}
				tg := job.TaskGroups[0]
				tg.Count = tc.count
				tg.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: tc.targets}}
				job = addJob(t, h, job)
				for i := 0; i < tc.existing; i++ {
					addAllocs(t, h, mock.Alloc(job, nodes[i], i))
				}
				process(t, h, job, structs.EvalTriggerJobRegister)
				got := countByDC(t, h, job, nodes)
				if len(got) != len(tc.want) || got["dc1"] != tc.want["dc1"] || got["dc2"] != tc.want["dc2"] || got["dc3"] != tc.want["dc3"] {
					t.Fatalf("seed %d: placed %v, want %v", seed, got, tc.want)
				}
			}
		})
	}
}

// TestSpreadAcrossDestructiveUpdate: replacing all nine allocations of an
// evenly spread group (each stop freeing its value's count before the
// replacement is placed) keeps them 3/3/3.
func TestSpreadAcrossDestructiveUpdate(t *testing.T) {
	for seed := 0; seed < 10; seed++ {
		h := testHarness(t)
		nodes := spreadCluster(t, h, 3, 3, 3)
		job := mock.Job()
		job.Datacenters = []string{"dc1", "dc2", "dc3"}
		job.TaskGroups[0].Count = 9
		job.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
		job = addJob(t, h, job)
		process(t, h, job, structs.EvalTriggerJobRegister)
		job = updateJobT(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["run_for"] = "20s" })
		process(t, h, job, structs.EvalTriggerJobRegister)
		live, _ := jobAllocs(t, h, job)
		for _, a := range live {
			if a.JobVersion != job.Version {
				t.Fatalf("seed %d: %s not replaced", seed, a.Name)
			}
		}
		if got := countByDC(t, h, job, nodes); got["dc1"] != 3 || got["dc2"] != 3 || got["dc3"] != 3 {
			t.Fatalf("seed %d: after the update %v, want 3/3/3", seed, got)
		}
	}
}

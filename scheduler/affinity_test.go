package scheduler

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// nodesRank yields the given nodes with no score.
type nodesRank struct {
	nodes []*nodeInfo
	i     int
}

func (f *nodesRank) Next() (rankedNode, bool) {
	if f.i >= len(f.nodes) {
		return rankedNode{}, false
	}
	f.i++
	return rankedNode{node: f.nodes[f.i-1]}, true
}

func (f *nodesRank) Reset() { f.i = 0 }

// TestNodeAffinityIterator: the score is the matching weights over the
// sum of all weights' magnitudes; a node matching none is not scored.
func TestNodeAffinityIterator(t *testing.T) {
	h := testHarness(t)
	ctx, err := newEvalContext(h.State, nil, &structs.Evaluation{ID: "e"}, mock.Job(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	tg := ctx.job.TaskGroups[0]
	ctx.job.Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 50}}
	tg.Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "regexp", RTarget: "^r[12]$", Weight: -25}}
	tg.Tasks[0].Affinities = []*structs.Affinity{{LTarget: "${attr.os.name}", Operand: "is_set", Weight: 25}}
	dc1r1, dc2r3, dc2r1 := dcNode(0, "dc1"), dcNode(1, "dc2"), dcNode(2, "dc2")
	dc2r3.node.Meta = map[string]string{"rack": "r3"}
	dc2r1.node.Attributes = map[string]string{}
	src := &nodesRank{nodes: []*nodeInfo{dc1r1, dc2r3, dc2r1}}
	it := newNodeAffinityIterator(src, ctx, tg, nil)
	want := []struct {
		score float64
		n     int
	}{
		{(50 - 25 + 25) / 100.0, 1}, // all three match
		{25 / 100.0, 1},             // os.name only
		{-25 / 100.0, 1},            // rack only
	}
	for round := 0; round < 2; round++ { // the second round reads the cache
		it.Reset()
		for i, w := range want {
			r, ok := it.Next()
			if !ok || r.sum != w.score || r.n != w.n {
				t.Fatalf("round %d node %d: ok %v score %v (%d components), want %v", round, i, ok, r.sum, r.n, w.score)
			}
		}
	}
	// A node that matches nothing gets no score component.
	none := dcNode(3, "dc9")
	none.node.Attributes, none.node.Meta = map[string]string{}, nil
	it.src = &nodesRank{nodes: []*nodeInfo{none}}
	if r, ok := it.Next(); !ok || r.n != 0 {
		t.Fatalf("no match: %+v", r)
	}
	job := mock.Job()
	if newNodeAffinityIterator(src, &evalContext{job: job}, job.TaskGroups[0], nil) != nil {
		t.Fatal("a group without affinities has an affinity stage")
	}
}

// TestAffinityPlacement: a positive affinity pulls placements to the
// matching nodes, a negative one keeps them off; the allocations' metrics
// carry the scores under Nomad's names.
func TestAffinityPlacement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weight  int8
		count   int
		onMatch int // allocations wanted on the matching nodes
	}{
		{"positive", 100, 2, 2},
		{"negative", -100, 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := 0; seed < 10; seed++ {
				h := testHarness(t)
				nodes := mockNodes(t, h, 10, func(i int, n *structs.Node) {
					n.Meta = map[string]string{"rack": "r2"}
					if i < 2 {
						n.Meta["rack"] = "r1"
					}
				})
				job := mock.Job()
				tg := job.TaskGroups[0]
				tg.Count = tc.count
				tg.Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1", Weight: tc.weight}}
				job = addJob(t, h, job)
				process(t, h, job, structs.EvalTriggerJobRegister)
				live, _ := jobAllocs(t, h, job)
				if len(live) != tc.count {
					t.Fatalf("seed %d: %d placed, want %d", seed, len(live), tc.count)
				}
				match := 0
				for _, a := range live {
					if a.NodeID == nodes[0].ID || a.NodeID == nodes[1].ID {
						match++
					}
					checkScoreMeta(t, a.Metrics, structs.ScoreNodeAffinity)
				}
				if match != tc.onMatch {
					t.Fatalf("seed %d: %d allocations on the matching nodes, want %d", seed, match, tc.onMatch)
				}
			}
		})
	}
}

// checkScoreMeta checks that m lists scored nodes, best first, each with
// the base scores and extra.
func checkScoreMeta(t *testing.T, m *structs.AllocMetric, extra ...string) {
	t.Helper()
	if m == nil || len(m.ScoreMetaData) == 0 || len(m.ScoreMetaData) > maxScoreMeta {
		t.Fatalf("score metadata: %+v", m)
	}
	want := append([]string{structs.ScoreBinPack, structs.ScoreJobAntiAffinity, structs.ScoreReschedPenalty}, extra...)
	sort.Strings(want)
	for i, sm := range m.ScoreMetaData {
		var got []string
		for k := range sm.Scores {
			got = append(got, k)
		}
		sort.Strings(got)
		if !slices.Equal(got, want) || sm.NodeID == "" {
			t.Fatalf("node %d scores %v, want keys %v", i, sm.Scores, want)
		}
		if i > 0 && sm.NormScore > m.ScoreMetaData[i-1].NormScore {
			t.Fatalf("not best first: %v after %v", sm.NormScore, m.ScoreMetaData[i-1].NormScore)
		}
	}
}

// TestScoreMetaOnlyWithPreferences: a spread job's allocations carry the
// spread score; a job without affinities or spreads records none (it does
// not pay for it).
func TestScoreMetaOnlyWithPreferences(t *testing.T) {
	h := testHarness(t)
	spreadCluster(t, h, 2, 2)
	spread := mock.Job()
	spread.Datacenters = []string{"dc1", "dc2"}
	spread.TaskGroups[0].Count = 4
	spread.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
	spread = addJob(t, h, spread)
	process(t, h, spread, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, spread)
	for _, a := range live {
		checkScoreMeta(t, a.Metrics, structs.ScoreSpread)
	}
	plain := mock.Job()
	plain.TaskGroups[0].Count = 2
	plain = addJob(t, h, plain)
	process(t, h, plain, structs.EvalTriggerJobRegister)
	live, _ = jobAllocs(t, h, plain)
	for _, a := range live {
		if a.Metrics == nil || a.Metrics.ScoreMetaData != nil {
			t.Fatalf("plain job's metrics: %+v", a.Metrics)
		}
	}
}

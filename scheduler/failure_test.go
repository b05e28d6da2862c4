package scheduler

import (
	"maps"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestFailedPlacementMetrics(t *testing.T) {
	linux := "${attr.kernel.name} = linux"
	cases := []struct {
		name      string
		nodes     func(i int, n *structs.Node)
		job       func(j *structs.Job)
		placed    int
		metric    structs.AllocMetric // the fields checked
		classElig map[string]bool     // by NodeClass of the nodes (mock nodes share one computed class per NodeClass)
		escaped   bool
	}{
		{
			name:  "memory exhausted on every node",
			nodes: func(int, *structs.Node) {},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 3
				j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 9000
			},
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesExhausted: 4, DimensionExhausted: map[string]int{"memory": 4},
				ClassExhausted: map[string]int{"linux-medium": 4}, NodesAvailable: map[string]int{"dc1": 4}, CoalescedFailures: 2},
		},
		{
			name:  "cpu exhausted after some placements",
			nodes: func(int, *structs.Node) {},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 10
				j.TaskGroups[0].Tasks[0].Resources.CPU = 1900 // two per node (3900 MHz free)
			},
			placed: 8,
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesExhausted: 4, DimensionExhausted: map[string]int{"cpu": 4},
				ClassExhausted: map[string]int{"linux-medium": 4}, NodesAvailable: map[string]int{"dc1": 4}, CoalescedFailures: 1},
		},
		{
			name: "constraint filters every node",
			nodes: func(i int, n *structs.Node) {
				n.Attributes["kernel.name"] = "windows"
				n.NodeClass = "win"
			},
			job: func(j *structs.Job) { j.TaskGroups[0].Count = 2 },
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesFiltered: 4, ConstraintFiltered: map[string]int{linux: 4},
				ClassFiltered: map[string]int{"win": 4}, NodesAvailable: map[string]int{"dc1": 4}, CoalescedFailures: 1},
			classElig: map[string]bool{"win": false},
		},
		{
			name: "filtered and exhausted",
			nodes: func(i int, n *structs.Node) {
				if i < 2 {
					n.Attributes["kernel.name"] = "darwin"
					n.NodeClass = "mac"
				}
			},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 1
				j.TaskGroups[0].Tasks[0].Resources.CPU = 5000
			},
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesFiltered: 2, NodesExhausted: 2,
				ConstraintFiltered: map[string]int{linux: 2}, ClassFiltered: map[string]int{"mac": 2},
				DimensionExhausted: map[string]int{"cpu": 2}, ClassExhausted: map[string]int{"linux-medium": 2},
				NodesAvailable: map[string]int{"dc1": 4}},
			classElig: map[string]bool{"mac": false, "linux-medium": true},
		},
		{
			name:  "distinct_hosts",
			nodes: func(int, *structs.Node) {},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 6
				j.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts}}
			},
			placed: 4,
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesFiltered: 4, ConstraintFiltered: map[string]int{"distinct_hosts": 4},
				ClassFiltered: map[string]int{"linux-medium": 4}, NodesAvailable: map[string]int{"dc1": 4}, CoalescedFailures: 1},
			classElig: map[string]bool{"linux-medium": true},
			escaped:   true,
		},
		{
			name: "host volume on no node",
			nodes: func(i int, n *structs.Node) {
				// One node has the volume, read-only: the group writes.
				if i == 0 {
					n.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data", ReadOnly: true}}
				}
			},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 2
				j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: "host", Source: "data"}}
			},
			metric: structs.AllocMetric{NodesEvaluated: 4, NodesFiltered: 4,
				ConstraintFiltered: map[string]int{`missing compatible host volume "data" (writable)`: 4},
				ClassFiltered:      map[string]int{"linux-medium": 4}, NodesAvailable: map[string]int{"dc1": 4}, CoalescedFailures: 1},
			classElig: map[string]bool{"linux-medium": true},
			escaped:   true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			mockNodes(t, h, 4, tc.nodes)
			j := mock.Job()
			tc.job(j)
			job := addJob(t, h, j)
			process(t, h, job, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, job)
			if len(live) != tc.placed {
				t.Fatalf("placed %d, want %d", len(live), tc.placed)
			}
			e := lastEval(t, h)
			count := job.TaskGroups[0].Count
			if e.Status != structs.EvalStatusComplete || e.QueuedAllocations["web"] != count-tc.placed {
				t.Fatalf("eval %s queued %v, want complete with %d queued", e.Status, e.QueuedAllocations, count-tc.placed)
			}
			m := e.FailedTGAllocs["web"]
			if m == nil {
				t.Fatalf("no failed allocation metric")
			}
			w := tc.metric
			if m.NodesEvaluated != w.NodesEvaluated || m.NodesFiltered != w.NodesFiltered ||
				m.NodesExhausted != w.NodesExhausted || m.CoalescedFailures != w.CoalescedFailures {
				t.Fatalf("metric evaluated/filtered/exhausted/coalesced = %d/%d/%d/%d, want %d/%d/%d/%d",
					m.NodesEvaluated, m.NodesFiltered, m.NodesExhausted, m.CoalescedFailures,
					w.NodesEvaluated, w.NodesFiltered, w.NodesExhausted, w.CoalescedFailures)
			}
			for _, pair := range []struct {
				field     string
				got, want map[string]int
			}{
				{"ConstraintFiltered", m.ConstraintFiltered, w.ConstraintFiltered},
				{"ClassFiltered", m.ClassFiltered, w.ClassFiltered},
				{"DimensionExhausted", m.DimensionExhausted, w.DimensionExhausted},
				{"ClassExhausted", m.ClassExhausted, w.ClassExhausted},
				{"NodesAvailable", m.NodesAvailable, w.NodesAvailable},
			} {
				if !maps.Equal(pair.got, pair.want) {
					t.Fatalf("%s = %v, want %v", pair.field, pair.got, pair.want)
				}
			}

			// A blocked eval records what could help.
			if len(h.CreateEvals) != 1 {
				t.Fatalf("%d evals created, want the blocked one", len(h.CreateEvals))
			}
			b := h.CreateEvals[0]
			if b.Status != structs.EvalStatusBlocked || e.BlockedEval != b.ID || b.PreviousEval != e.ID ||
				b.TriggeredBy != structs.EvalTriggerQueuedAllocs || b.FailedTGAllocs["web"] == nil {
				t.Fatalf("blocked eval %+v (eval.BlockedEval %q)", b, e.BlockedEval)
			}
			if b.EscapedComputedClass != tc.escaped {
				t.Fatalf("escaped = %v, want %v", b.EscapedComputedClass, tc.escaped)
			}
			if tc.classElig != nil {
				nodes, _ := h.State.Nodes(nil)
				want := map[string]bool{}
				for _, n := range nodes {
					if v, ok := tc.classElig[n.NodeClass]; ok {
						want[n.Class()] = v
					}
				}
				if !maps.Equal(b.ClassEligibility, want) {
					t.Fatalf("class eligibility %v, want %v", b.ClassEligibility, want)
				}
			}
		})
	}
}

func TestBlockedEvalIsReblocked(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 2)
	j := mock.Job()
	j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 9000
	job := addJob(t, h, j)
	e := mock.Eval(job)
	e.Status = structs.EvalStatusBlocked
	if err := h.Process(e); err != nil {
		t.Fatal(err)
	}
	if len(h.ReblockEvals) != 1 || len(h.CreateEvals) != 0 || len(h.Evals) != 0 {
		t.Fatalf("reblocks %d creates %d updates %d; want only a reblock", len(h.ReblockEvals), len(h.CreateEvals), len(h.Evals))
	}
	r := h.ReblockEvals[0]
	if r.ID != e.ID || r.Status != structs.EvalStatusBlocked || len(r.ClassEligibility) == 0 || r.FailedTGAllocs["web"] == nil {
		t.Fatalf("reblocked eval %+v", r)
	}

	// With room again, the blocked eval completes.
	mockNodes(t, h, 1, func(_ int, n *structs.Node) {
		n.NodeResources.Memory.MemoryMB = 200000
		n.NodeResources.Cpu.CpuShares = 20000
	})
	h.ReblockEvals = nil
	e.Status = structs.EvalStatusBlocked
	if err := h.Process(e); err != nil {
		t.Fatal(err)
	}
	if got := lastEval(t, h); got.Status != structs.EvalStatusComplete || len(h.ReblockEvals) != 0 {
		t.Fatalf("unblocked eval ended %s, %d reblocks", got.Status, len(h.ReblockEvals))
	}
}

func TestDistinctProperty(t *testing.T) {
	// Limits checked on the result; scope "job" counts all groups together.
	type limits struct {
		perRack  int
		perNode  int
		jobScope bool
	}
	cases := []struct {
		name   string
		job    func(j *structs.Job)
		placed int
		limits limits
	}{
		{"group, limit 1", func(j *structs.Job) {
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty}}
		}, 3, limits{perRack: 1}},
		{"group, limit 2", func(j *structs.Job) {
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty, RTarget: "2"}}
		}, 6, limits{perRack: 2}},
		{"job level counts every group", func(j *structs.Job) {
			j.Constraints = append(j.Constraints, &structs.Constraint{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty})
			g2 := j.TaskGroups[0].Copy()
			g2.Name = "api"
			j.TaskGroups = append(j.TaskGroups, g2)
		}, 3, limits{perRack: 1, jobScope: true}},
		{"job level distinct_hosts counts every group", func(j *structs.Job) {
			j.Constraints = append(j.Constraints, &structs.Constraint{Operand: structs.ConstraintDistinctHosts})
			g2 := j.TaskGroups[0].Copy()
			g2.Name = "api"
			j.TaskGroups = append(j.TaskGroups, g2)
		}, 7, limits{perNode: 1, jobScope: true}},
		{"group level distinct_hosts is per group", func(j *structs.Job) {
			for _, name := range []string{"api"} {
				g2 := j.TaskGroups[0].Copy()
				g2.Name = name
				j.TaskGroups = append(j.TaskGroups, g2)
			}
			for _, tg := range j.TaskGroups {
				tg.Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts}}
			}
		}, 14, limits{perNode: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			// 7 nodes on racks r0..r2 (one node has no rack).
			mockNodes(t, h, 7, func(i int, n *structs.Node) {
				if i == 6 {
					delete(n.Meta, "rack")
					return
				}
				n.Meta["rack"] = []string{"r0", "r1", "r2"}[i%3]
			})
			j := mock.Job()
			j.TaskGroups[0].Count = 10
			tc.job(j)
			job := addJob(t, h, j)
			process(t, h, job, structs.EvalTriggerJobRegister)
			live, _ := jobAllocs(t, h, job)
			if len(live) != tc.placed {
				t.Fatalf("placed %d, want %d", len(live), tc.placed)
			}
			nodes := map[string]*structs.Node{}
			all, _ := h.State.Nodes(nil)
			for _, n := range all {
				nodes[n.ID] = n
			}
			perRack, perNode := map[string]int{}, map[string]int{}
			for _, a := range live {
				scope := a.TaskGroup
				if tc.limits.jobScope {
					scope = "job"
				}
				rack, ok := nodes[a.NodeID].Meta["rack"]
				if tc.limits.perRack > 0 && !ok {
					t.Fatalf("%s placed on a node without the property", a.Name)
				}
				perRack[scope+"/"+rack]++
				perNode[scope+"/"+a.NodeID]++
			}
			for k, n := range perRack {
				if tc.limits.perRack > 0 && n > tc.limits.perRack {
					t.Fatalf("%d allocs on rack %s, limit %d", n, k, tc.limits.perRack)
				}
			}
			for k, n := range perNode {
				if tc.limits.perNode > 0 && n > tc.limits.perNode {
					t.Fatalf("%d allocs on node %s, limit %d", n, k, tc.limits.perNode)
				}
			}
		})
	}
}

package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// indexesOf returns the instance indexes of allocs, sorted.
func indexesOf(allocs []*structs.Allocation) []int {
	out := make([]int, len(allocs))
	for i, a := range allocs {
		out[i] = allocIndex(a.Name)
	}
	slices.Sort(out)
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestServicePlacement(t *testing.T) {
	cases := []struct {
		name     string
		nodes    func(t *testing.T, h *Harness) []*structs.Node
		job      func(j *structs.Job)
		existing []int                                // instance indexes already running
		wantIdx  []int                                // indexes placed by this eval
		onNodes  func(nodes []*structs.Node) []string // nodes allowed to receive placements; nil: any
	}{
		{
			name:    "places count",
			nodes:   func(t *testing.T, h *Harness) []*structs.Node { return mockNodes(t, h, 5) },
			job:     func(j *structs.Job) { j.TaskGroups[0].Count = 10 },
			wantIdx: seq(0, 10),
		},
		{
			name: "only ready eligible nodes in the job's datacenters",
			nodes: func(t *testing.T, h *Harness) []*structs.Node {
				return mockNodes(t, h, 6, func(i int, n *structs.Node) {
					switch i {
					case 1:
						n.SchedulingEligibility = structs.NodeSchedulingIneligible
					case 2:
						n.Drain = true
						n.SchedulingEligibility = structs.NodeSchedulingIneligible
					case 3:
						n.Status = structs.NodeStatusDown
					case 4:
						n.Status = structs.NodeStatusInit
					case 5:
						n.Datacenter = "dc2"
					}
				})
			},
			job:     func(j *structs.Job) { j.TaskGroups[0].Count = 4 },
			wantIdx: seq(0, 4),
			onNodes: func(nodes []*structs.Node) []string { return []string{nodes[0].ID} },
		},
		{
			name: "datacenter wildcard",
			nodes: func(t *testing.T, h *Harness) []*structs.Node {
				return mockNodes(t, h, 3, func(i int, n *structs.Node) {
					n.Datacenter = []string{"us-east-1", "us-west-2", "eu-west-1"}[i]
				})
			},
			job:     func(j *structs.Job) { j.Datacenters = []string{"us-*"}; j.TaskGroups[0].Count = 6 },
			wantIdx: seq(0, 6),
			onNodes: func(nodes []*structs.Node) []string { return []string{nodes[0].ID, nodes[1].ID} },
		},
		{
			name: "missing driver",
			nodes: func(t *testing.T, h *Harness) []*structs.Node {
				return mockNodes(t, h, 2, func(i int, n *structs.Node) {
					if i == 0 {
						delete(n.Drivers, "mock")
						delete(n.Attributes, "driver.mock")
					}
				})
			},
			job:     func(j *structs.Job) { j.TaskGroups[0].Count = 3 },
			wantIdx: seq(0, 3),
			onNodes: func(nodes []*structs.Node) []string { return []string{nodes[1].ID} },
		},
		{
			name: "group and task constraints",
			nodes: func(t *testing.T, h *Harness) []*structs.Node {
				return mockNodes(t, h, 4, func(i int, n *structs.Node) {
					n.Meta["rack"] = []string{"r1", "r2", "r2", "r3"}[i]
					n.Attributes["cpu.numcores"] = []string{"4", "8", "2", "8"}[i]
				})
			},
			job: func(j *structs.Job) {
				j.TaskGroups[0].Count = 4
				j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "!=", RTarget: "r3"}}
				j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${attr.cpu.numcores}", Operand: ">=", RTarget: "4"}}
			},
			wantIdx: seq(0, 4),
			onNodes: func(nodes []*structs.Node) []string { return []string{nodes[0].ID, nodes[1].ID} },
		},
		{
			name:     "fills the lowest free indexes",
			nodes:    func(t *testing.T, h *Harness) []*structs.Node { return mockNodes(t, h, 3) },
			job:      func(j *structs.Job) { j.TaskGroups[0].Count = 6 },
			existing: []int{0, 2, 5},
			wantIdx:  []int{1, 3, 4},
		},
		{
			name:     "at count: nothing to do",
			nodes:    func(t *testing.T, h *Harness) []*structs.Node { return mockNodes(t, h, 3) },
			job:      func(j *structs.Job) { j.TaskGroups[0].Count = 2 },
			existing: []int{0, 1},
			wantIdx:  nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := tc.nodes(t, h)
			j := mock.Job()
			tc.job(j)
			job := addJob(t, h, j)
			for _, i := range tc.existing {
				addAllocs(t, h, mock.Alloc(job, nodes[0], i))
			}
			process(t, h, job, structs.EvalTriggerJobRegister)

			var placed []*structs.Allocation
			for _, p := range h.Plans {
				placed = append(placed, PlanAllocs(p)...)
			}
			if got := indexesOf(placed); !slices.Equal(got, tc.wantIdx) {
				t.Fatalf("placed indexes %v, want %v", got, tc.wantIdx)
			}
			if tc.wantIdx == nil && len(h.Plans) != 0 {
				t.Fatalf("submitted %d plans for nothing", len(h.Plans))
			}
			if tc.onNodes != nil {
				allowed := tc.onNodes(nodes)
				for _, a := range placed {
					if !slices.Contains(allowed, a.NodeID) {
						t.Fatalf("%s placed on %s, allowed %v", a.Name, a.NodeID, allowed)
					}
				}
			}
			live, _ := jobAllocs(t, h, job)
			if len(live) != job.TaskGroups[0].Count {
				t.Fatalf("live allocs %d, want %d", len(live), job.TaskGroups[0].Count)
			}
			for _, a := range placed {
				if a.Job != nil {
					t.Fatalf("placement carries its own job copy; the plan carries it once")
				}
				if a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientStatus != structs.AllocClientStatusPending {
					t.Fatalf("new alloc statuses %s/%s", a.DesiredStatus, a.ClientStatus)
				}
				if r := a.AllocatedResources.Tasks["web"]; r == nil || r.Cpu.CpuShares != 500 || r.Memory.MemoryMB != 256 {
					t.Fatalf("allocated resources %+v", r)
				}
				if a.Metrics == nil || a.Metrics.NodesEvaluated == 0 {
					t.Fatalf("placement without metrics")
				}
			}
			e := lastEval(t, h)
			if e.Status != structs.EvalStatusComplete || e.QueuedAllocations["web"] != 0 || len(e.FailedTGAllocs) != 0 {
				t.Fatalf("eval %s queued %v failed %v", e.Status, e.QueuedAllocations, e.FailedTGAllocs)
			}
		})
	}
}

func TestServiceSpreadsWithAntiAffinity(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 3)
	j := mock.Job()
	j.TaskGroups[0].Count = 3
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	seen := map[string]bool{}
	for _, a := range live {
		seen[a.NodeID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("3 allocations on %d nodes; anti-affinity should spread them", len(seen))
	}
}

func TestBinPackPrefersFullerNode(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2)
	other := mock.Job()
	other.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 3000, MemoryMB: 6000}
	other = addJob(t, h, other)
	addAllocs(t, h, mock.Alloc(other, nodes[0], 0))
	j := mock.Job()
	j.TaskGroups[0].Count = 1
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 1 || live[0].NodeID != nodes[0].ID {
		t.Fatalf("placed on %v, want the busier node %s", live, nodes[0].ID)
	}
}

func TestPlacementIsDeterministicPerEval(t *testing.T) {
	nodes := make([]*structs.Node, 20)
	for i := range nodes {
		nodes[i] = mock.Node()
	}
	j := mock.Job()
	j.TaskGroups[0].Count = 15
	eval := mock.Eval(j)
	run := func() map[string]string {
		h := testHarness(t)
		for _, n := range nodes {
			addNodes(t, h, n.Copy())
		}
		job := addJob(t, h, j.Copy())
		e := eval.Copy()
		e.JobModifyIndex = job.JobModifyIndex
		if err := h.Process(e); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, a := range PlanAllocs(h.Plans[0]) {
			out[a.Name] = a.NodeID
		}
		return out
	}
	a, b := run(), run()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same eval, same state, different placements:\n%v\n%v", a, b)
	}
}

func TestBatchPlacement(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 4)
	j := mock.BatchJob()
	j.TaskGroups[0].Count = 7
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if got := indexesOf(live); !slices.Equal(got, seq(0, 7)) {
		t.Fatalf("batch placed %v", got)
	}
}

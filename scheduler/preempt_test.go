package scheduler

import (
	"slices"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// setConfig stores a scheduler configuration.
func setConfig(t *testing.T, h *Harness, c *structs.SchedulerConfiguration) {
	t.Helper()
	if err := h.State.SetSchedulerConfig(h.NextIndex(), c, false); err != nil {
		t.Fatal(err)
	}
}

// memJob is a service job of count allocations asking memMB each (and
// little CPU), at the given priority.
func memJob(priority, count int, memMB int) *structs.Job {
	j := mock.Job()
	j.Priority = priority
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: memMB}
	return j
}

// placeOn stores count allocations of job (stored first) on node, from
// instance index first on.
func placeOn(t *testing.T, h *Harness, job *structs.Job, node *structs.Node, first, count int) []*structs.Allocation {
	t.Helper()
	out := make([]*structs.Allocation, count)
	for i := range out {
		out[i] = mock.Alloc(job, node, first+i)
	}
	addAllocs(t, h, out...)
	return out
}

// preemptionCluster builds node A (7936 MB usable) holding priority-50
// allocations of 3500, 1000, 1000, 1000 and 1000 MB (436 MB free), and
// node B full of a priority-75 job's allocations. A 5000 MB placement
// then fits only by evicting; on A the fewest victims are three (the
// 3500 and two 1000), and nothing on B may go for a priority-80 job.
func preemptionCluster(t *testing.T, h *Harness) (a *structs.Node, big *structs.Allocation, small []*structs.Allocation, low *structs.Job) {
	t.Helper()
	nodes := mockNodes(t, h, 2)
	a = nodes[0]
	lowBig := addJob(t, h, memJob(50, 1, 3500))
	big = placeOn(t, h, lowBig, a, 0, 1)[0]
	low = addJob(t, h, memJob(50, 4, 1000))
	small = placeOn(t, h, low, a, 0, 4)
	mid := addJob(t, h, memJob(75, 2, 3968))
	placeOn(t, h, mid, nodes[1], 0, 2)
	return a, big, small, low
}

// TestPreemptionEvictsFewest: with service preemption enabled, a
// priority-80 job that fits only by evicting priority-50 allocations
// evicts exactly the fewest needed (three), marks each evicted with the
// preempting allocation, lists them on the new allocation, and leaves
// the priority-75 allocations alone.
func TestPreemptionEvictsFewest(t *testing.T) {
	h := testHarness(t)
	setConfig(t, h, &structs.SchedulerConfiguration{PreemptionConfig: structs.PreemptionConfig{ServiceSchedulerEnabled: true}})
	a, big, small, _ := preemptionCluster(t, h)
	high := addJob(t, h, memJob(80, 1, 5000))
	process(t, h, high, structs.EvalTriggerJobRegister)

	if e := lastEval(t, h); e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("eval %s, failed %v", e.Status, e.FailedTGAllocs)
	}
	if len(h.Plans) != 1 {
		t.Fatalf("%d plans", len(h.Plans))
	}
	plan := h.Plans[0]
	placed := PlanAllocs(plan)
	if len(placed) != 1 || placed[0].NodeID != a.ID {
		t.Fatalf("placements %+v", placed)
	}
	evicted := plan.NodePreemptions[a.ID]
	if len(plan.NodePreemptions) != 1 || len(evicted) != 3 {
		t.Fatalf("preemptions: %d nodes, %d on A (want 3)", len(plan.NodePreemptions), len(evicted))
	}
	var ids []string
	smalls := 0
	for _, v := range evicted {
		ids = append(ids, v.ID)
		if v.DesiredStatus != structs.AllocDesiredStatusEvict || v.PreemptedByAllocation != placed[0].ID {
			t.Fatalf("victim %s: desired %s by %q", v.ID, v.DesiredStatus, v.PreemptedByAllocation)
		}
		if slices.ContainsFunc(small, func(s *structs.Allocation) bool { return s.ID == v.ID }) {
			smalls++
		}
	}
	if !slices.Contains(ids, big.ID) || smalls != 2 {
		t.Fatalf("victims %v: want the 3500 MB one and two of 1000 MB", ids)
	}
	slices.Sort(ids)
	got := slices.Sorted(slices.Values(placed[0].PreemptedAllocations))
	if !slices.Equal(ids, got) {
		t.Fatalf("PreemptedAllocations %v, want %v", got, ids)
	}
	// Applied: the victims are evicted in the state, with their preemptor.
	for _, id := range ids {
		stored, err := h.State.AllocByID(nil, id)
		if err != nil || stored.DesiredStatus != structs.AllocDesiredStatusEvict || stored.PreemptedByAllocation != placed[0].ID {
			t.Fatalf("stored victim %+v %v", stored, err)
		}
	}
	if u, _ := h.State.NodeUsage(nil, a.ID); u.Used.MemoryMB != 5000+2*1000 {
		t.Fatalf("node A uses %d MB after preemption", u.Used.MemoryMB)
	}
}

// TestPreemptionNeedsPriorityGap: a priority-55 job (5 above its
// victims) evicts nothing and blocks; so does a priority-80 job while
// service preemption is off (the default).
func TestPreemptionNeedsPriorityGap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		priority int
		enabled  bool
	}{{"priority 55", 55, true}, {"preemption off", 80, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			if tc.enabled {
				setConfig(t, h, &structs.SchedulerConfiguration{PreemptionConfig: structs.PreemptionConfig{ServiceSchedulerEnabled: true}})
			}
			preemptionCluster(t, h)
			job := addJob(t, h, memJob(tc.priority, 1, 5000))
			process(t, h, job, structs.EvalTriggerJobRegister)
			if len(h.Plans) != 0 {
				t.Fatalf("a plan was submitted: %+v", h.Plans[0].NodePreemptions)
			}
			e := lastEval(t, h)
			if e.FailedTGAllocs["web"] == nil || e.BlockedEval == "" {
				t.Fatalf("want a failed placement and a blocked eval: %+v", e)
			}
		})
	}
}

// TestPreemptionSystemJob: system jobs preempt by default (Nomad's
// default configuration): a priority-80 system job evicts one
// priority-50 allocation on a full node.
func TestPreemptionSystemJob(t *testing.T) {
	h := testHarness(t)
	node := mockNodes(t, h, 1)[0]
	low := addJob(t, h, memJob(50, 7, 1100))
	placeOn(t, h, low, node, 0, 7) // 7700 of 7936 MB
	sys := mock.SystemJob()
	sys.Priority = 80
	sys.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 1000}
	sys = addJob(t, h, sys)
	process(t, h, sys, structs.EvalTriggerJobRegister)
	if len(h.Plans) != 1 {
		t.Fatalf("%d plans", len(h.Plans))
	}
	if v := h.Plans[0].NodePreemptions[node.ID]; len(v) != 1 || v[0].JobID != low.ID {
		t.Fatalf("preemptions %+v", v)
	}
}

// TestSpreadAlgorithm: binpack puts an allocation beside the existing one;
// with the spread algorithm it goes to the empty node.
func TestSpreadAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		algo      structs.SchedulerAlgorithm
		wantEmpty bool
	}{{structs.SchedulerAlgorithmBinpack, false}, {structs.SchedulerAlgorithmSpread, true}} {
		t.Run(string(tc.algo), func(t *testing.T) {
			h := testHarness(t)
			setConfig(t, h, &structs.SchedulerConfiguration{SchedulerAlgorithm: tc.algo})
			nodes := mockNodes(t, h, 2)
			other := addJob(t, h, memJob(50, 1, 4000))
			placeOn(t, h, other, nodes[0], 0, 1)
			job := addJob(t, h, memJob(50, 1, 1000))
			process(t, h, job, structs.EvalTriggerJobRegister)
			placed := PlanAllocs(h.Plans[0])
			if len(placed) != 1 {
				t.Fatalf("placed %d", len(placed))
			}
			if onEmpty := placed[0].NodeID == nodes[1].ID; onEmpty != tc.wantEmpty {
				t.Fatalf("%s: placed on the empty node = %v", tc.algo, onEmpty)
			}
		})
	}
}

// TestNodePoolPlacement: a job places only on the nodes of its pool;
// "all" places anywhere; a job of a pool without nodes fails with the
// node pool reason.
func TestNodePoolPlacement(t *testing.T) {
	for _, tc := range []struct {
		pool  string
		nodes []string // pools of the nodes it may use, by index
	}{{"default", []string{"default"}}, {"gpu", []string{"gpu"}}, {"all", []string{"default", "gpu"}}} {
		t.Run(tc.pool, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 4, func(i int, n *structs.Node) {
				if i%2 == 1 {
					n.NodePool = "gpu"
				}
			})
			job := memJob(50, 8, 100)
			job.NodePool = tc.pool
			job = addJob(t, h, job)
			process(t, h, job, structs.EvalTriggerJobRegister)
			placed := PlanAllocs(h.Plans[0])
			if len(placed) != 8 {
				t.Fatalf("placed %d", len(placed))
			}
			used := map[string]bool{}
			for _, a := range placed {
				for _, n := range nodes {
					if n.ID == a.NodeID {
						used[n.NodePool] = true
						if !slices.Contains(tc.nodes, n.NodePool) {
							t.Fatalf("placed on a node of pool %q", n.NodePool)
						}
					}
				}
			}
			if len(used) != len(tc.nodes) {
				t.Fatalf("pools used %v, want %v", used, tc.nodes)
			}
		})
	}
	h := testHarness(t)
	mockNodes(t, h, 2)
	job := memJob(50, 1, 100)
	job.NodePool = "empty"
	job = addJob(t, h, job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	e := lastEval(t, h)
	if m := e.FailedTGAllocs["web"]; m == nil || m.ConstraintFiltered[reasonNodePool] != 2 {
		t.Fatalf("failure metric %+v", e.FailedTGAllocs["web"])
	}
}

// TestPreemptionFreesStaticPort: a priority-80 group whose static port a
// priority-40 allocation holds (resources to spare) evicts that one
// allocation, and not the other low-priority one, and gets the port.
func TestPreemptionFreesStaticPort(t *testing.T) {
	h := testHarness(t)
	setConfig(t, h, &structs.SchedulerConfiguration{PreemptionConfig: structs.PreemptionConfig{ServiceSchedulerEnabled: true}})
	mockNodes(t, h, 1)
	static := func() *structs.NetworkResource {
		return &structs.NetworkResource{ReservedPorts: []structs.Port{{Label: "http", Value: 9090}}}
	}
	holder := portJob(1, static())
	holder.Priority = 40
	holder = addJob(t, h, holder)
	process(t, h, holder, structs.EvalTriggerJobRegister)
	other := memJob(40, 1, 100)
	other = addJob(t, h, other)
	process(t, h, other, structs.EvalTriggerJobRegister)
	held, _ := jobAllocs(t, h, holder)
	if len(held) != 1 {
		t.Fatalf("holder placed %d", len(held))
	}

	high := portJob(1, static())
	high.Priority = 80
	high = addJob(t, h, high)
	process(t, h, high, structs.EvalTriggerJobRegister)
	plan := h.Plans[len(h.Plans)-1]
	placed := PlanAllocs(plan)
	if len(placed) != 1 || placed[0].JobID != high.ID {
		t.Fatalf("placements %+v", placed)
	}
	var evicted []*structs.Allocation
	for _, v := range plan.NodePreemptions {
		evicted = append(evicted, v...)
	}
	if len(evicted) != 1 || evicted[0].ID != held[0].ID {
		t.Fatalf("evicted %+v, want the port holder only", evicted)
	}
	if p := placed[0].AllocatedResources.Shared.Ports; len(p) != 1 || p[0].Value != 9090 {
		t.Fatalf("ports %+v", p)
	}
}

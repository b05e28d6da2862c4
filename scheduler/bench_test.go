package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// acceptPlanner commits every plan without applying it anywhere, so a
// benchmark measures the scheduler alone.
type acceptPlanner struct {
	placed int
}

func (p *acceptPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	for _, as := range plan.NodeAllocation {
		p.placed += len(as)
	}
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation, AllocIndex: 1}, nil, nil
}
func (p *acceptPlanner) UpdateEval(*structs.Evaluation) error  { return nil }
func (p *acceptPlanner) CreateEval(*structs.Evaluation) error  { return nil }
func (p *acceptPlanner) ReblockEval(*structs.Evaluation) error { return nil }

// benchPlace runs one service evaluation of job over the harness's state
// per iteration and reports placements per second.
func benchPlace(b *testing.B, h *Harness, job *structs.Job, want int) {
	snap, err := h.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	logger := hclog.NewNullLogger()
	now := func() time.Time { return HarnessEpoch }
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p := &acceptPlanner{}
		e := mock.Eval(job)
		if err := NewServiceScheduler(logger, snap, p, now).Process(e); err != nil {
			b.Fatal(err)
		}
		if p.placed != want {
			b.Fatalf("placed %d, want %d", p.placed, want)
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(want*b.N)/elapsed.Seconds(), "placements/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(want*b.N), "ns/placement")
}

// BenchmarkServiceSchedulerPlace10kOn5kNodes: one service job of count
// 10,000 with two constraints (an equality and a version range) over
// 5,000 nodes.
func BenchmarkServiceSchedulerPlace10kOn5kNodes(b *testing.B) { benchPlace10kOn5k(b, "", 10000) }

// BenchmarkServiceSchedulerPlace10kOn5kNodesPorts is the same with a
// dynamic port per allocation: compare its ns/placement with the above.
func BenchmarkServiceSchedulerPlace10kOn5kNodesPorts(b *testing.B) {
	benchPlace10kOn5k(b, "ports", 10000)
}

// BenchmarkServiceSchedulerPlace10kOn5kNodesSpread is the same with the
// nodes in three datacenters and a spread over ${node.datacenter}: the
// spread stage must stay O(1) per node, whatever the allocations already
// placed (compare its ns/placement with the first's; the difference is
// mostly the score metadata).
func BenchmarkServiceSchedulerPlace10kOn5kNodesSpread(b *testing.B) {
	benchPlace10kOn5k(b, "spread", 10000)
}

// BenchmarkServiceSchedulerPlace10kOn5kNodesAffinity is the same with an
// affinity for one datacenter of three. A group with affinities ranks at
// least affinityLimit nodes per placement, so a placement costs more than
// without, but not more with the cluster's size or the group's count.
func BenchmarkServiceSchedulerPlace10kOn5kNodesAffinity(b *testing.B) {
	benchPlace10kOn5k(b, "affinity", 10000)
}

// benchPlace10kOn5k places count over 5,000 nodes; variant adds ports,
// a spread or an affinity.
func benchPlace10kOn5k(b *testing.B, variant string, count int) {
	h := testHarness(b)
	mockNodes(b, h, 5000, func(i int, n *structs.Node) {
		n.Attributes["os.version"] = []string{"20.04", "22.04", "24.04"}[i%3]
		if variant == "spread" || variant == "affinity" {
			n.Datacenter = []string{"dc1", "dc2", "dc3"}[i%3]
		}
	})
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = count
	switch variant {
	case "spread":
		job.Datacenters = []string{"dc1", "dc2", "dc3"}
		tg.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
	case "affinity":
		job.Datacenters = []string{"dc1", "dc2", "dc3"}
		tg.Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc2", Weight: 50}}
	}
	tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
	job.Constraints = []*structs.Constraint{
		{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="},
		{LTarget: "${attr.os.version}", RTarget: ">= 20.04, < 30", Operand: structs.ConstraintVersion},
	}
	if variant == "ports" {
		tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
	}
	job = addJob(b, h, job)
	benchPlace(b, h, job, count)
}

// BenchmarkServiceSchedulerDense5kOn1Node: count 5,000 on one node big
// enough for all of them; per-placement cost must not grow with the
// number of allocations already planned on the node.
func BenchmarkServiceSchedulerDense5kOn1Node(b *testing.B) { benchDense(b, 5000) }

// BenchmarkServiceSchedulerDenseScaling runs the dense case at several
// sizes: ns/placement stays flat when placement is linear.
func BenchmarkServiceSchedulerDenseScaling(b *testing.B) {
	for _, n := range []int{1250, 2500, 5000, 10000} {
		b.Run(fmt.Sprintf("count=%d", n), func(b *testing.B) { benchDense(b, n) })
	}
}

// BenchmarkServiceSchedulerDensePortsScaling is the dense case with a
// dynamic port per allocation: ns/placement must stay flat too (the
// node's port set is built once and grows with the plan).
func BenchmarkServiceSchedulerDensePortsScaling(b *testing.B) {
	for _, n := range []int{1250, 2500, 5000, 10000} {
		b.Run(fmt.Sprintf("count=%d", n), func(b *testing.B) {
			benchDense(b, n, func(tg *structs.TaskGroup) {
				tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
			})
		})
	}
}

func benchDense(b *testing.B, count int, change ...func(*structs.TaskGroup)) {
	h := testHarness(b)
	mockNodes(b, h, 1, func(_ int, n *structs.Node) {
		n.NodeResources.Cpu.CpuShares = int64(count)*100 + 1000
		n.NodeResources.Memory.MemoryMB = int64(count)*128 + 1024
	})
	job := mock.Job()
	job.TaskGroups[0].Count = count
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
	for _, c := range change {
		c(job.TaskGroups[0])
	}
	job = addJob(b, h, job)
	benchPlace(b, h, job, count)
}

// BenchmarkServiceSchedulerFillCluster: count 10,000 on 5,000 nodes that
// each fit exactly two, so the last placements must find the few nodes
// left with room; 95% of nodes also fail a constraint in the filtered
// variant (with 100,000 nodes' worth of capacity spread over the rest).
func BenchmarkServiceSchedulerFillCluster(b *testing.B) {
	h := testHarness(b)
	mockNodes(b, h, 5000, func(i int, n *structs.Node) {
		n.NodeResources.Cpu.CpuShares = 2*1000 + 100
		n.NodeResources.Memory.MemoryMB = 2*1000 + 256
	})
	job := mock.Job()
	job.TaskGroups[0].Count = 10000
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 1000, MemoryMB: 1000}
	job = addJob(b, h, job)
	benchPlace(b, h, job, 10000)
}

func BenchmarkServiceSchedulerSparseFeasible(b *testing.B) {
	h := testHarness(b)
	mockNodes(b, h, 5000, func(i int, n *structs.Node) {
		if i%20 != 0 {
			n.Attributes["kernel.name"] = "windows"
			return
		}
		n.NodeResources.Cpu.CpuShares = 40*100 + 100
		n.NodeResources.Memory.MemoryMB = 40*128 + 256
	})
	job := mock.Job()
	job.TaskGroups[0].Count = 10000
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
	job = addJob(b, h, job)
	benchPlace(b, h, job, 10000)
}

// fillNodes stores perNode running allocations of a background job on
// each node, in writes of at most 5,000.
func fillNodes(b *testing.B, h *Harness, nodes []*structs.Node, perNode int) {
	bg := mock.Job()
	bg.ID = "background"
	bg.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 16}
	bg = addJob(b, h, bg)
	var batch []*structs.Allocation
	for _, n := range nodes {
		for i := 0; i < perNode; i++ {
			batch = append(batch, mock.Alloc(bg, n, len(batch)))
			if len(batch) == 5000 {
				addAllocs(b, h, batch...)
				batch = nil
			}
		}
	}
	if len(batch) > 0 {
		addAllocs(b, h, batch...)
	}
}

// BenchmarkServiceSchedulerPlaceOnBusyCluster: 1,000 placements over
// 5,000 nodes that already hold 20 allocations each (100,000 in all), so
// reading a node's usage is part of every node visit.
func BenchmarkServiceSchedulerPlaceOnBusyCluster(b *testing.B) {
	h := testHarness(b)
	nodes := mockNodes(b, h, 5000)
	fillNodes(b, h, nodes, 20)
	job := mock.Job()
	job.TaskGroups[0].Count = 1000
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
	job = addJob(b, h, job)
	benchPlace(b, h, job, 1000)
}

// BenchmarkServiceSchedulerSmallJobOnDenseNode: a job of count 10 placed
// on one node that already holds 5,000 allocations: what one evaluation
// pays for a node's existing allocations.
func BenchmarkServiceSchedulerSmallJobOnDenseNode(b *testing.B) {
	h := testHarness(b)
	nodes := mockNodes(b, h, 1, func(_ int, n *structs.Node) {
		n.NodeResources.Cpu.CpuShares = 5000*10 + 10000
		n.NodeResources.Memory.MemoryMB = 5000*16 + 10000
	})
	fillNodes(b, h, nodes, 5000)
	job := mock.Job()
	job.TaskGroups[0].Count = 10
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
	job = addJob(b, h, job)
	benchPlace(b, h, job, 10)
}

// BenchmarkServiceSchedulerSmallJobOn5kNodes: what one evaluation of a
// small job costs on a large cluster (the c1m shape: count 100 over 5,000
// nodes, and a batch job of count 1). Per-evaluation setup must scale with
// the nodes the evaluation looks at, not with the cluster.
func BenchmarkServiceSchedulerSmallJobOn5kNodes(b *testing.B) {
	for _, count := range []int{1, 100} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			h := testHarness(b)
			mockNodes(b, h, 5000)
			job := mock.Job()
			job.TaskGroups[0].Count = count
			job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 128}
			job = addJob(b, h, job)
			benchPlace(b, h, job, count)
		})
	}
}

// BenchmarkServiceSchedulerPlaceOnBusyNodes places one job of count 100
// on 1,000 nodes already holding 20 allocations each (200 jobs of 100
// placed first), as the later evaluations of c1m-small do; the Ports
// variant gives every allocation, old and new, a dynamic port, so each
// node examined needs its taken ports.
func BenchmarkServiceSchedulerPlaceOnBusyNodes(b *testing.B) {
	for _, ports := range []bool{false, true} {
		b.Run(fmt.Sprintf("ports=%v", ports), func(b *testing.B) {
			h := testHarness(b)
			mockNodes(b, h, 1000)
			mk := func(i int) *structs.Job {
				job := mock.Job()
				job.ID = fmt.Sprintf("busy-%d", i)
				tg := job.TaskGroups[0]
				tg.Count = 100
				tg.Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
				if ports {
					tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
				}
				return addJob(b, h, job)
			}
			for i := 0; i < 200; i++ {
				if err := h.Process(mock.Eval(mk(i))); err != nil {
					b.Fatal(err)
				}
			}
			benchPlace(b, h, mk(200), 100)
		})
	}
}

package planapply

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/scheduler"
	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// portAlloc is testAlloc holding ports on 10.0.0.1.
func portAlloc(nodeID string, ports ...int) *structs.Allocation {
	a := testAlloc(nodeID, 10, 10)
	for _, p := range ports {
		a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports,
			structs.AllocatedPortMapping{Label: fmt.Sprintf("p%d", p), Value: p, HostIP: "10.0.0.1"})
	}
	return a
}

func portNode(id string) *structs.Node {
	n := testNode(id, 100000, 100000)
	n.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{{Mode: "host", Device: "eth0",
		Addresses: []structs.NodeNetworkAddress{{Family: "ipv4", Alias: "default", Address: "10.0.0.1", ReservedPorts: "9000"}}}}
	n.ReservedResources.Networks.ReservedHostPorts = "22"
	return n
}

func TestEvaluatePlanPorts(t *testing.T) {
	held := portAlloc("n1", 8080)
	s := newStore(t, portNode("n1"))
	if err := s.UpsertAllocs(100, []*structs.Allocation{held}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pending inflight
		allocs  []*structs.Allocation
		stops   []*structs.Allocation
		reason  string // "" when it fits
	}{
		{"free port", nil, []*structs.Allocation{portAlloc("n1", 8081)}, nil, ""},
		{"port held by a live allocation", nil, []*structs.Allocation{portAlloc("n1", 8080)}, nil, "network: reserved port collision p8080=8080"},
		{"node-wide reserved port", nil, []*structs.Allocation{portAlloc("n1", 22)}, nil, "network: reserved port collision p22=22"},
		{"address reserved port", nil, []*structs.Allocation{portAlloc("n1", 9000)}, nil, "network: reserved port collision p9000=9000"},
		{"stopped in the same plan", nil, []*structs.Allocation{portAlloc("n1", 8080)}, []*structs.Allocation{held}, ""},
		{"in-place update keeps its port", nil, []*structs.Allocation{held.Copy()}, nil, ""},
		{"two placements of one port", nil, []*structs.Allocation{portAlloc("n1", 7000), portAlloc("n1", 7000)}, nil,
			"network: reserved port collision p7000=7000"},
		{"in flight placement holds it", inflight{{"n1": {portAlloc("n1", 7000)}}}, []*structs.Allocation{portAlloc("n1", 7000)}, nil,
			"network: reserved port collision p7000=7000"},
		{"other address", nil, []*structs.Allocation{func() *structs.Allocation {
			a := portAlloc("n1", 8080)
			a.AllocatedResources.Shared.Ports[0].HostIP = "10.0.0.2"
			return a
		}()}, nil, ""},
		{"legacy task port", nil, []*structs.Allocation{func() *structs.Allocation {
			a := testAlloc("n1", 10, 10)
			a.AllocatedResources.Tasks["t"].Networks = []*structs.NetworkResource{{IP: "10.0.0.1",
				ReservedPorts: []structs.Port{{Label: "db", Value: 8080}}}}
			return a
		}()}, nil, "network: reserved port collision db=8080"},
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
			fits, reason, err := evaluateNode(snapshot(t, s), tc.pending, plan, "n1")
			if err != nil {
				t.Fatal(err)
			}
			if fits != (tc.reason == "") || reason != tc.reason {
				t.Fatalf("fits = %v (%q), want reason %q", fits, reason, tc.reason)
			}
		})
	}
}

// startApplier runs an applier over s; stop it with the returned func.
func startApplier(t *testing.T, s *state.StateStore, rs *raftStub) (*fakeQueue, func()) {
	q := &fakeQueue{ch: make(chan Pending)}
	a := New(Config{Queue: q, State: func() *state.StateStore { return s }, Apply: rs.apply})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	return q, func() { cancel(); <-done }
}

// Nomad #9506: two workers that planned the same static port on the same
// node from one snapshot must not both win.
func TestApplierStaticPortRace(t *testing.T) {
	s := newStore(t, portNode("n1"))
	rs := &raftStub{store: s, index: 1000, gate: make(chan struct{})}
	q, stop := startApplier(t, s, rs)
	defer stop()
	p1 := &structs.Plan{Job: testJob, EvalID: "e1"}
	p1.AppendAlloc(portAlloc("n1", 8080))
	p2 := &structs.Plan{Job: testJob, EvalID: "e2"}
	p2.AppendAlloc(portAlloc("n1", 8080))
	r1 := submit(q, p1) // held in flight by the gate
	r2 := submit(q, p2) // checked against the snapshot plus p1
	rs.gate <- struct{}{}
	res1, res2 := r1.wait(t), r2.wait(t)
	close(rs.gate)
	if full, _, _ := res1.FullCommit(p1); !full {
		t.Fatalf("first plan: %+v", res1)
	}
	if !res2.IsNoOp() || len(res2.RejectedNodes) != 1 {
		t.Fatalf("second plan should be refused: %+v", res2)
	}
	allocs, err := s.AllocsByNode(nil, "n1")
	if err != nil || len(allocs) != 1 {
		t.Fatalf("node holds %d allocations (%v), want 1", len(allocs), err)
	}
}

// applierPlanner is a scheduler.Planner that submits plans through the
// applier, as a worker does, and refreshes its state after a rejection.
type applierPlanner struct {
	q *fakeQueue
	s *state.StateStore
	t *testing.T
}

func (p *applierPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	pp := &pendingPlan{plan: plan, res: make(chan *structs.PlanResult, 1), err: make(chan error, 1)}
	p.q.ch <- pp
	res, err := <-pp.res, <-pp.err
	if err != nil || res.RefreshIndex == 0 {
		return res, nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		idx, err := p.s.LatestIndex()
		if err != nil {
			return nil, nil, err
		}
		if idx >= res.RefreshIndex {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("state never reached index %d", res.RefreshIndex)
		}
		time.Sleep(time.Millisecond)
	}
	snap, err := p.s.Snapshot()
	return res, snap, err
}

func (p *applierPlanner) UpdateEval(*structs.Evaluation) error  { return nil }
func (p *applierPlanner) CreateEval(*structs.Evaluation) error  { return nil }
func (p *applierPlanner) ReblockEval(*structs.Evaluation) error { return nil }

// TestPortsNeverGivenTwiceProperty runs the real schedulers of many jobs
// with static and dynamic ports at once, all from the same starting
// snapshot, submitting through one applier with commits in flight, and
// checks that no port is ever given twice on a node's address, that no
// reserved port is given, and that dynamic ports come from the node's
// range.
func TestPortsNeverGivenTwiceProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s, err := state.NewStateStore()
		if err != nil {
			rt.Fatal(err)
		}
		nodes := make([]*structs.Node, rapid.IntRange(1, 4).Draw(rt, "nodes"))
		for i := range nodes {
			n := mock.Node()
			n.ID = fmt.Sprintf("node-%d-%s", i, n.ID[:8])
			n.NodeResources.MinDynamicPort = 20000
			n.NodeResources.MaxDynamicPort = 20000 + rapid.IntRange(0, 12).Draw(rt, "range")
			n.ReservedResources.Networks.ReservedHostPorts = rapid.SampledFrom([]string{"", "80", "20000-20002", "8080,20005"}).Draw(rt, "reserved")
			nodes[i] = n
			if err := s.UpsertNode(uint64(10+i), n, nil); err != nil {
				rt.Fatal(err)
			}
		}
		jobs := make([]*structs.Job, rapid.IntRange(2, 10).Draw(rt, "jobs"))
		for i := range jobs {
			j := mock.Job()
			if rapid.Bool().Draw(rt, "batch") {
				j = mock.BatchJob()
			}
			tg := j.TaskGroups[0]
			tg.Count = rapid.IntRange(1, 4).Draw(rt, "count")
			tg.Tasks[0].Resources.CPU, tg.Tasks[0].Resources.MemoryMB = 10, 10
			net := &structs.NetworkResource{}
			if rapid.Bool().Draw(rt, "static") {
				net.ReservedPorts = []structs.Port{{Label: "s", Value: rapid.SampledFrom([]int{80, 443, 8080, 20001}).Draw(rt, "port")}}
			}
			for d := rapid.IntRange(0, 2).Draw(rt, "dynamic"); d > 0; d-- {
				net.DynamicPorts = append(net.DynamicPorts, structs.Port{Label: fmt.Sprintf("d%d", d)})
			}
			if len(net.ReservedPorts)+len(net.DynamicPorts) == 0 {
				net.DynamicPorts = []structs.Port{{Label: "d"}}
			}
			tg.Networks = []*structs.NetworkResource{net}
			if err := s.UpsertJob(uint64(100+i), j, nil); err != nil {
				rt.Fatal(err)
			}
			jobs[i], _ = s.JobByID(nil, j.Namespace, j.ID)
		}

		rs := &raftStub{store: s, index: 1000}
		q, stop := startApplier(t, s, rs)
		defer stop()
		start, err := s.Snapshot() // every scheduler starts from this one
		if err != nil {
			rt.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(jobs))
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := &applierPlanner{q: q, s: s, t: t}
				sched, err := scheduler.NewScheduler(j.Type, hclog.NewNullLogger(), start, p, time.Now)
				if err == nil {
					err = sched.Process(mock.Eval(j))
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				rt.Fatalf("scheduler: %v", err)
			}
		}

		placed := 0
		for _, n := range nodes {
			allocs, err := s.AllocsByNode(nil, n.ID)
			if err != nil {
				rt.Fatal(err)
			}
			reserved := structs.NewPortUsage(n)
			taken := map[structs.PortKey]string{}
			for _, a := range allocs {
				if a.TerminalStatus() {
					continue
				}
				placed++
				for _, p := range a.AllocatedResources.Shared.Ports {
					k := structs.PortKey{Addr: p.HostIP, Port: p.Value}
					if other, dup := taken[k]; dup {
						rt.Fatalf("port %d on %s given to %s and %s", p.Value, n.ID, other, a.ID)
					}
					taken[k] = a.ID
					if reserved.InUse(p.HostIP, p.Value) {
						rt.Fatalf("reserved port %d given on %s", p.Value, n.ID)
					}
					if p.Label[0] == 'd' && (p.Value < 20000 || p.Value > n.NodeResources.MaxDynamicPort) {
						rt.Fatalf("dynamic port %d outside the range of %s", p.Value, n.ID)
					}
				}
			}
		}
		rt.Logf("%d allocations placed on %d nodes", placed, len(nodes))
	})
}

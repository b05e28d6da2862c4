package planapply

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

func testNode(id string, cpu, mem int64) *structs.Node {
	n := &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu},
			Memory: structs.NodeMemoryResources{MemoryMB: mem}},
		ReservedResources: &structs.NodeReservedResources{Cpu: structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 100}},
	}
	n.Canonicalize()
	return n
}

var testJob = func() *structs.Job {
	j := &structs.Job{ID: "web", Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "mock"}}}}}
	j.Canonicalize()
	return j
}()

var allocSeq int

func testAlloc(nodeID string, cpu, mem int64) *structs.Allocation {
	allocSeq++
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: "default", JobID: testJob.ID, Job: testJob,
		TaskGroup: "g", Name: fmt.Sprintf("web.g[%d]", allocSeq), NodeID: nodeID,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}}}},
	}
}

func newStore(t testing.TB, nodes ...*structs.Node) *state.StateStore {
	t.Helper()
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertJob(1, testJob.Copy(), nil); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if err := s.UpsertNode(uint64(10+i), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func snapshot(t testing.TB, s *state.StateStore) *state.StateSnapshot {
	t.Helper()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestEvaluatePlan(t *testing.T) {
	// Node capacity after reserve: 900 MHz, 900 MB.
	existing := testAlloc("busy", 500, 500)
	down := testNode("down", 1000, 1000)
	down.Status = structs.NodeStatusDown
	draining := testNode("draining", 1000, 1000)
	draining.Drain = true
	initializing := testNode("initializing", 1000, 1000)
	initializing.Status = structs.NodeStatusInit // its readiness gate has not passed
	onDrain := testAlloc("draining", 100, 100)

	tests := []struct {
		name     string
		plan     func() *structs.Plan
		accepted []string // nodes whose part is committed
		rejected []string
	}{
		{"fits", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("free", 900, 900))
			return p
		}, []string{"free"}, nil},
		{"overcommit memory refused", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("busy", 100, 401))
			return p
		}, nil, []string{"busy"}},
		{"stop frees capacity in the same plan", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendStoppedAlloc(existing, "replaced", "")
			p.AppendAlloc(testAlloc("busy", 900, 900))
			return p
		}, []string{"busy"}, nil},
		{"down node refused", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("down", 10, 10))
			return p
		}, nil, []string{"down"}},
		{"initializing node refused", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("initializing", 10, 10))
			return p
		}, nil, []string{"initializing"}},
		{"missing node refused", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("nope", 10, 10))
			return p
		}, nil, []string{"nope"}},
		{"draining node refuses new placement", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendAlloc(testAlloc("draining", 10, 10))
			return p
		}, nil, []string{"draining"}},
		{"draining node accepts in-place update", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			u := onDrain.Copy()
			u.AllocatedResources.Tasks["t"].Cpu.CpuShares = 200
			p.AppendAlloc(u)
			return p
		}, []string{"draining"}, nil},
		{"stops on a down node always fit", func() *structs.Plan {
			p := &structs.Plan{Job: testJob}
			p.AppendStoppedAlloc(testAlloc("down", 10, 10), "lost", structs.AllocClientStatusLost)
			return p
		}, []string{"down"}, nil},
		{"all at once refuses everything", func() *structs.Plan {
			p := &structs.Plan{Job: testJob, AllAtOnce: true}
			p.AppendAlloc(testAlloc("free", 10, 10))
			p.AppendAlloc(testAlloc("busy", 900, 900))
			return p
		}, nil, []string{"busy"}},
	}
	s := newStore(t, testNode("free", 1000, 1000), testNode("busy", 1000, 1000), down, draining, initializing)
	if err := s.UpsertAllocs(100, []*structs.Allocation{existing, onDrain}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := EvaluatePlan(snapshot(t, s), tc.plan())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for id := range res.NodeAllocation {
				got[id] = true
			}
			for id := range res.NodeUpdate {
				got[id] = true
			}
			if len(got) != len(tc.accepted) {
				t.Fatalf("accepted %v, want %v", got, tc.accepted)
			}
			for _, id := range tc.accepted {
				if !got[id] {
					t.Fatalf("accepted %v, want %v", got, tc.accepted)
				}
			}
			if fmt.Sprint(res.RejectedNodes) != fmt.Sprint(tc.rejected) && !(len(res.RejectedNodes) == 0 && len(tc.rejected) == 0) {
				t.Fatalf("rejected %v, want %v", res.RejectedNodes, tc.rejected)
			}
		})
	}
}

func TestEvaluatePlanManyNodesInParallel(t *testing.T) {
	var nodes []*structs.Node
	p := &structs.Plan{Job: testJob}
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("n%03d", i)
		nodes = append(nodes, testNode(id, 1000, 1000))
		mem := int64(900)
		if i%10 == 0 {
			mem = 901 // one in ten does not fit
		}
		p.AppendAlloc(testAlloc(id, 100, mem))
	}
	s := newStore(t, nodes...)
	res, err := EvaluatePlan(snapshot(t, s), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeAllocation) != 180 || len(res.RejectedNodes) != 20 {
		t.Fatalf("accepted %d rejected %d, want 180/20", len(res.NodeAllocation), len(res.RejectedNodes))
	}
}

// fakeQueue feeds plans to the applier and collects responses.
type fakeQueue struct{ ch chan Pending }

func (q *fakeQueue) Dequeue(ctx context.Context) (Pending, error) {
	select {
	case p := <-q.ch:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pendingPlan struct {
	plan *structs.Plan
	res  chan *structs.PlanResult
	err  chan error
}

func (p *pendingPlan) Plan() *structs.Plan { return p.plan }
func (p *pendingPlan) Respond(r *structs.PlanResult, err error) {
	p.res <- r
	p.err <- err
}

func submit(q *fakeQueue, plan *structs.Plan) *pendingPlan {
	p := &pendingPlan{plan: plan, res: make(chan *structs.PlanResult, 1), err: make(chan error, 1)}
	q.ch <- p
	return p
}

func (p *pendingPlan) wait(t *testing.T) *structs.PlanResult {
	t.Helper()
	select {
	case r := <-p.res:
		if err := <-p.err; err != nil {
			t.Fatalf("plan failed: %v", err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no plan result")
		return nil
	}
}

// raftStub applies entries to the store in order, optionally gated so a
// test can hold a commit in flight.
type raftStub struct {
	mu    sync.Mutex
	store *state.StateStore
	index uint64
	gate  chan struct{} // when non-nil, each apply waits for a token
}

func (r *raftStub) apply(req *structs.ApplyPlanResultsRequest) (uint64, error) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index++
	return r.index, r.store.UpsertPlanResults(r.index, throughRaft(req))
}

// throughRaft returns the request as the FSM would see it: encoded and
// decoded, sharing nothing with the caller's objects.
func throughRaft(req *structs.ApplyPlanResultsRequest) *structs.ApplyPlanResultsRequest {
	buf, err := structs.Encode(structs.ApplyPlanResultsRequestType, req)
	if err != nil {
		panic(err)
	}
	var out structs.ApplyPlanResultsRequest
	if err := structs.Decode(buf[1:], &out); err != nil {
		panic(err)
	}
	return &out
}

func TestApplierNeverOvercommitsAndPipelines(t *testing.T) {
	s := newStore(t, testNode("n1", 1000, 1000))
	rs := &raftStub{store: s, index: 1000, gate: make(chan struct{})}
	q := &fakeQueue{ch: make(chan Pending)}
	a := New(Config{Queue: q, State: func() *state.StateStore { return s }, Apply: rs.apply})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()

	// Two workers planned on the same stale snapshot: each alone fits.
	p1 := &structs.Plan{Job: testJob, EvalID: "e1"}
	p1.AppendAlloc(testAlloc("n1", 600, 600))
	p2 := &structs.Plan{Job: testJob, EvalID: "e2"}
	p2.AppendAlloc(testAlloc("n1", 600, 600))
	r1 := submit(q, p1) // commit held in flight by the gate
	r2 := submit(q, p2) // evaluated against snapshot + p1 optimistically
	rs.gate <- struct{}{}
	res1 := r1.wait(t)
	res2 := r2.wait(t)
	if full, _, _ := res1.FullCommit(p1); !full || res1.AllocIndex == 0 {
		t.Fatalf("first plan not fully committed: %+v", res1)
	}
	if !res2.IsNoOp() || res2.RefreshIndex < res1.AllocIndex {
		t.Fatalf("second plan should be refused with a refresh index >= %d: %+v", res1.AllocIndex, res2)
	}
	allocs, err := s.AllocsByNode(nil, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 1 {
		t.Fatalf("node has %d allocs, want 1", len(allocs))
	}
	if allocs[0].Job == nil {
		t.Fatal("stored alloc has no job")
	}
	close(rs.gate)
	cancel()
	<-done
}

func TestApplierReevaluatesAfterFailedCommit(t *testing.T) {
	s := newStore(t, testNode("n1", 1000, 1000))
	existing := testAlloc("n1", 800, 800)
	if err := s.UpsertAllocs(100, []*structs.Allocation{existing}); err != nil {
		t.Fatal(err)
	}
	fail := true
	gate := make(chan struct{})
	var mu sync.Mutex
	index := uint64(1000)
	apply := func(req *structs.ApplyPlanResultsRequest) (uint64, error) {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		if fail {
			fail = false
			return 0, structs.ErrNotLeader
		}
		index++
		return index, s.UpsertPlanResults(index, throughRaft(req))
	}
	q := &fakeQueue{ch: make(chan Pending)}
	a := New(Config{Queue: q, State: func() *state.StateStore { return s }, Apply: apply})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)

	// p1 stops the big alloc (its commit will fail); p2 places into the
	// capacity p1 would have freed. p2 must be checked again and refused.
	p1 := &structs.Plan{Job: testJob, EvalID: "e1"}
	p1.AppendStoppedAlloc(existing, "stop", "")
	p2 := &structs.Plan{Job: testJob, EvalID: "e2"}
	p2.AppendAlloc(testAlloc("n1", 500, 500))
	r1 := submit(q, p1)
	r2 := submit(q, p2)
	close(gate)
	select {
	case <-r1.res:
		if err := <-r1.err; err == nil {
			t.Fatal("first plan should fail")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no result for p1")
	}
	res2 := r2.wait(t)
	if !res2.IsNoOp() {
		t.Fatalf("p2 committed on capacity that was never freed: %+v", res2)
	}
}

func TestRequestKeepsOlderJobVersion(t *testing.T) {
	a := New(Config{})
	newJob := testJob.Copy()
	newJob.Version, newJob.JobModifyIndex = 2, 50
	same := testAlloc("n1", 10, 10)
	same.Job = newJob.Copy() // decoded from RPC: equal version, other pointer
	old := testAlloc("n1", 10, 10)
	old.Job = testJob // an older version
	plan := &structs.Plan{Job: newJob}
	plan.AppendAlloc(same)
	plan.AppendAlloc(old)
	req := a.request(plan, &structs.PlanResult{NodeAllocation: plan.NodeAllocation})
	for _, got := range req.AllocsUpdated {
		switch got.ID {
		case same.ID:
			if got.Job != nil {
				t.Error("allocation on the plan's job version should travel without its job")
			}
		case old.ID:
			if got.Job != testJob {
				t.Error("allocation on an older job version lost its job")
			}
		}
	}
	if same.Job == nil || old.Job == nil {
		t.Fatal("request must not modify the plan's allocations")
	}
}

// TestApplierOverlapsCommits: commits of plans on different nodes run
// concurrently, up to MaxInflight, and every plan is answered.
func TestApplierOverlapsCommits(t *testing.T) {
	for _, limit := range []int{2, 4} {
		t.Run(fmt.Sprintf("max_inflight=%d", limit), func(t *testing.T) {
			nodes := []*structs.Node{testNode("a", 1000, 1000), testNode("b", 1000, 1000), testNode("c", 1000, 1000)}
			s := newStore(t, nodes...)
			var mu sync.Mutex
			inflight, peak := 0, 0
			release := make(chan struct{})
			rs := &raftStub{store: s, index: 1000}
			apply := func(req *structs.ApplyPlanResultsRequest) (uint64, error) {
				mu.Lock()
				inflight++
				peak = max(peak, inflight)
				mu.Unlock()
				<-release
				mu.Lock()
				inflight--
				mu.Unlock()
				return rs.apply(req)
			}
			q := &fakeQueue{ch: make(chan Pending)}
			a := New(Config{Queue: q, State: func() *state.StateStore { return s }, Apply: apply, MaxInflight: limit})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { a.Run(ctx); close(done) }()

			var results []*pendingPlan
			var plans []*structs.Plan
			for _, n := range nodes {
				p := &structs.Plan{Job: testJob, EvalID: "e-" + n.ID}
				p.AppendAlloc(testAlloc(n.ID, 500, 500))
				plans = append(plans, p)
			}
			// The first min(limit, 3) plans are committed at once; the
			// rest wait for a commit slot.
			want := min(limit, len(plans))
			for _, p := range plans[:want] {
				results = append(results, submit(q, p))
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				mu.Lock()
				n := inflight
				mu.Unlock()
				if n == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d commits in flight, want %d", n, want)
				}
				time.Sleep(time.Millisecond)
			}
			close(release)
			for _, p := range plans[want:] {
				results = append(results, submit(q, p))
			}
			for i, r := range results {
				if res := r.wait(t); res.AllocIndex == 0 || len(res.RejectedNodes) > 0 {
					t.Fatalf("plan %d: %+v", i, res)
				}
			}
			mu.Lock()
			if peak > limit {
				t.Errorf("%d commits in flight, limit %d", peak, limit)
			}
			mu.Unlock()
			cancel()
			<-done
		})
	}
}

// newPlacements counts new allocations only: an in-place update (already
// stored, CreateIndex set) and a stop are not placements.
func TestNewPlacements(t *testing.T) {
	placed1, placed2 := testAlloc("n1", 10, 10), testAlloc("n2", 10, 10)
	updated := testAlloc("n1", 10, 10)
	updated.CreateIndex = 7
	stopped := testAlloc("n2", 10, 10)
	stopped.CreateIndex = 8
	result := &structs.PlanResult{
		NodeAllocation: map[string][]*structs.Allocation{"n1": {placed1, updated}, "n2": {placed2}},
		NodeUpdate:     map[string][]*structs.Allocation{"n2": {stopped}},
	}
	if got := newPlacements(result); got != 2 {
		t.Fatalf("newPlacements = %d, want 2", got)
	}
	if got := newPlacements(&structs.PlanResult{}); got != 0 {
		t.Fatalf("empty result: newPlacements = %d, want 0", got)
	}
}

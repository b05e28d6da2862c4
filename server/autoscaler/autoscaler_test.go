package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// fakeProvider records calls; quota makes Create fail with a quota error.
type fakeProvider struct {
	mu        sync.Mutex
	instances map[string]*Instance
	quota     bool
	creates   int
	destroyed []string
}

func newFakeProvider() *fakeProvider { return &fakeProvider{instances: map[string]*Instance{}} }

func (p *fakeProvider) Create(_ context.Context, spec CreateSpec) (*Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quota {
		return nil, &QuotaError{Message: "fake"}
	}
	if in, ok := p.instances[spec.ID]; ok {
		return in, nil
	}
	p.creates++
	in := &Instance{ProviderID: spec.ID, Tags: spec.Tags, Running: true}
	p.instances[spec.ID] = in
	return in, nil
}

func (p *fakeProvider) List(_ context.Context, tags map[string]string) ([]*Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Instance
	for _, in := range p.instances {
		if in.Tags[structs.InstanceTagPool] == tags[structs.InstanceTagPool] {
			out = append(out, in)
		}
	}
	return out, nil
}

func (p *fakeProvider) Destroy(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.instances, id)
	p.destroyed = append(p.destroyed, id)
	return nil
}

// fakeBlocked is the blocked evaluations.
type fakeBlocked struct{ evals []*structs.Evaluation }

func (b *fakeBlocked) Each(fn func(*structs.Evaluation)) {
	for _, e := range b.evals {
		fn(e)
	}
}

// harness runs an autoscaler over a real state store, a manual clock, a
// fake provider and a writer that applies to the store.
type harness struct {
	t       *testing.T
	st      *state.StateStore
	index   uint64
	clk     *clock.Manual
	prov    *fakeProvider
	blocked *fakeBlocked
	a       *Autoscaler
	drained []string
	ids     int
	// unknownOutcome makes the next instance write apply and still fail
	// (a Raft write whose answer was lost).
	unknownOutcome bool
}

const pool = "burst"

func newHarness(t *testing.T, cfg *structs.PoolAutoscaler) *harness {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, index: 100, clk: clock.NewManual(time.Unix(1700000000, 0)), prov: newFakeProvider(), blocked: &fakeBlocked{}}
	h.must(st.UpsertNodePools(h.next(), []*structs.NodePool{{Name: pool}}))
	cfg.Pool, cfg.Provider, cfg.Enabled = pool, "fake", true
	cfg.Canonicalize()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h.must(st.UpsertPoolAutoscaler(h.next(), &structs.PoolAutoscalerUpsertRequest{Autoscaler: cfg}))
	h.a = h.newAutoscaler()
	return h
}

func (h *harness) newAutoscaler() *Autoscaler {
	a, err := New(Config{State: func() Reader { return h.st }, Blocked: h.blocked, Writer: h, Clock: h.clk,
		Providers: map[string]Provider{"fake": h.prov}, NewID: func() string { h.ids++; return fmt.Sprintf("i-%d", h.ids) }})
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) next() uint64 { h.index++; return h.index }

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) UpdateInstances(req *structs.PoolInstanceUpdateRequest) error {
	err := h.st.UpdatePoolInstances(h.next(), req)
	if err == nil && h.unknownOutcome {
		h.unknownOutcome = false
		return structs.NewError(structs.ErrCodeOutcomeUnknown, "no answer")
	}
	return err
}

func (h *harness) SetNodeEligibility(id string, eligible bool) error {
	e := structs.NodeSchedulingIneligible
	if eligible {
		e = structs.NodeSchedulingEligible
	}
	return h.st.UpdateNodeEligibility(h.next(), &structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: e})
}

func (h *harness) DrainNode(id string) error {
	h.drained = append(h.drained, id)
	return h.st.UpdateNodeDrain(h.next(), &structs.NodeUpdateDrainRequest{NodeID: id,
		DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}})
}

func (h *harness) pass() {
	h.t.Helper()
	if _, err := h.a.Pass(context.Background(), memdb.NewWatchSet()); err != nil {
		h.t.Fatal(err)
	}
}

// queue registers a job of the pool with count allocations of cpu/mem,
// all blocked on capacity.
func (h *harness) queue(count, cpu, mem int) *structs.Job {
	job := mock.BatchJob()
	job.NodePool = pool
	job.Constraints = nil
	job.TaskGroups[0].Count = count
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: cpu, MemoryMB: mem}
	h.must(h.st.UpsertJob(h.next(), job, nil))
	e := mock.EvalFor(job)
	e.Status = structs.EvalStatusBlocked
	e.FailedTGAllocs = map[string]*structs.AllocMetric{"web": {CoalescedFailures: count - 1}}
	h.blocked.evals = append(h.blocked.evals, e)
	return job
}

func (h *harness) instances(states ...string) []*structs.PoolInstance {
	h.t.Helper()
	list, err := h.st.PoolInstances(nil, pool)
	h.must(err)
	if len(states) == 0 {
		return list
	}
	var out []*structs.PoolInstance
	for _, in := range list {
		for _, s := range states {
			if in.State == s {
				out = append(out, in)
			}
		}
	}
	return out
}

// boot registers a ready node with a healthy driver for an instance.
func (h *harness) boot(in *structs.PoolInstance, cpu, mem int) *structs.Node {
	n := mock.Node()
	n.NodePool = pool
	n.Meta = map[string]string{structs.InstanceTagID: in.ID}
	n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB = int64(cpu), int64(mem)
	n.ReservedResources = nil
	h.must(h.st.UpsertNode(h.next(), n, nil))
	return n
}

func (h *harness) run(job *structs.Job, n *structs.Node) *structs.Allocation {
	a := mock.Alloc(job, n)
	a.ClientStatus = structs.AllocClientStatusRunning
	h.must(h.st.UpsertAllocs(h.next(), []*structs.Allocation{a}))
	return a
}

func (h *harness) events() []*structs.PoolEvent {
	s, err := h.st.PoolAutoscaleStatusByPool(nil, pool)
	if err != nil {
		return nil
	}
	return s.Events
}

func (h *harness) hasEvent(typ, substr string) bool {
	for _, e := range h.events() {
		if e.Type == typ && strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

func types() []*structs.InstanceType {
	return []*structs.InstanceType{
		{Name: "small", CPU: 1000, MemoryMB: 1024, PricePerHour: 0.10},
		{Name: "medium", CPU: 2000, MemoryMB: 2048, PricePerHour: 0.25},
		{Name: "large", CPU: 8000, MemoryMB: 8192, PricePerHour: 2.00},
	}
}

// TestCheapestFittingTypeAndNoMoreThanTheQueue: 6 allocations of 500 MHz
// and 512 MB: small (2 per instance, 3 × 0.10) is cheaper than medium (4
// per instance, 2 × 0.25) and large; exactly 3 are created, and the next
// passes create none (the booting ones count as capacity).
func TestCheapestFittingTypeAndNoMoreThanTheQueue(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 10, InstanceTypes: types()})
	h.queue(6, 500, 512)
	h.pass()
	got := h.instances(structs.InstanceBooting)
	if len(got) != 3 || h.prov.creates != 3 {
		t.Fatalf("created %d (provider %d), want 3", len(got), h.prov.creates)
	}
	for _, in := range got {
		if in.Type != "small" || in.PricePerHour != 0.10 {
			t.Fatalf("instance %+v: want small", in)
		}
	}
	if !h.hasEvent(structs.PoolEventCreate, "small is the cheapest type that fits") {
		t.Fatalf("no create event with its reason: %+v", h.events())
	}
	h.pass()
	h.clk.Advance(time.Second)
	h.pass()
	if n := len(h.instances()); n != 3 || h.prov.creates != 3 {
		t.Fatalf("after more passes: %d instances, %d creates", n, h.prov.creates)
	}
	// A larger allocation only the large type fits takes one large.
	h.queue(1, 4000, 4000)
	h.pass()
	if got := h.instances(structs.InstanceBooting); len(got) != 4 || got[3].Type != "large" {
		t.Fatalf("instances %v", got)
	}
	// An allocation no type fits creates nothing, with a note.
	h.queue(1, 100000, 10)
	h.pass()
	if len(h.instances()) != 4 || !h.hasEvent(structs.PoolEventNoFit, "fit no instance type") {
		t.Fatalf("no-fit: %d instances, events %+v", len(h.instances()), h.events())
	}
}

// TestMaxAndThrottle: Max bounds the instances; MaxCreatesPerInterval
// bounds the creates per interval, and a standing limit is one event.
func TestMaxAndThrottle(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 3, MaxCreatesPerInterval: 2, CreateInterval: time.Minute,
		InstanceTypes: types()[:1]})
	h.queue(20, 500, 512)
	h.pass()
	if n := len(h.instances()); n != 2 {
		t.Fatalf("throttled pass created %d, want 2", n)
	}
	limits := func() int {
		n := 0
		for _, e := range h.events() {
			if e.Type == structs.PoolEventLimit {
				n++
			}
		}
		return n
	}
	h.pass()
	before := limits()
	h.pass()
	h.pass()
	if n := len(h.instances()); n != 2 {
		t.Fatalf("within the interval: %d instances", n)
	}
	if before == 0 || limits() != before {
		t.Fatalf("limit events %d then %d: a standing limit is recorded once", before, limits())
	}
	h.clk.Advance(time.Minute)
	h.pass()
	if n := len(h.instances()); n != 3 {
		t.Fatalf("after the interval: %d instances, want 3 (Max)", n)
	}
	h.clk.Advance(time.Minute)
	h.pass()
	if n := len(h.instances()); n != 3 || !h.hasEvent(structs.PoolEventLimit, "maximum 3 instances") {
		t.Fatalf("beyond Max: %d instances; events %+v", n, h.events())
	}
}

// TestQuotaBackoff: a quota error marks the instance gone, records the
// back-off (replicated), and nothing is created until it ends.
func TestQuotaBackoff(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 5, QuotaBackoff: 30 * time.Second, InstanceTypes: types()[:1]})
	h.queue(2, 500, 512)
	h.prov.quota = true
	h.pass()
	if gone := h.instances(structs.InstanceGone); len(gone) != 1 || !strings.Contains(gone[0].StateReason, "quota") {
		t.Fatalf("after a quota error: %+v", h.instances())
	}
	s, err := h.st.PoolAutoscaleStatusByPool(nil, pool)
	if err != nil || s.QuotaBackoffUntil != h.clk.Now().Add(30*time.Second).UnixNano() || !h.hasEvent(structs.PoolEventQuota, "no create until") {
		t.Fatalf("status %+v %v", s, err)
	}
	h.prov.quota = false
	h.clk.Advance(29 * time.Second)
	// A new leader honours the replicated back-off too.
	h.a = h.newAutoscaler()
	h.pass()
	if n := len(h.instances(structs.InstanceBooting)); n != 0 {
		t.Fatalf("created %d during the back-off", n)
	}
	h.clk.Advance(time.Second)
	h.pass()
	if n := len(h.instances(structs.InstanceBooting)); n != 1 {
		t.Fatalf("after the back-off: %d booting, want 1", n)
	}
}

// TestBootIdleAndShutdown: the boot probe, the idle timeout, never an
// instance with allocations, Min kept, and the boot timeout.
func TestBootIdleAndShutdown(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 5, Min: 1, IdleTimeout: time.Minute, BootTimeout: 2 * time.Minute,
		InstanceTypes: types()[:1]})
	job := h.queue(4, 500, 512)
	h.pass()
	insts := h.instances(structs.InstanceBooting)
	if len(insts) != 2 {
		t.Fatalf("created %d, want 2", len(insts))
	}
	h.clk.Advance(10 * time.Second)
	n0 := h.boot(insts[0], 1000, 1024)
	h.blocked.evals = nil // placed
	h.run(job, n0)
	h.pass()
	in0, _ := h.st.PoolInstanceByID(nil, insts[0].ID)
	if in0.State != structs.InstanceRunning || in0.NodeID != n0.ID || in0.BootTime != h.clk.Now().UnixNano() {
		t.Fatalf("booted instance %+v", in0)
	}
	// The second never boots: destroyed at its boot timeout.
	h.clk.Advance(2 * time.Minute)
	h.pass()
	h.pass()
	in1, _ := h.st.PoolInstanceByID(nil, insts[1].ID)
	if in1.State != structs.InstanceGone || !strings.Contains(in1.StateReason, "boot timeout") || len(h.prov.destroyed) != 1 {
		t.Fatalf("unbooted instance %+v, destroyed %v", in1, h.prov.destroyed)
	}
	// The running one is never idle while it has an allocation.
	h.clk.Advance(10 * time.Minute)
	h.pass()
	if in0, _ = h.st.PoolInstanceByID(nil, insts[0].ID); in0.State != structs.InstanceRunning {
		t.Fatalf("instance with an allocation: %+v", in0)
	}
	// With Min 1, it stays even idle; with Min 0 it goes after the
	// timeout.
	a := h.run(job, n0)
	_ = a
	allocs, _ := h.st.AllocsByNode(nil, n0.ID)
	for _, al := range allocs {
		c := al.Copy()
		c.ClientStatus = structs.AllocClientStatusComplete
		h.must(h.st.UpdateAllocsFromClient(h.next(), []*structs.Allocation{c}, nil))
	}
	h.pass()
	h.clk.Advance(2 * time.Minute)
	h.pass()
	if in0, _ = h.st.PoolInstanceByID(nil, insts[0].ID); in0.State != structs.InstanceIdle {
		t.Fatalf("idle instance at Min: %+v", in0)
	}
	cfg, _ := h.st.PoolAutoscalerByPool(nil, pool)
	cfg = cfg.Copy()
	cfg.Min = 0
	h.must(h.st.UpsertPoolAutoscaler(h.next(), &structs.PoolAutoscalerUpsertRequest{Autoscaler: cfg}))
	h.pass()
	h.pass()
	if in0, _ = h.st.PoolInstanceByID(nil, insts[0].ID); in0.State != structs.InstanceGone || !strings.Contains(in0.StateReason, "idle for") {
		t.Fatalf("idle instance past its timeout: %+v", in0)
	}
}

// TestHoldAndDrain: a held instance survives its idle timeout and its
// node is made ineligible; a drained one drains its node, then goes once
// the node has no allocations.
func TestHoldAndDrain(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 5, IdleTimeout: time.Minute, InstanceTypes: types()[:1]})
	job := h.queue(4, 500, 512)
	h.pass()
	insts := h.instances()
	n0, n1 := h.boot(insts[0], 1000, 1024), h.boot(insts[1], 1000, 1024)
	h.blocked.evals = nil
	alloc := h.run(job, n1)
	h.pass()
	h.must(h.st.SetPoolInstanceBehavior(h.next(), &structs.PoolInstanceBehaviorRequest{InstanceID: insts[0].ID, Behavior: structs.InstanceBehaviorHold}))
	h.must(h.st.SetPoolInstanceBehavior(h.next(), &structs.PoolInstanceBehaviorRequest{InstanceID: insts[1].ID, Behavior: structs.InstanceBehaviorDrain}))
	h.pass()
	if n, _ := h.st.NodeByID(nil, n0.ID); n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("held node eligibility %q", n.SchedulingEligibility)
	}
	if len(h.drained) != 1 || h.drained[0] != n1.ID {
		t.Fatalf("drained %v", h.drained)
	}
	h.clk.Advance(time.Hour)
	h.pass()
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); in.Gone() {
		t.Fatalf("held instance shut down: %+v", in)
	}
	if in, _ := h.st.PoolInstanceByID(nil, insts[1].ID); in.State != structs.InstanceDraining {
		t.Fatalf("draining instance with an allocation: %+v", in)
	}
	c := alloc.Copy()
	c.ClientStatus = structs.AllocClientStatusComplete
	h.must(h.st.UpdateAllocsFromClient(h.next(), []*structs.Allocation{c}, nil))
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[1].ID); !in.Gone() || !strings.Contains(in.StateReason, "drained") {
		t.Fatalf("drained instance: %+v", in)
	}
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); in.Gone() {
		t.Fatalf("held instance shut down: %+v", in)
	}
}

// TestAdoption: a new leader lists the provider: a booting instance in
// the table is adopted (not created again), one at the provider without a
// record is adopted as booting, and a booting record without an instance
// is marked gone; the queue then needs nothing more.
func TestAdoption(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 10, InstanceTypes: types()[:1]})
	h.queue(6, 500, 512)
	h.pass()
	if h.prov.creates != 3 {
		t.Fatalf("creates %d", h.prov.creates)
	}
	// One instance's record never got written (the provider has it);
	// one record has no instance (its create never happened).
	h.prov.instances["i-orphan"] = &Instance{ProviderID: "i-orphan", Running: true,
		Tags: map[string]string{structs.InstanceTagID: "i-orphan", structs.InstanceTagPool: pool, structs.InstanceTagType: "small"}}
	list := h.instances()
	delete(h.prov.instances, list[2].ID)
	// Failover: a new autoscaler on the same replicated state.
	h.a = h.newAutoscaler()
	h.pass()
	booting := h.instances(structs.InstanceBooting)
	if len(booting) != 3 || h.prov.creates != 3 {
		t.Fatalf("after adoption: %d booting, %d creates; %+v", len(booting), h.prov.creates, h.instances())
	}
	if in, _ := h.st.PoolInstanceByID(nil, list[2].ID); !in.Gone() {
		t.Fatalf("record without an instance: %+v", in)
	}
	if !h.hasEvent(structs.PoolEventAdopt, "adopted (not created again)") || !h.hasEvent(structs.PoolEventAdopt, "without a record") {
		t.Fatalf("events %+v", h.events())
	}
}

// TestNodeDownAndQueuedWork: an idle instance stays while queued work
// would fit on it; one whose node went down is kept until its idle
// timeout (the node may come back), then destroyed.
func TestNodeDownAndQueuedWork(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 5, IdleTimeout: time.Minute, InstanceTypes: types()[:1]})
	h.queue(2, 500, 512)
	h.pass()
	insts := h.instances()
	if len(insts) != 1 {
		t.Fatalf("created %d, want 1", len(insts))
	}
	n := h.boot(insts[0], 1000, 1024)
	h.pass() // booted, idle: the queued work is about to be placed on it
	h.clk.Advance(2 * time.Minute)
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); in.Gone() {
		t.Fatalf("idle instance destroyed while queued work fits on it: %+v", in)
	}
	h.blocked.evals = nil
	job := h.queue(1, 500, 512)
	h.blocked.evals = nil
	alloc := h.run(job, n)
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); in.State != structs.InstanceRunning {
		t.Fatalf("instance with an allocation: %+v", in)
	}
	// The node goes down; its allocation is lost.
	down := n.Copy()
	down.Status = structs.NodeStatusDown
	h.must(h.st.UpsertNode(h.next(), down, nil))
	lost := alloc.Copy()
	lost.ClientStatus = structs.AllocClientStatusLost
	h.must(h.st.UpdateAllocsFromClient(h.next(), []*structs.Allocation{lost}, nil))
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); in.Gone() {
		t.Fatalf("instance destroyed as soon as its node went down: %+v", in)
	}
	h.clk.Advance(2 * time.Minute)
	h.pass()
	h.pass()
	if in, _ := h.st.PoolInstanceByID(nil, insts[0].ID); !in.Gone() {
		t.Fatalf("instance of a node down past the idle timeout: %+v", in)
	}
}

// TestStandingNotes: a limit and a no-fit standing together are each
// recorded once, not once per pass.
func TestStandingNotes(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 1, InstanceTypes: types()[:1]})
	h.queue(4, 500, 512)
	h.queue(1, 100000, 10)
	h.pass()
	h.pass() // the limit now counts the booting instance
	n := len(h.events())
	for range 3 {
		h.clk.Advance(time.Second)
		h.pass()
	}
	if len(h.events()) != n || !h.hasEvent(structs.PoolEventLimit, "maximum 1") || !h.hasEvent(structs.PoolEventNoFit, "fit no instance type") {
		t.Fatalf("%d events then %d: %+v", n, len(h.events()), h.events())
	}
}

// TestCreateAfterUnacknowledgedRecord: when the write of a new instance's
// record fails (here: applied, but its answer lost), nothing is created;
// the next pass finds the record without an instance at the provider,
// marks it gone and creates afresh: one instance, never two.
func TestCreateAfterUnacknowledgedRecord(t *testing.T) {
	h := newHarness(t, &structs.PoolAutoscaler{Max: 5, InstanceTypes: types()[:1]})
	h.pass() // the first reconcile, nothing queued yet
	h.queue(2, 500, 512)
	h.clk.Advance(time.Second)
	h.unknownOutcome = true
	if _, err := h.a.Pass(context.Background(), memdb.NewWatchSet()); err == nil {
		t.Fatal("the failed record write was not reported")
	}
	if h.prov.creates != 0 || len(h.instances(structs.InstanceBooting)) != 1 {
		t.Fatalf("after an unacknowledged record: %d creates, instances %+v", h.prov.creates, h.instances())
	}
	h.clk.Advance(time.Second)
	h.pass()
	gone := h.instances(structs.InstanceGone)
	if h.prov.creates != 1 || len(h.instances(structs.InstanceBooting)) != 1 || len(gone) != 1 ||
		!strings.Contains(gone[0].StateReason, "no such instance at the provider") {
		t.Fatalf("next pass: %d creates, instances %+v", h.prov.creates, h.instances())
	}
}

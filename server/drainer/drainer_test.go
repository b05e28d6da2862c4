package drainer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// stateWriter applies the drainer's writes straight to the world's state
// store, as the FSM would, and records them.
type stateWriter struct {
	w *world

	mu       sync.Mutex
	marked   []string // allocation IDs, in write order; guarded by mu
	evals    []string // job IDs of written evaluations; guarded by mu
	complete []string // node IDs; guarded by mu
	failNext bool     // the next write fails; guarded by mu
}

var errInjected = errors.New("injected write failure")

func (s *stateWriter) fail() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failNext
	s.failNext = false
	return f
}

func (s *stateWriter) MarkForMigration(allocs []*structs.Allocation, evals []*structs.Evaluation) error {
	if s.fail() {
		return errInjected
	}
	yes := true
	var upd []*structs.Allocation
	for _, a := range allocs {
		c := a.Copy()
		c.DesiredTransition.Migrate = &yes
		upd = append(upd, c)
	}
	if err := s.w.st.UpsertAllocs(s.w.next(), upd); err != nil {
		return err
	}
	if err := s.w.st.UpsertEvals(s.w.next(), evals); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range allocs {
		s.marked = append(s.marked, a.ID)
	}
	for _, e := range evals {
		s.evals = append(s.evals, e.JobID)
	}
	return nil
}

func (s *stateWriter) CompleteDrain(node *structs.Node, event *structs.NodeEvent) error {
	if s.fail() {
		return errInjected
	}
	err := s.w.st.UpdateNodeDrain(s.w.next(), &structs.NodeUpdateDrainRequest{NodeID: node.ID, NodeEvent: event})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.complete = append(s.complete, node.ID)
	return nil
}

func (s *stateWriter) record() (marked, evals, complete []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.marked...), append([]string(nil), s.evals...), append([]string(nil), s.complete...)
}

// runDrainer starts a drainer over the world with clk and returns a
// channel that receives every successful pass.
func runDrainer(t *testing.T, w *world, wr Writer, clk clock.Clock) <-chan *Pass {
	t.Helper()
	d, err := New(Config{
		State: func() State { return w.st }, Writer: wr, Clock: clk,
		MinInterval: -1, RetryBase: time.Millisecond, RetryLimit: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	passes := make(chan *Pass, 100)
	d.observe = func(p *Pass) { passes <- p }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return passes
}

// nextPass waits for the drainer's next pass; it fails after 5 s.
func nextPass(t *testing.T, passes <-chan *Pass) *Pass {
	t.Helper()
	select {
	case p := <-passes:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no drainer pass within 5s")
		return nil
	}
}

// passUntil waits for a pass for which cond holds.
func passUntil(t *testing.T, passes <-chan *Pass, what string, cond func(*Pass) bool) *Pass {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case p := <-passes:
			if cond(p) {
				return p
			}
		case <-deadline:
			t.Fatalf("no pass with %s within 5s", what)
		}
	}
}

// update rewrites a stored allocation as the scheduler or a client would.
func (w *world) update(id string, change func(a *structs.Allocation)) {
	w.t.Helper()
	a, err := w.st.AllocByID(nil, id)
	if err != nil {
		w.t.Fatal(err)
	}
	c := a.Copy()
	change(c)
	if err := w.st.UpsertAllocs(w.next(), []*structs.Allocation{c}); err != nil {
		w.t.Fatal(err)
	}
}

func stopped(a *structs.Allocation) {
	a.DesiredStatus = structs.AllocDesiredStatusStop
	a.ClientStatus = structs.AllocClientStatusComplete
}

// TestRunMovesOneAtATime plays the scheduler and the clients around a
// running drainer: the second allocation is marked only once the first
// one's replacement runs, and the drain completes when the node is empty.
func TestRunMovesOneAtATime(t *testing.T) {
	w := newWorld(t)
	w.job("web", structs.JobTypeService, 3, 1)
	w.alloc("web", 0, "n1", "")
	w.alloc("web", 1, "n1", "")
	w.alloc("web", 2, "n2", "")
	w.drain("n1", 0, false)
	wr := &stateWriter{w: w}
	passes := runDrainer(t, w, wr, clock.NewManual(t0))

	if p := nextPass(t, passes); p.String() != "migrate=[web.web[0]] evals=1 complete=[]" {
		t.Fatalf("first pass: %s", p)
	}
	// The scheduler stops the marked allocation and places its
	// replacement, which is still pending.
	w.update("web-0-n1", func(a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusStop })
	repl := w.alloc("web", 0, "n3", "pending")
	passUntil(t, passes, "the replacement seen", func(p *Pass) bool {
		if !p.Empty() {
			t.Fatalf("pass while the replacement is pending: %s", p)
		}
		a, _ := w.st.AllocByID(nil, repl.ID)
		return a != nil
	})
	w.update("web-0-n1", stopped)
	w.update(repl.ID, func(a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusRunning })
	passUntil(t, passes, "the second mark", func(p *Pass) bool { return len(p.Migrate) > 0 })

	w.update("web-1-n1", stopped)
	w.alloc("web", 1, "n3", "running")
	passUntil(t, passes, "the drain complete", func(p *Pass) bool { return len(p.Complete) > 0 })

	marked, evals, complete := wr.record()
	if got := names2(marked); got != "web-0-n1 web-1-n1" {
		t.Fatalf("marked %s", got)
	}
	if got := names2(evals); got != "web web" {
		t.Fatalf("evaluations for %s", got)
	}
	if got := names2(complete); got != "n1" {
		t.Fatalf("completed %s", got)
	}
	node, err := w.st.NodeByID(nil, "n1")
	if err != nil {
		t.Fatal(err)
	}
	last := node.Events[len(node.Events)-1]
	if node.DrainStrategy != nil || node.Drain || node.SchedulingEligibility != structs.NodeSchedulingIneligible ||
		last.Message != EventDrainComplete || last.Subsystem != EventSubsystem || !last.Timestamp.Equal(t0) {
		t.Fatalf("node after the drain: drain=%v %+v eligibility=%s event=%+v", node.Drain, node.DrainStrategy, node.SchedulingEligibility, last)
	}
}

// TestRunWaitsForHealth: in a group whose migrate block judges health,
// a running replacement does not free the budget until the client has
// set its health; an unhealthy verdict (healthy_deadline passed) frees it
// as a healthy one does, so the drain goes on.
func TestRunWaitsForHealth(t *testing.T) {
	w := newWorld(t)
	c := w.job("web", structs.JobTypeService, 3, 1).Copy()
	c.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: 2 * time.Second, HealthyDeadline: time.Minute}
	if err := w.st.UpsertJob(w.next(), c, nil); err != nil {
		t.Fatal(err)
	}
	w.jobs["web"], _ = w.st.JobByID(nil, c.Namespace, c.ID)
	w.alloc("web", 0, "n1", "healthy")
	w.alloc("web", 1, "n1", "healthy")
	w.alloc("web", 2, "n1", "healthy")
	w.drain("n1", 0, false)
	wr := &stateWriter{w: w}
	passes := runDrainer(t, w, wr, clock.NewManual(t0))

	if p := nextPass(t, passes); p.String() != "migrate=[web.web[0]] evals=1 complete=[]" {
		t.Fatalf("first pass: %s", p)
	}
	// The scheduler stops web[0] and places its replacement, which runs
	// but has no health yet: nothing more may move.
	w.update("web-0-n1", stopped)
	repl := w.alloc("web", 0, "n2", "running")
	passUntil(t, passes, "the running replacement seen", func(p *Pass) bool {
		if !p.Empty() {
			t.Fatalf("pass while the replacement's health is not set: %s", p)
		}
		a, _ := w.st.AllocByID(nil, repl.ID)
		return a != nil
	})
	// The client sets it healthy (min_healthy_time passed): web[1] moves.
	w.update(repl.ID, func(a *structs.Allocation) {
		ok := true
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &ok, Timestamp: t0}
	})
	if p := passUntil(t, passes, "the second mark", func(p *Pass) bool { return len(p.Migrate) > 0 }); p.String() != "migrate=[web.web[1]] evals=1 complete=[]" {
		t.Fatalf("second mark: %s", p)
	}
	w.update("web-1-n1", stopped)
	repl = w.alloc("web", 1, "n2", "running")
	passUntil(t, passes, "the second replacement seen", func(p *Pass) bool {
		if !p.Empty() {
			t.Fatalf("pass while the second replacement's health is not set: %s", p)
		}
		a, _ := w.st.AllocByID(nil, repl.ID)
		return a != nil
	})
	// Its healthy_deadline passes: the client sets it unhealthy, and that
	// ends its migration too.
	w.update(repl.ID, func(a *structs.Allocation) {
		bad := false
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &bad, Timestamp: t0}
	})
	if p := passUntil(t, passes, "the third mark", func(p *Pass) bool { return len(p.Migrate) > 0 }); p.String() != "migrate=[web.web[2]] evals=1 complete=[]" {
		t.Fatalf("third mark: %s", p)
	}
	w.update("web-2-n1", stopped)
	passUntil(t, passes, "the drain complete", func(p *Pass) bool { return len(p.Complete) > 0 })
	marked, _, _ := wr.record()
	if got := names2(marked); got != "web-0-n1 web-1-n1 web-2-n1" {
		t.Fatalf("marked %s", got)
	}
}

// TestRunDeadline: nothing can move within the budget, until the
// deadline passes on the injected clock; then everything left is marked.
func TestRunDeadline(t *testing.T) {
	w := newWorld(t)
	w.job("web", structs.JobTypeService, 2, 1)
	w.alloc("web", 0, "n1", "")
	w.alloc("web", 1, "n2", "pending") // unhealthy: no budget
	w.drain("n1", time.Hour, false)
	clk := clock.NewManual(t0.Add(time.Minute))
	wr := &stateWriter{w: w}
	passes := runDrainer(t, w, wr, clk)

	if p := nextPass(t, passes); !p.Empty() || !p.NextDeadline.Equal(t0.Add(time.Hour)) {
		t.Fatalf("first pass: %s", p)
	}
	if !clk.WaitPending(1, 5*time.Second) { // the drainer arms its deadline timer
		t.Fatalf("%d timers armed, want the deadline's", clk.Pending())
	}
	clk.Advance(59 * time.Minute)
	p := passUntil(t, passes, "marks at the deadline", func(p *Pass) bool { return !p.Empty() })
	if p.String() != "migrate=[web.web[0]] evals=1 complete=[]" {
		t.Fatalf("pass at the deadline: %s", p)
	}
}

// TestRunRetriesFailedWrites: a failed write is retried by a later pass.
func TestRunRetriesFailedWrites(t *testing.T) {
	w := newWorld(t)
	w.job("web", structs.JobTypeService, 2, 1)
	w.alloc("web", 0, "n1", "")
	w.alloc("web", 1, "n2", "")
	w.drain("n1", 0, false)
	wr := &stateWriter{w: w, failNext: true}
	passes := runDrainer(t, w, wr, clock.NewManual(t0))
	passUntil(t, passes, "the mark", func(p *Pass) bool { return len(p.Migrate) > 0 })
	if marked, _, _ := wr.record(); names2(marked) != "web-0-n1" {
		t.Fatalf("marked %v", marked)
	}
}

func names2(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += " "
		}
		out += id
	}
	return out
}

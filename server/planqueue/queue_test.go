package planqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-metrics"
)

func testQueue(t *testing.T) *Queue {
	t.Helper()
	q := New(Config{})
	q.SetEnabled(true)
	return q
}

func mustEnqueue(t *testing.T, q *Queue, plan *structs.Plan) *PendingPlan {
	t.Helper()
	p, err := q.Enqueue(plan)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return p
}

// takeNow dequeues a plan that is ready now, or returns nil.
func takeNow(t *testing.T, q *Queue) *PendingPlan {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := q.DequeueContext(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("dequeue: %v", err)
	}
	return p
}

func TestDequeueOrder(t *testing.T) {
	cases := []struct {
		name       string
		priorities []int
		want       []int // enqueue positions in dequeue order
	}{
		{"priority first", []int{10, 90, 50}, []int{1, 2, 0}},
		{"FIFO within a priority", []int{50, 50, 50}, []int{0, 1, 2}},
		{"mixed", []int{50, 70, 50, 70}, []int{1, 3, 0, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := testQueue(t)
			var plans []*structs.Plan
			for i, pri := range tc.priorities {
				plan := &structs.Plan{EvalID: fmt.Sprint(i), Priority: pri}
				plans = append(plans, plan)
				mustEnqueue(t, q, plan)
			}
			for _, want := range tc.want {
				p := takeNow(t, q)
				if p == nil || p.Plan != plans[want] {
					t.Fatalf("dequeued %v, want plan %d", p, want)
				}
			}
			if p := takeNow(t, q); p != nil {
				t.Fatalf("queue not empty: %s", p.Plan.EvalID)
			}
		})
	}
}

func TestRespondReachesWaiters(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	q := New(Config{Now: func() time.Time { return now }})
	q.SetEnabled(true)
	p := mustEnqueue(t, q, &structs.Plan{EvalID: "e1"})
	if !p.EnqueueTime.Equal(now) {
		t.Fatalf("EnqueueTime = %v, want %v", p.EnqueueTime, now)
	}
	const waiters = 4
	type answer struct {
		res *structs.PlanResult
		err error
	}
	answers := make(chan answer, waiters)
	for range waiters {
		go func() {
			res, err := p.Wait()
			answers <- answer{res, err}
		}()
	}
	got := takeNow(t, q)
	want := &structs.PlanResult{AllocIndex: 42}
	got.Respond(want, nil)
	got.Respond(nil, errors.New("second answer is ignored"))
	for range waiters {
		if a := <-answers; a.res != want || a.err != nil {
			t.Fatalf("Wait = %v, %v; want the first answer", a.res, a.err)
		}
	}
	if s := q.Stats(); s.Depth != 0 || s.InFlight != 0 {
		t.Fatalf("stats after answer = %+v, want zero", s)
	}
}

func TestWaitContext(t *testing.T) {
	q := testQueue(t)
	p := mustEnqueue(t, q, &structs.Plan{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.WaitContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitContext err = %v, want canceled", err)
	}
	takeNow(t, q).Respond(nil, structs.ErrNotLeader)
	if _, err := p.WaitContext(context.Background()); !errors.Is(err, structs.ErrNotLeader) {
		t.Fatalf("WaitContext err = %v, want the answer", err)
	}
}

func TestDisabledQueue(t *testing.T) {
	q := New(Config{})
	if _, err := q.Enqueue(&structs.Plan{}); !errors.Is(err, structs.ErrPlanQueueDisabled) {
		t.Fatalf("Enqueue while disabled: err = %v", err)
	}
	if _, err := q.Dequeue(time.Hour); !errors.Is(err, structs.ErrPlanQueueDisabled) {
		t.Fatalf("Dequeue while disabled: err = %v", err)
	}
	q.SetEnabled(true)
	if _, err := q.Enqueue(nil); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("Enqueue(nil): err = %v, want invalid", err)
	}
}

func TestDisableFailsPendingPlans(t *testing.T) {
	q := testQueue(t)
	queued := mustEnqueue(t, q, &structs.Plan{EvalID: "queued", Priority: 10})
	inflight := mustEnqueue(t, q, &structs.Plan{EvalID: "inflight", Priority: 90})
	if p := takeNow(t, q); p != inflight {
		t.Fatal("did not dequeue the in-flight plan")
	}
	q.SetEnabled(false)
	for _, p := range []*PendingPlan{queued, inflight} {
		if _, err := p.Wait(); !errors.Is(err, structs.ErrPlanQueueDisabled) {
			t.Fatalf("%s: Wait err = %v, want plan queue disabled", p.Plan.EvalID, err)
		}
	}
	inflight.Respond(&structs.PlanResult{}, nil) // the applier answering late changes nothing
	if _, err := inflight.Wait(); !errors.Is(err, structs.ErrPlanQueueDisabled) {
		t.Fatalf("late Respond overrode the answer: %v", err)
	}
	if s := q.Stats(); s.Depth != 0 || s.InFlight != 0 {
		t.Fatalf("stats after disable = %+v", s)
	}
}

func TestDisableWakesDequeue(t *testing.T) {
	q := testQueue(t)
	errc := make(chan error, 1)
	go func() {
		_, err := q.Dequeue(0)
		errc <- err
	}()
	waitForDequeuer(t, q)
	q.SetEnabled(false)
	if err := <-errc; !errors.Is(err, structs.ErrPlanQueueDisabled) {
		t.Fatalf("blocked Dequeue err = %v, want plan queue disabled", err)
	}
}

// waitForDequeuer spins until a Dequeue caller is blocked in q.
func waitForDequeuer(t *testing.T, q *Queue) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q.mu.Lock()
		n := q.blocked
		q.mu.Unlock()
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blocked Dequeue callers, want 1", n)
		}
		runtime.Gosched()
	}
}

func TestDequeueWakesOnEnqueue(t *testing.T) {
	q := testQueue(t)
	got := make(chan *PendingPlan, 1)
	go func() {
		p, _ := q.Dequeue(0)
		got <- p
	}()
	waitForDequeuer(t, q)
	p := mustEnqueue(t, q, &structs.Plan{EvalID: "e"})
	if d := <-got; d != p {
		t.Fatalf("blocked Dequeue got %v, want the enqueued plan", d)
	}
}

func TestDequeueTimeoutAndContext(t *testing.T) {
	q := testQueue(t)
	if p, err := q.Dequeue(time.Millisecond); p != nil || err != nil {
		t.Fatalf("Dequeue on timeout = %v, %v; want nil, nil", p, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := q.DequeueContext(ctx); p != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("DequeueContext = %v, %v; want nil, canceled", p, err)
	}
}

func TestConcurrentSubmitters(t *testing.T) {
	const submitters, plansEach = 8, 200
	q := testQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the applier: answers each plan with its own eval ID
		for {
			p, err := q.DequeueContext(ctx)
			if err != nil {
				return
			}
			p.Respond(&structs.PlanResult{AllocIndex: p.Plan.SnapshotIndex}, nil)
		}
	}()
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range plansEach {
				id := uint64(s*plansEach + i)
				p, err := q.Enqueue(&structs.Plan{SnapshotIndex: id, Priority: i % 3})
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				if res, err := p.Wait(); err != nil || res.AllocIndex != id {
					t.Errorf("plan %d answered %+v, %v", id, res, err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestEmitStats(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	m, err := metrics.New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	q := New(Config{Metrics: m})
	q.SetEnabled(true)
	mustEnqueue(t, q, &structs.Plan{})
	mustEnqueue(t, q, &structs.Plan{})
	takeNow(t, q)
	if s := q.Stats(); s.Depth != 1 || s.InFlight != 1 {
		t.Fatalf("stats = %+v, want depth 1, in flight 1", s)
	}
	q.EmitStats()
	gauges := sink.Data()[0].Gauges
	for key, want := range map[string]float32{MetricQueueDepth: 1, MetricInFlight: 1} {
		if g, ok := gauges[key]; !ok || g.Value != want {
			t.Errorf("gauge %s = %+v, want %v", key, g, want)
		}
	}
}

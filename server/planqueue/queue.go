package planqueue

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
)

// Config configures a Queue. The zero value is valid.
type Config struct {
	// Now stamps PendingPlan.EnqueueTime; defaults to time.Now.
	Now func() time.Time
	// Logger defaults to a null logger; the queue names it "plan_queue".
	Logger hclog.Logger
	// Metrics receives EmitStats gauges; nil means the go-metrics global.
	Metrics *metrics.Metrics
}

// Queue holds pending plans for the applier. Create one with New.
type Queue struct {
	now     func() time.Time
	logger  hclog.Logger
	metrics *metrics.Metrics

	mu sync.Mutex
	// Every field below is guarded by mu.
	enabled  bool
	queued   planHeap
	seq      uint64                    // arrival counter, FIFO tie-break
	inflight map[*PendingPlan]struct{} // dequeued, not yet answered
	signal   chan struct{}             // closed (and replaced) on enqueue or disable
	blocked  int                       // Dequeue callers waiting on signal
}

// New returns a disabled queue.
func New(cfg Config) *Queue {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Queue{
		now:      cfg.Now,
		logger:   cfg.Logger.Named("plan_queue"),
		metrics:  cfg.Metrics,
		inflight: map[*PendingPlan]struct{}{},
		signal:   make(chan struct{}),
	}
}

// Enabled reports whether the queue accepts plans.
func (q *Queue) Enabled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.enabled
}

// SetEnabled turns the queue on (leadership gained) or off (lost).
// Disabling answers every queued and in-flight plan with
// structs.ErrPlanQueueDisabled.
func (q *Queue) SetEnabled(enabled bool) {
	q.mu.Lock()
	if q.enabled != enabled {
		q.logger.Debug("plan queue state changed", "enabled", enabled)
	}
	q.enabled = enabled
	var failed []*PendingPlan
	if !enabled {
		failed = q.drainLocked()
	}
	q.mu.Unlock()
	for _, p := range failed {
		p.Respond(nil, structs.ErrPlanQueueDisabled)
	}
}

// drainLocked empties the queue and in-flight set, wakes Dequeue callers,
// and returns every plan that still needs an answer.
func (q *Queue) drainLocked() []*PendingPlan {
	out := make([]*PendingPlan, 0, len(q.queued)+len(q.inflight))
	for _, p := range q.queued {
		out = append(out, p)
	}
	for p := range q.inflight {
		out = append(out, p)
	}
	q.queued = nil
	q.inflight = map[*PendingPlan]struct{}{}
	q.wakeLocked()
	return out
}

// wakeLocked wakes every blocked Dequeue caller.
func (q *Queue) wakeLocked() {
	close(q.signal)
	q.signal = make(chan struct{})
}

// Enqueue queues a plan for the applier and returns its future.
func (q *Queue) Enqueue(plan *structs.Plan) (*PendingPlan, error) {
	if plan == nil {
		return nil, structs.NewError(structs.ErrCodeInvalid, "plan queue: nil plan")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, structs.ErrPlanQueueDisabled
	}
	q.seq++
	p := &PendingPlan{Plan: plan, EnqueueTime: q.now(), queue: q, seq: q.seq, done: make(chan struct{})}
	heap.Push(&q.queued, p)
	q.wakeLocked()
	return p, nil
}

// Dequeue removes and returns the best queued plan, waiting up to timeout
// (timeout <= 0 waits until a plan arrives or the queue is disabled). On
// timeout it returns (nil, nil); while disabled, structs.ErrPlanQueueDisabled.
// The caller must Respond to the plan it receives.
func (q *Queue) Dequeue(timeout time.Duration) (*PendingPlan, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p, err := q.DequeueContext(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, nil
	}
	return p, err
}

// DequeueContext is Dequeue bounded by ctx; when ctx ends first it returns
// (nil, ctx.Err()).
func (q *Queue) DequeueContext(ctx context.Context) (*PendingPlan, error) {
	for {
		p, signal, err := q.takeOrSignal()
		if p != nil || err != nil {
			return p, err
		}
		select {
		case <-signal:
			q.unblock()
		case <-ctx.Done():
			q.unblock()
			return nil, ctx.Err()
		}
	}
}

// unblock records that a Dequeue caller stopped waiting on signal.
func (q *Queue) unblock() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.blocked--
}

// takeOrSignal takes the best plan, or returns the channel to wait on.
func (q *Queue) takeOrSignal() (*PendingPlan, <-chan struct{}, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, nil, structs.ErrPlanQueueDisabled
	}
	if len(q.queued) == 0 {
		q.blocked++
		return nil, q.signal, nil
	}
	p := heap.Pop(&q.queued).(*PendingPlan)
	q.inflight[p] = struct{}{}
	return p, nil, nil
}

// forget drops an answered plan from the in-flight set.
func (q *Queue) forget(p *PendingPlan) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inflight, p)
}

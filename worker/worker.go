package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/scheduler"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Metric keys, one per stage of the loop.
var (
	metricDequeue         = []string{"drover", "worker", "dequeue"}
	metricWaitForIndex    = []string{"drover", "worker", "wait_for_index"}
	metricInvokeScheduler = []string{"drover", "worker", "invoke_scheduler"}
	metricSubmitPlan      = []string{"drover", "worker", "submit_plan"}
)

// Leader is what a worker needs from the cluster leader. server/ provides
// an implementation that calls the leader's broker and plan queue directly
// when this server leads, and over RPC otherwise.
type Leader interface {
	// Dequeue waits up to timeout for an evaluation of one of the given
	// scheduler types. It returns a nil evaluation on timeout. waitIndex is
	// the state index the worker must reach before scheduling.
	Dequeue(ctx context.Context, schedulers []string, timeout time.Duration) (eval *structs.Evaluation, token string, waitIndex uint64, err error)
	Ack(ctx context.Context, evalID, token string) error
	Nack(ctx context.Context, evalID, token string) error
	// SubmitPlan hands a plan to the leader's plan queue and waits for the
	// applier's result.
	SubmitPlan(ctx context.Context, plan *structs.Plan) (*structs.PlanResult, error)
	// UpdateEvals writes evaluations (updates, new follow-ups, reblocks)
	// through Raft; token proves the caller still holds its evaluation.
	UpdateEvals(ctx context.Context, evals []*structs.Evaluation, token string) error
	// ReblockEval hands a blocked evaluation back to blocked-evals tracking.
	ReblockEval(ctx context.Context, eval *structs.Evaluation, token string) error
}

// StateSource returns the server's current local state store (it changes
// when a snapshot is restored).
type StateSource func() *state.StateStore

// Config configures a worker.
type Config struct {
	Logger     hclog.Logger
	Leader     Leader
	State      StateSource
	Schedulers []string // scheduler types this worker serves
	Factories  map[string]scheduler.Factory
	Now        func() time.Time

	// Timings; zero values take the defaults below.
	DequeueTimeout   time.Duration // 500 ms
	IndexWaitLimit   time.Duration // 5 s
	IndexWaitBase    time.Duration // 20 ms
	IndexWaitMax     time.Duration // 1 s
	SubmitRetryBase  time.Duration // 500 ms
	SubmitRetryLimit time.Duration // 10 s
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.DequeueTimeout, 500*time.Millisecond)
	def(&c.IndexWaitLimit, 5*time.Second)
	def(&c.IndexWaitBase, 20*time.Millisecond)
	def(&c.IndexWaitMax, time.Second)
	def(&c.SubmitRetryBase, 500*time.Millisecond)
	def(&c.SubmitRetryLimit, 10*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Factories == nil {
		c.Factories = scheduler.BuiltinSchedulers
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Worker is one scheduling goroutine. Start it with Run; stop it by
// cancelling Run's context.
type Worker struct {
	cfg    Config
	logger hclog.Logger

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool // guarded by mu
}

// New returns a worker; it does nothing until Run.
func New(cfg Config) *Worker {
	cfg.setDefaults()
	w := &Worker{cfg: cfg, logger: cfg.Logger.Named("worker")}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// Pause stops the worker from dequeuing new evaluations after the current
// one. Safe to call from any goroutine.
func (w *Worker) Pause() {
	w.mu.Lock()
	w.paused = true
	w.mu.Unlock()
}

// Resume undoes Pause.
func (w *Worker) Resume() {
	w.mu.Lock()
	w.paused = false
	w.mu.Unlock()
	w.cond.Broadcast()
}

// Paused reports whether the worker is paused.
func (w *Worker) Paused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

// waitWhilePaused blocks while paused; it returns false once ctx ends.
func (w *Worker) waitWhilePaused(ctx context.Context) bool {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.paused && ctx.Err() == nil {
		w.cond.Wait()
	}
	return ctx.Err() == nil
}

// Run loops until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	dequeueBackoff := backoff.New(w.cfg.SubmitRetryBase, w.cfg.SubmitRetryLimit)
	for w.waitWhilePaused(ctx) {
		eval, token, waitIndex, err := w.dequeue(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.Debug("dequeue failed", "error", err)
			if dequeueBackoff.Wait(ctx) != nil {
				return
			}
			continue
		}
		dequeueBackoff.Reset()
		if eval == nil {
			continue
		}
		w.process(ctx, eval, token, waitIndex)
	}
}

func (w *Worker) dequeue(ctx context.Context) (*structs.Evaluation, string, uint64, error) {
	defer metrics.MeasureSince(metricDequeue, time.Now())
	return w.cfg.Leader.Dequeue(ctx, w.cfg.Schedulers, w.cfg.DequeueTimeout)
}

// process runs one evaluation and acks or nacks it.
func (w *Worker) process(ctx context.Context, eval *structs.Evaluation, token string, waitIndex uint64) {
	logger := w.logger.With("eval_id", eval.ID, "job_id", eval.JobID, "type", eval.Type, "triggered_by", eval.TriggeredBy)
	start := time.Now()
	err := w.schedule(ctx, logger, eval, token, waitIndex)
	if err == nil {
		if err := w.cfg.Leader.Ack(ctx, eval.ID, token); err != nil {
			logger.Warn("ack failed", "error", err)
		}
		logger.Debug("evaluation processed", "took", time.Since(start))
		return
	}
	if ctx.Err() != nil {
		return // shutting down: the broker's nack timer redelivers it
	}
	logger.Error("scheduling failed; nacking", "error", err)
	if err := w.cfg.Leader.Nack(ctx, eval.ID, token); err != nil {
		logger.Warn("nack failed", "error", err)
	}
}

func (w *Worker) schedule(ctx context.Context, logger hclog.Logger, eval *structs.Evaluation, token string, waitIndex uint64) error {
	snap, err := w.snapshotAt(ctx, waitIndex)
	if err != nil {
		return err
	}
	factory, ok := w.cfg.Factories[eval.Type]
	if !ok {
		return fmt.Errorf("no scheduler for type %q", eval.Type)
	}
	snapIndex, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	p := &planner{w: w, ctx: ctx, eval: eval, token: token, snapIndex: snapIndex}
	sched := factory(logger, snap, p, w.cfg.Now)
	defer metrics.MeasureSince(metricInvokeScheduler, time.Now())
	return sched.Process(eval)
}

// snapshotAt waits until the local state reaches index, then snapshots it.
func (w *Worker) snapshotAt(ctx context.Context, index uint64) (*state.StateSnapshot, error) {
	start := time.Now()
	defer metrics.MeasureSince(metricWaitForIndex, start)
	b := backoff.New(w.cfg.IndexWaitBase, w.cfg.IndexWaitMax)
	for {
		store := w.cfg.State()
		latest, err := store.LatestIndex()
		if err != nil {
			return nil, err
		}
		if latest >= index {
			return store.Snapshot()
		}
		if time.Since(start) >= w.cfg.IndexWaitLimit {
			return nil, fmt.Errorf("state index %d did not reach %d within %s", latest, index, w.cfg.IndexWaitLimit)
		}
		if err := b.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// retryable reports whether a leader call should be retried: the leader is
// missing or changing, so the same call will work once one is elected.
func retryable(err error) bool {
	switch structs.CodeOf(err) {
	case structs.ErrCodeNoLeader, structs.ErrCodeNotLeader, structs.ErrCodePlanQueueDisabled:
		return true
	}
	return false
}

// planner implements scheduler.Planner for one evaluation.
type planner struct {
	w     *Worker
	ctx   context.Context
	eval  *structs.Evaluation
	token string
	// snapIndex is the index of the snapshot the scheduler now works on.
	// Blocked evals record it so that blocked-evals tracking can tell
	// whether capacity appeared after the scheduler looked.
	snapIndex uint64
}

var _ scheduler.Planner = (*planner)(nil)

// SubmitPlan sends the plan to the leader, retrying while there is no
// leader. If the applier committed only part of it, it waits for the
// refresh index and returns a fresh snapshot for the scheduler to retry on.
func (p *planner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	start := time.Now()
	defer metrics.MeasureSince(metricSubmitPlan, start)
	plan.EvalToken = p.token
	var result *structs.PlanResult
	b := backoff.New(p.w.cfg.SubmitRetryBase, p.w.cfg.SubmitRetryLimit)
	err := backoff.Retry(p.ctx, b, 0, retryable, func() error {
		var err error
		result, err = p.w.cfg.Leader.SubmitPlan(p.ctx, plan)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if p.w.logger.IsDebug() {
		placed := 0
		for _, allocs := range result.NodeAllocation {
			placed += len(allocs)
		}
		p.w.logger.Debug("plan submitted", "eval_id", p.eval.ID, "placed", placed,
			"alloc_index", result.AllocIndex, "refresh_index", result.RefreshIndex, "took", time.Since(start))
	}
	if result.RefreshIndex == 0 {
		return result, nil, nil
	}
	snap, err := p.w.snapshotAt(p.ctx, result.RefreshIndex)
	if err != nil {
		return nil, nil, err
	}
	if p.snapIndex, err = snap.LatestIndex(); err != nil {
		return nil, nil, err
	}
	return result, snap, nil
}

func (p *planner) writeEvals(evals ...*structs.Evaluation) error {
	b := backoff.New(p.w.cfg.SubmitRetryBase, p.w.cfg.SubmitRetryLimit)
	return backoff.Retry(p.ctx, b, 0, retryable, func() error {
		return p.w.cfg.Leader.UpdateEvals(p.ctx, evals, p.token)
	})
}

// UpdateEval writes the processed evaluation's new status.
func (p *planner) UpdateEval(eval *structs.Evaluation) error { return p.writeEvals(eval) }

// CreateEval writes a new (follow-up or blocked) evaluation.
func (p *planner) CreateEval(eval *structs.Evaluation) error {
	if eval.Status == structs.EvalStatusBlocked {
		eval.SnapshotIndex = p.snapIndex
	}
	return p.writeEvals(eval)
}

// ReblockEval returns a blocked evaluation to blocked-evals tracking.
func (p *planner) ReblockEval(eval *structs.Evaluation) error {
	if eval.Status != structs.EvalStatusBlocked {
		return errors.New("ReblockEval: evaluation is not blocked")
	}
	eval.SnapshotIndex = p.snapIndex
	b := backoff.New(p.w.cfg.SubmitRetryBase, p.w.cfg.SubmitRetryLimit)
	return backoff.Retry(p.ctx, b, 0, retryable, func() error {
		return p.w.cfg.Leader.ReblockEval(p.ctx, eval, p.token)
	})
}

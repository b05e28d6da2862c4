package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/server/blockedevals"
	"github.com/drover-project/drover/server/evalbroker"
	"github.com/drover-project/drover/server/planapply"
	"github.com/drover-project/drover/server/planqueue"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Periods of the leader's background loops.
const (
	statsInterval         = time.Second
	unblockFailedInterval = time.Minute
	cancelableInterval    = 200 * time.Millisecond
	// cancelBatch bounds the evaluations canceled in one Raft entry.
	cancelBatch = 512
	// Backoff of the failed-queue loop after an error.
	reapRetryBase  = 100 * time.Millisecond
	reapRetryLimit = 5 * time.Second
)

// newPipeline creates the leader's scheduling components, all disabled.
func (s *Server) newPipeline() error {
	bcfg := evalbroker.DefaultConfig()
	if c := s.config; c.EvalNackTimeout > 0 {
		bcfg.NackTimeout = c.EvalNackTimeout
	}
	if c := s.config; c.EvalDeliveryLimit > 0 {
		bcfg.DeliveryLimit = c.EvalDeliveryLimit
	}
	if c := s.config; c.EvalInitialNackDelay > 0 {
		bcfg.InitialNackDelay = c.EvalInitialNackDelay
	}
	if c := s.config; c.EvalSubsequentNackDelay > 0 {
		bcfg.SubsequentNackDelay = c.EvalSubsequentNackDelay
	}
	bcfg.Logger = s.logger
	// A node-event evaluation paced up to its largest window later still
	// absorbs events (node_evals.go).
	bcfg.CoverDelay = nodeEvalMaxWindows * s.config.NodeEvalWindow
	broker, err := evalbroker.New(bcfg)
	if err != nil {
		return fmt.Errorf("eval broker: %w", err)
	}
	blcfg := blockedevals.DefaultConfig()
	blcfg.Enqueuer = broker
	blcfg.Logger = s.logger
	blocked, err := blockedevals.New(blcfg)
	if err != nil {
		return fmt.Errorf("blocked evals: %w", err)
	}
	s.broker, s.blocked = broker, blocked
	s.planQueue = planqueue.New(planqueue.Config{Logger: s.logger})
	s.nodePacer = newNodeEvalPacer(s.config.NodeEvalWindow)
	s.newHeartbeater()
	return s.newQuarantine()
}

// builtinLeaderHooks are established before Config.LeaderHooks, in this
// order, and revoked after them in reverse. The node drainer and garbage
// collector are left out when Config.LeaderHooks brings its own (by name).
func (s *Server) builtinLeaderHooks() []LeaderHook {
	hooks := []LeaderHook{aclHook{}, keyringHook{}, &planHook{}, &evalHook{}, &heartbeatHook{}, &workerHook{}, &periodicHook{},
		&deploymentWatcherHook{}, &quarantineHook{}, &autoscalerHook{}}
	given := map[string]bool{}
	for _, h := range s.config.LeaderHooks {
		given[h.Name()] = true
	}
	for _, h := range DrainGCLeaderHooks(s.config.DrainGC) {
		if !given[h.Name()] {
			hooks = append(hooks, h)
		}
	}
	return hooks
}

// planHook runs the plan queue and the plan applier while leading.
type planHook struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *planHook) Name() string { return "plan_applier" }

func (h *planHook) Establish(s *Server) error {
	s.planQueue.SetEnabled(true)
	applier := planapply.New(planapply.Config{
		Logger: s.logger,
		Queue:  planQueueAdapter{s.planQueue},
		State:  s.fsm.State,
		Apply: func(req *structs.ApplyPlanResultsRequest) (uint64, error) {
			t := structs.ApplyPlanResultsRequestType
			if len(req.AllocGroups) > 0 {
				t = structs.ApplyPlanResultsGroupedRequestType
			}
			index, _, err := s.raftApply(t, req)
			return index, err
		},
		Placed: func(n int) { s.placements.Add(uint64(n)) },
	})
	ctx, cancel := context.WithCancel(s.shutdownCtx)
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		applier.Run(ctx)
	}()
	return nil
}

func (h *planHook) Revoke(s *Server) error {
	// Disabling first fails every queued plan, so no worker waits on an
	// applier that is going away.
	s.planQueue.SetEnabled(false)
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel, h.done = nil, nil
	}
	return nil
}

// planQueueAdapter lets the applier dequeue from the plan queue.
type planQueueAdapter struct{ q *planqueue.Queue }

func (a planQueueAdapter) Dequeue(ctx context.Context) (planapply.Pending, error) {
	p, err := a.q.DequeueContext(ctx)
	if err != nil {
		return nil, err
	}
	return queuedPlan{p}, nil
}

// queuedPlan is a planqueue.PendingPlan as a planapply.Pending.
type queuedPlan struct{ p *planqueue.PendingPlan }

func (q queuedPlan) Plan() *structs.Plan                      { return q.p.Plan }
func (q queuedPlan) Respond(r *structs.PlanResult, err error) { q.p.Respond(r, err) }

var _ planapply.Pending = queuedPlan{}

// evalHook runs the eval broker and blocked evals while leading, with the
// loops that write what they decide through Raft.
type evalHook struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (h *evalHook) Name() string { return "eval_broker" }

func (h *evalHook) Establish(s *Server) error {
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	if err := s.restoreEvals(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(s.shutdownCtx)
	h.cancel = cancel
	for _, loop := range []func(context.Context){
		s.reapFailedEvals, s.reapDuplicateBlocked, s.reapCancelable, s.pipelineStats, s.jobGauges,
	} {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			loop(ctx)
		}()
	}
	return nil
}

func (h *evalHook) Revoke(s *Server) error {
	s.broker.SetEnabled(false)
	s.blocked.SetEnabled(false)
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
	return nil
}

// restoreEvals hands every pending evaluation in state to the broker and
// every blocked one to blocked evals, and sets the floor every delivery
// waits for to the latest index in state: a restored evaluation may have
// absorbed node events (node_evals.go) written after it under the previous
// leader, and must be planned with them. It runs after the leader's barrier
// with both enabled, so an evaluation written meanwhile arrives through the
// FSM hook too; the broker ignores one it already holds.
func (s *Server) restoreEvals() error {
	st := s.fsm.State()
	s.nodePacer.reset()
	latest, err := st.LatestIndex()
	if err != nil {
		return fmt.Errorf("restore evals: %w", err)
	}
	s.evalFloor.Store(latest)
	pending, err := st.EvalsByStatus(nil, structs.EvalStatusPending)
	if err != nil {
		return fmt.Errorf("restore pending evals: %w", err)
	}
	for _, e := range pending {
		s.broker.Enqueue(e)
	}
	blocked, err := st.EvalsByStatus(nil, structs.EvalStatusBlocked)
	if err != nil {
		return fmt.Errorf("restore blocked evals: %w", err)
	}
	for _, e := range blocked {
		s.blocked.Block(e)
	}
	s.logger.Debug("restored evaluations", "pending", len(pending), "blocked", len(blocked))
	return nil
}

// reapFailedEvals takes evaluations that reached the delivery limit from
// the broker's failed queue, marks each failed with a delayed follow-up
// evaluation (one Raft entry), and acks it.
func (s *Server) reapFailedEvals(ctx context.Context) {
	b := backoff.New(reapRetryBase, reapRetryLimit)
	for {
		eval, token, err := s.broker.DequeueContext(ctx, []string{evalbroker.FailedQueue})
		if err != nil || eval == nil {
			if ctx.Err() != nil {
				return
			}
			s.logger.Debug("failed-queue dequeue", "error", err)
			if b.Wait(ctx) != nil {
				return
			}
			continue
		}
		base := s.config.FailedEvalFollowupDelay
		wait := base + time.Duration(rand.Int64N(int64(base)))
		now := time.Now()
		follow := eval.CreateFollowUpEval(structs.EvalTriggerFailedFollowUp, wait, now)
		failed := eval.Copy()
		failed.Status = structs.EvalStatusFailed
		failed.StatusDescription = fmt.Sprintf("evaluation reached the delivery limit (%d)", s.brokerDeliveryLimit())
		failed.NextEval = follow.ID
		failed.ModifyTime = now.UnixNano()
		req := &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{failed, follow}}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, req); err != nil {
			s.logger.Error("failed to mark evaluation failed", "eval_id", eval.ID, "error", err)
			// Nack it back: it returns to the failed queue.
			s.broker.Nack(eval.ID, token)
			if b.Wait(ctx) != nil {
				return
			}
			continue
		}
		b.Reset()
		s.logger.Warn("evaluation failed after too many deliveries", "eval_id", eval.ID, "job_id", eval.JobID,
			"follow_up_eval_id", follow.ID, "wait", wait)
		if err := s.broker.Ack(eval.ID, token); err != nil {
			s.logger.Debug("ack of failed evaluation", "eval_id", eval.ID, "error", err)
		}
	}
}

func (s *Server) brokerDeliveryLimit() int {
	if s.config.EvalDeliveryLimit > 0 {
		return s.config.EvalDeliveryLimit
	}
	return evalbroker.DefaultDeliveryLimit
}

// reapDuplicateBlocked cancels blocked evaluations superseded by a newer
// one of the same job.
func (s *Server) reapDuplicateBlocked(ctx context.Context) {
	for {
		dups := s.blocked.GetDuplicatesContext(ctx)
		if ctx.Err() != nil {
			return
		}
		s.cancelEvals(ctx, dups, "superseded by a newer blocked evaluation of the job")
	}
}

// reapCancelable cancels evaluations the broker superseded (a newer
// evaluation of the same job was released in their place).
func (s *Server) reapCancelable(ctx context.Context) {
	t := time.NewTicker(cancelableInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			evals := s.broker.Cancelable(cancelBatch)
			if len(evals) == 0 {
				break
			}
			s.cancelEvals(ctx, evals, "superseded by a newer evaluation of the job")
		}
	}
}

// cancelEvals marks evals canceled through Raft, in batches.
func (s *Server) cancelEvals(ctx context.Context, evals []*structs.Evaluation, desc string) {
	now := time.Now().UnixNano()
	for len(evals) > 0 && ctx.Err() == nil {
		n := min(len(evals), cancelBatch)
		batch := make([]*structs.Evaluation, 0, n)
		for _, e := range evals[:n] {
			c := e.Copy()
			c.Status = structs.EvalStatusCancelled
			c.StatusDescription = desc
			c.ModifyTime = now
			batch = append(batch, c)
		}
		evals = evals[n:]
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: batch}); err != nil {
			s.logger.Error("failed to cancel superseded evaluations", "count", len(batch), "error", err)
			return
		}
	}
}

// pipelineStats emits the components' gauges every second and releases
// evaluations blocked after too many plan attempts every minute.
func (s *Server) pipelineStats(ctx context.Context) {
	stats := time.NewTicker(statsInterval)
	defer stats.Stop()
	unblock := time.NewTicker(unblockFailedInterval)
	defer unblock.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stats.C:
			s.emitPipelineGauges()
		case <-unblock.C:
			s.blocked.UnblockFailed()
		}
	}
}

// evalWaitIndex is the index a worker's state must reach before it
// schedules eval: the highest ModifyIndex of any evaluation of the job. A
// plan touches its evaluation's ModifyIndex and a worker writes the
// evaluation before acking it, so this covers every plan committed for the
// job by earlier evaluations (the broker hands out one per job at a time):
// the worker never schedules the job on state that misses its own
// placements.
//
// An evaluation that blocked evals released (still blocked in state: the
// worker writes its new status) waits for the leader's latest index: the
// capacity change that released it is applied at or below that index, and
// so is every plan committed by the evaluations of its batch that went out
// before it (see evalbroker.EnqueueAll). A worker on a lagging follower
// would otherwise schedule it on a snapshot without the freed capacity
// (and block it again), or without a higher-priority job's placement in
// that capacity.
func evalWaitIndex(st *state.StateStore, eval *structs.Evaluation) uint64 {
	index := max(eval.ModifyIndex, eval.CreateIndex)
	if stored, err := st.EvalByID(nil, eval.ID); err == nil && stored.Status == structs.EvalStatusBlocked {
		if latest, err := st.LatestIndex(); err == nil {
			index = max(index, latest)
		}
	}
	if eval.JobID == "" {
		return index
	}
	evals, err := st.EvalsByJob(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return index
	}
	for _, e := range evals {
		index = max(index, e.ModifyIndex)
	}
	return index
}

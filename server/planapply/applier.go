package planapply

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

var (
	metricEvaluate = []string{"drover", "plan", "evaluate"}
	metricApply    = []string{"drover", "plan", "apply"}
	metricRejected = []string{"drover", "plan", "node_rejected"}
)

// Pending is a plan waiting for its result.
type Pending interface {
	Plan() *structs.Plan
	// Respond delivers the result to the submitter. Called exactly once.
	Respond(*structs.PlanResult, error)
}

// Queue hands the applier the next plan, highest priority first. Dequeue
// blocks until a plan is ready or ctx ends.
type Queue interface {
	Dequeue(ctx context.Context) (Pending, error)
}

// Config wires an Applier.
type Config struct {
	Logger hclog.Logger
	Queue  Queue
	// State returns the current local state store.
	State func() *state.StateStore
	// Apply commits one plan result through Raft and returns its index. It
	// blocks until the entry is applied to the local FSM.
	Apply func(*structs.ApplyPlanResultsRequest) (uint64, error)
	Now   func() time.Time
}

// Applier runs the plan apply loop on the leader.
type Applier struct {
	cfg    Config
	logger hclog.Logger
}

// New returns an applier; call Run on the leader.
func New(cfg Config) *Applier {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Applier{cfg: cfg, logger: cfg.Logger.Named("plan_apply")}
}

// commit is one Raft apply in flight.
type commit struct {
	req   *structs.ApplyPlanResultsRequest
	done  chan struct{}
	index uint64 // set before done is closed
	err   error  // set before done is closed
}

func (c *commit) wait() { <-c.done }

// Run applies plans until ctx ends (leadership lost). Plans still queued
// are the queue's to fail.
func (a *Applier) Run(ctx context.Context) {
	var prev *commit
	defer func() {
		if prev != nil {
			prev.wait()
		}
	}()
	for {
		pending, err := a.cfg.Queue.Dequeue(ctx)
		if err != nil {
			if ctx.Err() == nil {
				a.logger.Error("plan dequeue failed", "error", err)
			}
			return
		}
		prev = a.handle(pending, prev)
	}
}

// handle evaluates one plan and starts its commit; it returns the commit
// now in flight (nil if none).
func (a *Applier) handle(pending Pending, prev *commit) *commit {
	plan := pending.Plan()
	if prev != nil && prev.finished() {
		prev = nil
	}
	result, snapIndex, err := a.evaluate(plan, prev)
	if err != nil {
		pending.Respond(nil, err)
		return prev
	}
	if prev != nil {
		// One commit at a time. If the previous one failed, this plan was
		// checked against a result that never happened: check it again.
		prev.wait()
		if prev.err != nil {
			if result, snapIndex, err = a.evaluate(plan, nil); err != nil {
				pending.Respond(nil, err)
				return nil
			}
		}
		snapIndex = max(snapIndex, prev.index)
	}
	if result.IsNoOp() {
		if len(result.RejectedNodes) > 0 {
			result.RefreshIndex = snapIndex
		}
		pending.Respond(result, nil)
		return nil
	}
	return a.startCommit(pending, plan, result, snapIndex)
}

func (c *commit) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// evaluate checks the plan against the latest state plus, optimistically,
// the commit still in flight.
func (a *Applier) evaluate(plan *structs.Plan, inflight *commit) (*structs.PlanResult, uint64, error) {
	defer metrics.MeasureSince(metricEvaluate, time.Now())
	snap, err := a.cfg.State().Snapshot()
	if err != nil {
		return nil, 0, err
	}
	index, err := snap.LatestIndex()
	if err != nil {
		return nil, 0, err
	}
	if inflight != nil {
		if err := snap.UpsertPlanResults(index+1, cloneRequest(inflight.req)); err != nil {
			return nil, 0, err
		}
	}
	result, err := EvaluatePlan(snap, plan)
	if err != nil {
		return nil, 0, err
	}
	if n := len(result.RejectedNodes); n > 0 {
		metrics.IncrCounter(metricRejected, float32(n))
		a.logger.Debug("plan refused on some nodes", "eval_id", plan.EvalID, "nodes", n)
	}
	return result, index, nil
}

// startCommit applies the result through Raft on its own goroutine and
// responds when it is done.
func (a *Applier) startCommit(pending Pending, plan *structs.Plan, result *structs.PlanResult, snapIndex uint64) *commit {
	c := &commit{req: a.request(plan, result), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		start := time.Now()
		c.index, c.err = a.cfg.Apply(c.req)
		metrics.MeasureSince(metricApply, start)
		if c.err != nil {
			pending.Respond(nil, c.err)
			return
		}
		result.AllocIndex = c.index
		if len(result.RejectedNodes) > 0 {
			result.RefreshIndex = max(snapIndex, c.index)
		}
		pending.Respond(result, nil)
	}()
	return c
}

// request builds the Raft entry. Allocations are shallow-copied, and Job
// is cleared on those that run the plan's job version: the entry carries
// that job once and the FSM points them at it. An allocation that keeps an
// older version (a follow-up recorded on an old failed allocation) keeps its
// own Job.
func (a *Applier) request(plan *structs.Plan, result *structs.PlanResult) *structs.ApplyPlanResultsRequest {
	now := a.cfg.Now().UnixNano()
	req := &structs.ApplyPlanResultsRequest{Job: plan.Job, EvalID: plan.EvalID, UpdatedAt: now}
	for _, allocs := range result.NodeUpdate {
		for _, alloc := range allocs {
			c := *alloc
			c.Job = nil
			c.ModifyTime = now
			req.AllocsStopped = append(req.AllocsStopped, &c)
		}
	}
	for _, allocs := range result.NodeAllocation {
		for _, alloc := range allocs {
			c := *alloc
			if samePlanJob(c.Job, plan.Job) {
				c.Job = nil
			}
			if c.CreateTime == 0 {
				c.CreateTime = now
			}
			c.ModifyTime = now
			req.AllocsUpdated = append(req.AllocsUpdated, &c)
		}
	}
	return req
}

// samePlanJob reports whether an allocation's job is the plan's version.
func samePlanJob(allocJob, planJob *structs.Job) bool {
	if allocJob == nil || planJob == nil {
		return allocJob == planJob
	}
	return allocJob == planJob || (allocJob.Namespace == planJob.Namespace && allocJob.ID == planJob.ID &&
		allocJob.Version == planJob.Version && allocJob.JobModifyIndex == planJob.JobModifyIndex)
}

// cloneRequest copies the request's job and allocations (shallowly; the
// store writes only their top-level fields) so that the
// optimistic write into a snapshot cannot touch objects the Raft apply is
// still encoding.
func cloneRequest(req *structs.ApplyPlanResultsRequest) *structs.ApplyPlanResultsRequest {
	c := *req
	if req.Job != nil {
		j := *req.Job
		c.Job = &j
	}
	c.AllocsStopped = cloneAllocs(req.AllocsStopped)
	c.AllocsUpdated = cloneAllocs(req.AllocsUpdated)
	return &c
}

func cloneAllocs(in []*structs.Allocation) []*structs.Allocation {
	out := make([]*structs.Allocation, len(in))
	for i, a := range in {
		c := *a
		out[i] = &c
	}
	return out
}

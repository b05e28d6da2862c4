package planapply

import (
	"context"
	"errors"
	"maps"
	"slices"
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
	// MetricPlacements counts new allocations committed by the applier
	// (not in-place updates, not stops): rate() of it is placements per
	// second. Only the leader applies plans, so only it counts.
	MetricPlacements = []string{"drover", "plan", "placements"}
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

// DefaultMaxInflight bounds the commits in flight at once.
const DefaultMaxInflight = 16

// Config wires an Applier.
type Config struct {
	Logger hclog.Logger
	Queue  Queue
	// State returns the current local state store.
	State func() *state.StateStore
	// Apply commits one plan result through Raft and returns its index. It
	// blocks until the entry is applied to the local FSM. The applier calls
	// it from several goroutines at once (up to MaxInflight).
	Apply func(*structs.ApplyPlanResultsRequest) (uint64, error)
	Now   func() time.Time
	// MaxInflight bounds the commits in flight; default DefaultMaxInflight.
	MaxInflight int
	// Placed, if set, is called with the number of new allocations of
	// each committed plan that placed any (see newPlacements).
	Placed func(n int)
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
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	return &Applier{cfg: cfg, logger: cfg.Logger.Named("plan_apply")}
}

// commit is one Raft apply in flight.
type commit struct {
	placed map[string][]*structs.Allocation // the result's placements by node
	done   chan struct{}
	index  uint64 // set before done is closed
	err    error  // set before done is closed
}

func (c *commit) wait() { <-c.done }

func (c *commit) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Run applies plans until ctx ends (leadership lost). Plans still queued
// are the queue's to fail; Run returns once every commit it started has
// finished.
//
// Plans are checked one at a time, each against a fresh snapshot plus the
// placements of every commit still in flight, and their commits overlap
// (Raft batches them). Stops in flight are not credited: capacity counts
// as free only once a stop is in the state. So every check is
// conservative whatever happens to the commits before it (a failed or
// reordered commit only leaves more room), and no plan depends on another
// plan's entry being committed first.
func (a *Applier) Run(ctx context.Context) {
	var pending []*commit
	defer func() {
		for _, c := range pending {
			c.wait()
		}
	}()
	for {
		p, err := a.cfg.Queue.Dequeue(ctx)
		if err != nil {
			if ctx.Err() == nil {
				a.logger.Error("plan dequeue failed", "error", err)
			}
			return
		}
		pending = unfinished(pending)
		for len(pending) >= a.cfg.MaxInflight {
			pending[0].wait()
			pending = unfinished(pending)
		}
		if c := a.handle(p, pending); c != nil {
			pending = append(pending, c)
		}
	}
}

// unfinished drops the commits that are done.
func unfinished(cs []*commit) []*commit {
	out := cs[:0]
	for _, c := range cs {
		if !c.finished() {
			out = append(out, c)
		}
	}
	clear(cs[len(out):])
	return out
}

// handle checks one plan against the latest state and the commits in
// flight, and starts its commit; it returns the commit (nil if none).
func (a *Applier) handle(p Pending, pending []*commit) *commit {
	plan := p.Plan()
	// The snapshot is taken after the in-flight list was pruned: a commit
	// that finishes in between is in both, which onNode tolerates.
	considered := append([]*commit(nil), pending...)
	result, snapIndex, evals, err := a.evaluate(plan, considered)
	if err != nil {
		p.Respond(nil, err)
		return nil
	}
	if !result.IsNoOp() {
		return a.startCommit(p, plan, result, evals, snapIndex, considered)
	}
	if len(result.RejectedNodes) == 0 {
		p.Respond(result, nil)
		return nil
	}
	// Refused outright: the worker must refresh past the commits the plan
	// was checked against, whose indexes are known once they finish.
	go func() {
		result.RefreshIndex = refreshIndex(snapIndex, considered)
		p.Respond(result, nil)
	}()
	return nil
}

// refreshIndex waits for the given commits and returns the highest index
// among them and snapIndex.
func refreshIndex(snapIndex uint64, commits []*commit) uint64 {
	index := snapIndex
	for _, c := range commits {
		c.wait()
		index = max(index, c.index)
	}
	return index
}

// evaluate checks the plan against the latest state plus the placements
// of the commits in flight.
func (a *Applier) evaluate(plan *structs.Plan, considered []*commit) (*structs.PlanResult, uint64, []*structs.Evaluation, error) {
	defer metrics.MeasureSince(metricEvaluate, time.Now())
	snap, err := a.cfg.State().Snapshot()
	if err != nil {
		return nil, 0, nil, err
	}
	index, err := snap.LatestIndex()
	if err != nil {
		return nil, 0, nil, err
	}
	var over inflight
	for _, c := range considered {
		if len(c.placed) > 0 {
			over = append(over, c.placed)
		}
	}
	result, err := evaluatePlan(snap, over, plan)
	if err != nil {
		return nil, 0, nil, err
	}
	if n := len(result.RejectedNodes); n > 0 {
		metrics.IncrCounter(metricRejected, float32(n))
		a.logger.Debug("plan refused on some nodes", "eval_id", plan.EvalID, "nodes", n)
	}
	evals, err := preemptionEvals(snap, result, a.cfg.Now())
	if err != nil {
		return nil, 0, nil, err
	}
	return result, index, evals, nil
}

// preemptionEvals returns one evaluation per job the result evicts
// allocations of, so that the job places them again (or blocks until
// there is room). A job since purged gets none.
func preemptionEvals(snap *state.StateSnapshot, result *structs.PlanResult, now time.Time) ([]*structs.Evaluation, error) {
	if len(result.NodePreemptions) == 0 {
		return nil, nil
	}
	seen := map[structs.NamespacedID]bool{}
	var out []*structs.Evaluation
	for _, id := range slices.Sorted(maps.Keys(result.NodePreemptions)) {
		for _, v := range result.NodePreemptions[id] {
			key := structs.NamespacedID{Namespace: v.Namespace, ID: v.JobID}
			if seen[key] {
				continue
			}
			seen[key] = true
			job, err := snap.JobByID(nil, v.Namespace, v.JobID)
			if errors.Is(err, structs.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, structs.NewEval(job, structs.EvalTriggerPreemption, now))
		}
	}
	return out, nil
}

// startCommit applies the result through Raft on its own goroutine and
// responds when it is done.
func (a *Applier) startCommit(p Pending, plan *structs.Plan, result *structs.PlanResult, evals []*structs.Evaluation, snapIndex uint64, considered []*commit) *commit {
	c := &commit{placed: result.NodeAllocation, done: make(chan struct{})}
	req := a.request(plan, result)
	req.Evals = append(req.Evals, evals...)
	go func() {
		start := time.Now()
		// Off the applier's loop: the next plan's check need not wait.
		req.Compact()
		c.index, c.err = a.cfg.Apply(req)
		metrics.MeasureSince(metricApply, start)
		close(c.done)
		if c.err != nil {
			p.Respond(nil, c.err)
			return
		}
		result.AllocIndex = c.index
		if n := newPlacements(result); n > 0 {
			metrics.IncrCounter(MetricPlacements, float32(n))
			if a.cfg.Placed != nil {
				a.cfg.Placed(n)
			}
		}
		if len(result.RejectedNodes) > 0 {
			result.RefreshIndex = max(c.index, refreshIndex(snapIndex, considered))
		}
		p.Respond(result, nil)
	}()
	return c
}

// newPlacements counts the result's new allocations: those not yet stored
// (CreateIndex zero), as opposed to in-place updates of stored ones.
func newPlacements(result *structs.PlanResult) int {
	n := 0
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			if a.CreateIndex == 0 {
				n++
			}
		}
	}
	return n
}

// request builds the Raft entry. Allocations are shallow-copied, and Job
// is cleared on those that run the plan's job version: the entry carries
// that job once and the FSM points them at it. An allocation that keeps an
// older version (a follow-up recorded on an old failed allocation) keeps its
// own Job.
func (a *Applier) request(plan *structs.Plan, result *structs.PlanResult) *structs.ApplyPlanResultsRequest {
	now := a.cfg.Now().UnixNano()
	req := &structs.ApplyPlanResultsRequest{Job: plan.Job, EvalID: plan.EvalID, UpdatedAt: now,
		Deployment: result.Deployment, DeploymentUpdates: result.DeploymentUpdates}
	for _, allocs := range result.NodeUpdate {
		for _, alloc := range allocs {
			c := *alloc
			c.Job = nil
			c.ModifyTime = now
			req.AllocsStopped = append(req.AllocsStopped, &c)
		}
	}
	for _, allocs := range result.NodePreemptions {
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

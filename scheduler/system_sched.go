package scheduler

import (
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
)

// systemScheduler runs one allocation of each group on every ready,
// eligible node that matches the job (datacenters, drivers, constraints),
// including nodes that join later, and stops allocations on nodes that
// went down, are being drained, or no longer match.
//
// It also schedules sysbatch jobs, with batch semantics: a node whose
// allocation of the group finished (complete or failed) under the job's
// current version is done and gets no other; a new version runs again
// everywhere, as a batch job's does. Nothing is rescheduled.
type systemScheduler struct {
	logger  hclog.Logger
	state   State
	planner Planner
	now     func() time.Time

	eval      *structs.Evaluation
	failed    map[string]*structs.AllocMetric
	queued    map[string]int
	classElig map[string]bool
	escaped   bool
}

// NewSystemScheduler returns the scheduler for system jobs.
func NewSystemScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &systemScheduler{logger: logger.Named("system_sched"), state: state, planner: planner, now: now}
}

// Process schedules one evaluation; see genericScheduler.Process.
func (s *systemScheduler) Process(eval *structs.Evaluation) error {
	s.eval = eval
	s.logger = s.logger.With("eval_id", eval.ID, "job_id", eval.JobID)
	err := retryAttempts(maxSystemAttempts, s.attempt)
	out := evalOutcome{failed: s.failed, queued: s.queued, classElig: s.classElig, escaped: s.escaped}
	return finishEval(s.planner, s.logger, eval, s.now(), err, out)
}

func (s *systemScheduler) attempt() (done, progress bool, err error) {
	job, err := s.state.JobByID(nil, s.eval.Namespace, s.eval.JobID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		job = nil
	case err != nil:
		return false, false, err
	}
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID)
	if err != nil {
		return false, false, err
	}
	ctx, err := newEvalContext(s.state, s.logger, s.eval, job, s.now())
	if err != nil {
		return false, false, err
	}
	ctx.initJobAllocs(allocs)
	s.failed, s.classElig, s.escaped = nil, nil, false
	s.queued = map[string]int{}
	for _, tg := range jobGroups(job) {
		s.queued[tg.Name] = 0
	}

	live := map[string][]*structs.Allocation{} // node ID -> live allocations of the job
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live[a.NodeID] = append(live[a.NodeID], a)
		}
	}
	finished := finishedSysBatch(job, allocs)
	st := newStack(ctx, false, dropNone)
	for pos := range ctx.view.Len() { // every node: a system job's work is O(nodes)
		n := ctx.info(int32(pos))
		s.reconcileNode(ctx, st, n, live[n.node.ID], finished[n.node.ID])
		delete(live, n.node.ID)
	}
	for _, gone := range sortedKeys(live) { // allocations on deleted nodes
		for _, a := range live[gone] {
			ctx.appendStop(a, descLost, structs.AllocClientStatusLost)
		}
	}
	if ctx.err != nil {
		return false, false, ctx.err
	}
	if ctx.plan.IsNoOp() {
		return true, false, nil
	}
	done, progress, s.state, err = submitPlan(s.planner, ctx.plan, s.state)
	return done, progress, err
}

// finishedSysBatch maps, for a sysbatch job, each node to the groups
// whose allocation there finished (complete or failed) under the job's
// current version; nil for any other job.
func finishedSysBatch(job *structs.Job, allocs []*structs.Allocation) map[string][]string {
	if job == nil || job.Type != structs.JobTypeSysBatch {
		return nil
	}
	out := map[string][]string{}
	for _, a := range allocs {
		switch a.ClientStatus {
		case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed:
		default:
			continue
		}
		if a.Job != nil && a.Job.JobModifyIndex == job.JobModifyIndex {
			out[a.NodeID] = append(out[a.NodeID], a.TaskGroup)
		}
	}
	return out
}

// reconcileNode makes node n run exactly the allocations it should;
// finished lists the groups a sysbatch job already ran there.
func (s *systemScheduler) reconcileNode(ctx *evalContext, st *stack, n *nodeInfo, live []*structs.Allocation, finished []string) {
	job, node := ctx.job, n.node
	if node.TerminalStatus() {
		for _, a := range live {
			ctx.appendStop(a, descLost, structs.AllocClientStatusLost)
		}
		return
	}
	inDCs := job != nil && inDatacenters(node.Datacenter, job.Datacenters)
	for g, tg := range jobGroups(job) {
		var have *structs.Allocation
		for _, a := range live {
			if a.TaskGroup != tg.Name {
				continue
			}
			switch {
			case have != nil:
				ctx.appendStop(a, descNotNeeded, "") // a duplicate
			case a.DesiredTransition.ShouldMigrate():
				ctx.appendStop(a, descMigrating, "")
			case !inDCs || tg.Count == 0 || !st.feasibleOn(tg, g, n):
				ctx.appendStop(a, descNodeTainted, "")
			default:
				have = a
			}
		}
		// Updates wait until the node takes new work again. The node
		// passed the group's checks above, so only what changed decides
		// between in place and a replacement.
		if have != nil && have.Job != nil && have.Job.JobModifyIndex != job.JobModifyIndex && node.Ready() {
			if destructiveChange(have.Job, job, tg.Name) == "" {
				ctx.appendUpdate(inPlaceCopy(have, job, ctx.now))
				continue
			}
			ctx.appendStop(have, descUpdating, "")
			s.placeOn(ctx, st, tg, g, n, have)
			continue
		}
		if have == nil && inDCs && tg.Count > 0 && node.Ready() && !slices.Contains(finished, tg.Name) {
			s.placeOn(ctx, st, tg, g, n, nil)
		}
	}
	// Allocations of groups the job no longer has (or of a stopped job).
	for _, a := range live {
		if job.Stopped() || job.LookupTaskGroup(a.TaskGroup) == nil {
			desc := descNotNeeded
			if job.Stopped() {
				desc = descJobStopped
			}
			ctx.appendStop(a, desc, "")
		}
	}
}

// jobGroups returns the groups a live job runs (none for a stopped job).
func jobGroups(job *structs.Job) []*structs.TaskGroup {
	if job.Stopped() {
		return nil
	}
	return job.TaskGroups
}

// placeOn places one allocation of tg on n. A node filtered by a
// constraint is simply not a match; a node without room is a failed
// placement (and the group's later failures coalesce into it).
func (s *systemScheduler) placeOn(ctx *evalContext, st *stack, tg *structs.TaskGroup, g int, n *nodeInfo, prev *structs.Allocation) {
	option, ok := st.SelectOn(tg, g, n)
	var victims []*structs.Allocation
	if !ok && ctx.metrics.exhausted > 0 && ctx.preempt {
		option, victims, ok = st.SelectOnPreempting(tg, g, n)
	}
	if !ok {
		if ctx.metrics.exhausted == 0 {
			return // does not match this node
		}
		s.queued[tg.Name]++
		if m := s.failed[tg.Name]; m != nil {
			m.CoalescedFailures++
			return
		}
		if s.failed == nil {
			s.failed, s.classElig = map[string]*structs.AllocMetric{}, map[string]bool{}
		}
		s.failed[tg.Name] = ctx.metrics.allocMetric(st.nodesAvailable, st.nodesInPool)
		s.escaped = st.classEligibility(tg, g, s.classElig) || s.escaped
		return
	}
	a := newAlloc(ctx, tg, allocName(ctx.job.ID, tg.Name, 0), option, ctx.metrics.allocMetric(st.nodesAvailable, st.nodesInPool))
	if prev != nil {
		a.PreviousAllocation = prev.ID
	}
	if victims != nil {
		ctx.appendPreemptions(a, victims)
	}
	ctx.appendPlace(a, n, g, option.ask)
}

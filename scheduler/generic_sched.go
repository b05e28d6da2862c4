package scheduler

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
)

// genericScheduler schedules service and batch jobs: it reconciles the
// job's groups with their allocations, places what is missing through the
// iterator stack, submits the plan and retries what a partial commit left.
type genericScheduler struct {
	logger  hclog.Logger
	state   State
	planner Planner
	now     func() time.Time
	batch   bool

	eval *structs.Evaluation
	// Outcome of the last attempt, written onto the evaluation.
	failed      map[string]*structs.AllocMetric
	queued      map[string]int
	classElig   map[string]bool
	escaped     bool
	blockedEval string
	deployment  string // the ID of the job version's deployment, if any
}

// NewServiceScheduler returns the scheduler for service jobs.
func NewServiceScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &genericScheduler{logger: logger.Named("service_sched"), state: state, planner: planner, now: now}
}

// NewBatchScheduler returns the scheduler for batch jobs.
func NewBatchScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &genericScheduler{logger: logger.Named("batch_sched"), state: state, planner: planner, now: now, batch: true}
}

// Process schedules one evaluation and records the outcome with
// UpdateEval (or ReblockEval for a blocked evaluation that still cannot
// place everything). It returns an error only if scheduling or recording
// failed; it has then tried to mark the evaluation failed.
func (s *genericScheduler) Process(eval *structs.Evaluation) error {
	s.eval = eval
	s.logger = s.logger.With("eval_id", eval.ID, "job_id", eval.JobID)
	limit := maxServiceAttempts
	if s.batch {
		limit = maxBatchAttempts
	}
	err := retryAttempts(limit, s.attempt)
	return finishEval(s.planner, s.logger, eval, s.now(), err, s.outcome())
}

// outcome collects what finishEval writes onto the evaluation.
func (s *genericScheduler) outcome() evalOutcome {
	return evalOutcome{failed: s.failed, queued: s.queued, classElig: s.classElig, escaped: s.escaped, deploymentID: s.deployment}
}

// attempt runs the reconcile -> place -> submit cycle once against the
// current state.
func (s *genericScheduler) attempt() (done, progress bool, err error) {
	job, err := s.state.JobByID(nil, s.eval.Namespace, s.eval.JobID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		job = nil // purged: stop everything
	case err != nil:
		return false, false, err
	}
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID)
	if err != nil {
		return false, false, err
	}
	now := s.now()
	ctx, err := newEvalContext(s.state, s.logger, s.eval, job, now)
	if err != nil {
		return false, false, err
	}
	ctx.initJobAllocs(allocs)
	s.resetOutcome(job)

	st := newStack(ctx, s.batch, dropFixed)
	r := &reconciler{job: job, batch: s.batch, now: now, evalID: s.eval.ID, node: ctx.nodeOrNil,
		fits: func(a *structs.Allocation) bool { return ctx.fitsOwnNode(st, a) }}
	if needsDeployment(job) {
		latest, err := s.state.LatestDeploymentByJobID(nil, s.eval.Namespace, s.eval.JobID)
		if err != nil {
			return false, false, err
		}
		r.deploy = newDeployState(job, latest, now)
	}
	res := r.reconcile(allocs)
	s.logger.Debug("reconciled", "place", len(res.places), "stop", len(res.stops),
		"in_place", len(res.inplace), "reschedule_later", len(res.later), "migrations_deferred", res.deferred)
	if s.eval.AnnotatePlan {
		ctx.plan.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: res.desired}
	}
	if err := s.createFollowups(ctx, res); err != nil {
		return false, false, err
	}
	fences, err := s.fenceFollowups(ctx, res)
	if err != nil {
		return false, false, err
	}
	if err := s.markUnknown(ctx, res); err != nil {
		return false, false, err
	}
	for _, st := range res.stops {
		stopped := ctx.appendStop(st.alloc, st.desc, st.clientStatus)
		if !st.fenceAt.IsZero() {
			// The stop records when the allocation was lost and the
			// follow-up that replaces it (fence.go).
			stopped.FollowupEvalID = fences[st.fenceAt]
			stopped.ModifyTime = now.UnixNano()
		}
	}
	for _, a := range res.inplace {
		c := inPlaceCopy(a, job, now)
		if r.deploy != nil {
			r.deploy.joinInPlace(job.LookupTaskGroup(a.TaskGroup), c)
		}
		ctx.appendUpdate(c)
	}
	s.place(ctx, st, res.places, r.deploy)
	if r.deploy != nil {
		r.deploy.complete()
		r.deploy.toPlan(ctx.plan)
		if r.deploy.d != nil {
			s.deployment = r.deploy.d.ID
		}
	}
	if ctx.err != nil {
		return false, false, ctx.err
	}
	// A dry run (job plan) submits even an empty plan: its annotations
	// count the placements that failed, as Nomad's do.
	if ctx.plan.IsNoOp() && !s.eval.AnnotatePlan {
		return true, false, nil
	}
	done, progress, s.state, err = submitPlan(s.planner, ctx.plan, s.state)
	return done, progress, err
}

func (s *genericScheduler) resetOutcome(job *structs.Job) {
	s.failed, s.classElig, s.escaped, s.deployment = nil, nil, false, ""
	s.queued = map[string]int{}
	if job != nil {
		for _, tg := range job.TaskGroups {
			s.queued[tg.Name] = 0
		}
	}
}

// place selects a node for every placement request. Requests that stop
// their predecessor go first (as Nomad places destructive updates first):
// while they run, usage can shrink between placements, so the sources
// drop only nodes that fail fixed checks; afterwards usage only grows and
// they drop exhausted nodes too. After one placement of a group fails, the
// group's other placements fail at once and count as coalesced failures.
func (s *genericScheduler) place(ctx *evalContext, st *stack, places []placeRequest, ds *deployState) {
	if len(places) == 0 {
		return
	}
	places = slices.Clone(places)
	first := func(p placeRequest) int {
		if p.stopPrev != "" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(places, func(a, b placeRequest) int { return cmp.Compare(first(a), first(b)) })
	for _, p := range places {
		g, ok := ctx.groupIdx[p.group]
		if !ok {
			continue
		}
		tg := ctx.job.TaskGroups[g]
		if m := s.failed[p.group]; m != nil {
			m.CoalescedFailures++
			s.queued[p.group]++
			continue
		}
		if p.stopPrev != "" {
			ctx.appendStop(p.prev, p.stopPrev, "")
		} else {
			st.setDrop(dropAll)
		}
		var penalty string
		if p.reschedule {
			penalty = p.prev.NodeID
		}
		var option rankedNode
		var victims []*structs.Allocation
		if p.prev != nil && tg.StickyDisk() {
			// As Nomad: the previous node first, a reschedule included.
			option, ok = st.SelectSticky(tg, g, ctx.node(p.prev.NodeID), penalty)
		} else {
			option, ok = st.Select(tg, g, penalty)
		}
		if !ok && ctx.preempt {
			option, victims, ok = st.SelectPreempting(tg, g)
		}
		if !ok {
			if p.stopPrev != "" {
				ctx.revertStop(p.prev)
			}
			s.recordFailure(st, tg, g)
			continue
		}
		metric := ctx.metrics.allocMetric(st.nodesAvailable, st.nodesInPool)
		metric.ScoreMetaData = st.scoreMeta(tg)
		a := newAlloc(ctx, tg, p.name, option, metric)
		if ds != nil {
			ds.joinPlacement(tg, a, p.canary)
		}
		if p.prev != nil {
			a.PreviousAllocation = p.prev.ID
			if p.reschedule {
				a.RescheduleTracker = nextTracker(p.prev, tg.ReschedulePolicy, ctx.now, p.delay)
			}
		}
		if victims != nil {
			ctx.appendPreemptions(a, victims)
		}
		ctx.appendPlace(a, option.node, g, option.ask)
	}
}

// recordFailure stores the failed Select's metrics for the group and
// notes which node classes could have helped.
func (s *genericScheduler) recordFailure(st *stack, tg *structs.TaskGroup, g int) {
	if s.failed == nil {
		s.failed = map[string]*structs.AllocMetric{}
	}
	s.failed[tg.Name] = st.failureMetric(tg, g)
	s.queued[tg.Name]++
	if s.classElig == nil {
		s.classElig = map[string]bool{}
	}
	s.escaped = st.classEligibility(tg, g, s.classElig) || s.escaped
}

// createFollowups creates the evaluations that will reschedule failed
// allocations later (one per batch of nearby due times, each allocation
// marked with its evaluation's ID) and the one that continues a drain held
// back by max_parallel.
func (s *genericScheduler) createFollowups(ctx *evalContext, res *reconcileResult) error {
	later := slices.Clone(res.later)
	slices.SortStableFunc(later, func(a, b delayedReschedule) int { return a.at.Compare(b.at) })
	var cur *structs.Evaluation
	var curAt time.Time
	for _, d := range later {
		if cur == nil || d.at.Sub(curAt) > followupBatchWindow {
			cur = s.eval.CreateFollowUpEval(structs.EvalTriggerRetryFailedAlloc, d.at.Sub(ctx.now), ctx.now)
			cur.WaitUntil, curAt = d.at, d.at
			if err := s.planner.CreateEval(cur); err != nil {
				return err
			}
		}
		upd := d.alloc.Copy() // keeps its job version
		upd.FollowupEvalID = cur.ID
		upd.ModifyTime = ctx.now.UnixNano()
		ctx.appendUpdate(upd)
	}
	if res.deferred > 0 {
		e := s.eval.CreateFollowUpEval(structs.EvalTriggerNodeDrain, res.migrateWait, ctx.now)
		if err := s.planner.CreateEval(e); err != nil {
			return err
		}
	}
	return nil
}

// newAlloc builds a new allocation of tg on option's node.
func newAlloc(ctx *evalContext, tg *structs.TaskGroup, name string, option rankedNode, metric *structs.AllocMetric) *structs.Allocation {
	n := option.node.node
	now := ctx.now.UnixNano()
	ar := allocatedResources(tg, option.ask)
	option.ports.apply(ar)
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: ctx.job.Namespace, EvalID: ctx.eval.ID,
		Name: name, NodeID: n.ID, NodeName: n.Name, JobID: ctx.job.ID,
		TaskGroup: tg.Name, AllocatedResources: ar,
		Metrics: metric, DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending, JobVersion: ctx.job.Version,
		CreateTime: now, ModifyTime: now,
	}
}

// allocatedResources splits the group's ask over its tasks; CPU the node
// converted from reserved cores goes to the tasks that asked for cores.
func allocatedResources(tg *structs.TaskGroup, ask structs.ComparableResources) *structs.AllocatedResources {
	ar := &structs.AllocatedResources{Tasks: make(map[string]*structs.AllocatedTaskResources, len(tg.Tasks))}
	var cpu, coreTasks int64
	for _, t := range tg.Tasks {
		r := t.Resources
		if r == nil {
			r = &structs.Resources{}
		}
		ar.Tasks[t.Name] = &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: int64(r.CPU)},
			Memory: structs.AllocatedMemoryResources{MemoryMB: int64(r.MemoryMB), MemoryMaxMB: int64(r.MemoryMaxMB)},
		}
		ar.Shared.DiskMB += int64(r.DiskMB)
		cpu += int64(r.CPU)
		if r.Cores > 0 {
			coreTasks += int64(r.Cores)
		}
	}
	if ed := tg.EphemeralDisk; ed != nil {
		ar.Shared.DiskMB += int64(ed.SizeMB)
	}
	if extra := ask.CPU - cpu; extra > 0 && coreTasks > 0 {
		for _, t := range tg.Tasks {
			if t.Resources != nil && t.Resources.Cores > 0 {
				ar.Tasks[t.Name].Cpu.CpuShares += extra * int64(t.Resources.Cores) / coreTasks
			}
		}
	}
	return ar
}

// inPlaceCopy is a's update to the new job version: same node, same ID,
// same resources. The plan's job fills its Job.
func inPlaceCopy(a *structs.Allocation, job *structs.Job, now time.Time) *structs.Allocation {
	c := a.CopySkipJob()
	c.JobVersion = job.Version
	c.ModifyTime = now.UnixNano()
	return c
}

// fitsOwnNode reports whether a's node passes the drivers and constraints
// of a's group in the evaluation's job (st's checks, whose verdicts are
// cached per node).
func (c *evalContext) fitsOwnNode(st *stack, a *structs.Allocation) bool {
	g, own := c.ownGroup(a)
	n := c.node(a.NodeID)
	return own && n != nil && st.feasibleOn(c.job.TaskGroups[g], g, n)
}

// nodeOrNil returns the node with the given ID, or nil when it is gone.
func (c *evalContext) nodeOrNil(id string) *structs.Node { return c.view.ByID(id) }

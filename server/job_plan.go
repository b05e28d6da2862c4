package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/drover-project/drover/scheduler"
	"github.com/drover-project/drover/server/periodic"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Plan is a dry run of a job registration: the job's scheduler runs on a
// snapshot of the leader's state with the new version written into it
// (a snapshot's writes never reach the store), against a planner that
// records the plan instead of submitting it. The reply says what would be
// placed, stopped and updated per group (Annotations), what could not be
// placed (FailedTGAllocs), and which evaluations would follow. Nothing is
// written. A job whose spec equals the stored one is planned as
// Register would treat it: no new version, so nothing is updated.
func (j *Job) Plan(args *structs.JobPlanRequest, reply *structs.JobPlanResponse) error {
	s := j.srv
	if done, err := s.forward("Job.Plan", args, args, reply); done {
		return err
	}
	defer measureSince(metricJobPlan, time.Now())
	if args.Job == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Job", Message: "missing job"}}}
	}
	if err := checkJobShape(args.Job); err != nil {
		return err
	}
	job := args.Job.Copy()
	job.Canonicalize()
	if err := validateJob(job); err != nil {
		return err
	}
	if err := checkJobNodePool(s.fsm.State(), job); err != nil {
		return err
	}
	// In the form the store would hold it, for the comparison with the
	// stored job (see sameSpec) and the scheduler's.
	job, err := storedForm(job)
	if err != nil {
		return err
	}

	snap, err := s.fsm.State().Snapshot()
	if err != nil {
		return err
	}
	existing, err := snap.JobByID(nil, job.Namespace, job.ID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		existing = nil
	case err != nil:
		return err
	}
	if err := checkJobUpdate(existing, job); err != nil {
		return err
	}
	if args.Diff {
		if reply.Diff, err = existing.Diff(job, true); err != nil {
			return err
		}
	}
	if existing != nil {
		reply.JobModifyIndex = existing.JobModifyIndex
	}
	index, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	index++
	now := time.Now()
	if existing == nil || existing.SpecChanged(job) {
		job.SubmitTime = now.UnixNano()
		if err := snap.UpsertJob(index, job, nil); err != nil {
			return err
		}
	} else {
		job = existing
	}
	eval := structs.NewEval(job, structs.EvalTriggerJobRegister, now)
	eval.AnnotatePlan = true
	eval.CreateIndex, eval.ModifyIndex = index, index

	rec := &planRecorder{}
	sched, err := scheduler.NewScheduler(job.Type, s.logger, snap, rec, time.Now)
	if err != nil {
		return err
	}
	if err := sched.Process(eval); err != nil {
		return err
	}
	reply.Annotations = rec.annotations(snap.StateStore, job)
	annotateDiff(reply.Diff, reply.Annotations)
	if rec.update != nil {
		reply.FailedTGAllocs = rec.update.FailedTGAllocs
	}
	reply.CreatedEvals = rec.created
	if job.IsPeriodicActive() { // as Nomad: when the job would first launch
		if sched, err := periodic.NewSchedule(job.Periodic); err == nil {
			reply.NextPeriodicLaunch = sched.Next(now)
		}
	}
	reply.Index = index - 1
	return nil
}

// planRecorder is the scheduler.Planner of a dry run: every plan is
// "committed" in full without being applied anywhere.
type planRecorder struct {
	mu      sync.Mutex
	plan    *structs.Plan         // the last plan submitted; guarded by mu
	update  *structs.Evaluation   // the final evaluation; guarded by mu
	created []*structs.Evaluation // follow-ups and blocked; guarded by mu
}

var _ scheduler.Planner = (*planRecorder)(nil)

func (r *planRecorder) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	r.mu.Lock()
	r.plan = plan
	r.mu.Unlock()
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation}, nil, nil
}

func (r *planRecorder) UpdateEval(e *structs.Evaluation) error {
	r.mu.Lock()
	r.update = e
	r.mu.Unlock()
	return nil
}

func (r *planRecorder) CreateEval(e *structs.Evaluation) error {
	r.mu.Lock()
	r.created = append(r.created, e)
	r.mu.Unlock()
	return nil
}

func (r *planRecorder) ReblockEval(e *structs.Evaluation) error { return r.UpdateEval(e) }

// annotations returns the scheduler's own annotations when it made them,
// and otherwise counts them from the recorded plan: placements (new
// allocations), in-place updates (allocations already in st), stops, and
// running allocations the plan leaves alone (ignore).
func (r *planRecorder) annotations(st *state.StateStore, job *structs.Job) *structs.PlanAnnotations {
	r.mu.Lock()
	plan := r.plan
	r.mu.Unlock()
	if plan != nil && plan.Annotations != nil {
		annotatePreemptions(plan.Annotations, plan, st)
		return plan.Annotations
	}
	out := &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	for _, tg := range job.TaskGroups {
		out.DesiredTGUpdates[tg.Name] = &structs.DesiredUpdates{}
	}
	group := func(name string) *structs.DesiredUpdates {
		du := out.DesiredTGUpdates[name]
		if du == nil {
			du = &structs.DesiredUpdates{}
			out.DesiredTGUpdates[name] = du
		}
		return du
	}
	touched := map[string]bool{}
	if plan != nil {
		for _, allocs := range plan.NodeUpdate {
			for _, a := range allocs {
				touched[a.ID] = true
				group(a.TaskGroup).Stop++
			}
		}
		for _, allocs := range plan.NodeAllocation {
			for _, a := range allocs {
				touched[a.ID] = true
				if _, err := st.AllocByID(nil, a.ID); err == nil {
					group(a.TaskGroup).InPlaceUpdate++
				} else {
					group(a.TaskGroup).Place++
				}
			}
		}
	}
	allocs, err := st.AllocsByJob(nil, job.Namespace, job.ID)
	if err == nil {
		for _, a := range allocs {
			if !a.TerminalStatus() && !touched[a.ID] {
				group(a.TaskGroup).Ignore++
			}
		}
	}
	annotatePreemptions(out, plan, st)
	return out
}

// annotatePreemptions lists the allocations the plan would evict (as
// stubs of the stored allocations) and counts them per preempting group.
func annotatePreemptions(out *structs.PlanAnnotations, plan *structs.Plan, st *state.StateStore) {
	if plan == nil || len(plan.NodePreemptions) == 0 {
		return
	}
	for _, node := range slices.Sorted(maps.Keys(plan.NodePreemptions)) {
		for _, v := range plan.NodePreemptions[node] {
			if a, err := st.AllocByID(nil, v.ID); err == nil {
				out.PreemptedAllocs = append(out.PreemptedAllocs, a.Stub())
			}
		}
	}
	for _, allocs := range plan.NodeAllocation {
		for _, a := range allocs {
			if n := len(a.PreemptedAllocations); n > 0 {
				if out.DesiredTGUpdates == nil {
					out.DesiredTGUpdates = map[string]*structs.DesiredUpdates{}
				}
				du := out.DesiredTGUpdates[a.TaskGroup]
				if du == nil {
					du = &structs.DesiredUpdates{}
					out.DesiredTGUpdates[a.TaskGroup] = du
				}
				du.Preemptions += uint64(n)
			}
		}
	}
}

// storedForm returns job as the store would hold it: encoded and decoded
// again, as every Raft entry is.
func storedForm(job *structs.Job) (*structs.Job, error) {
	buf, err := structs.Encode(structs.JobRegisterRequestType, job)
	if err != nil {
		return nil, structs.NewError(structs.ErrCodeInvalid, "job cannot be encoded: %v", err)
	}
	var out structs.Job
	if err := structs.Decode(buf[1:], &out); err != nil {
		return nil, fmt.Errorf("decoding the encoded job: %w", err)
	}
	return &out, nil
}

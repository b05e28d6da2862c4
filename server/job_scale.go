package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Scale sets a group's count (a new version of the job and an evaluation,
// as a registration would make; the same count makes no version, only
// the evaluation) and records the request as a scaling event, all in one
// Raft entry. A request without a count records the event alone (an
// autoscaler reporting, with Error set, that it could not act). The count
// must be within the group's scaling block's bounds; with JobModifyIndex
// set, the job must still be at that index (code conflict).
func (j *Job) Scale(args *structs.ScalingRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Scale", args, args, reply); done {
		return err
	}
	group, err := checkScalingRequest(args)
	if err != nil {
		return err
	}
	ns := args.RequestNamespace()
	job, err := j.srv.fsm.State().JobByID(nil, ns, args.JobID)
	if errors.Is(err, structs.ErrNotFound) {
		return structs.NewError(structs.ErrCodeNotFound, "job %q not found", args.JobID)
	}
	if err != nil {
		return err
	}
	tg := job.LookupTaskGroup(group)
	if tg == nil {
		return scaleInvalid("Target.Group", "task group %q specified for scaling does not exist in job %q", group, args.JobID)
	}
	if args.JobModifyIndex != 0 && args.JobModifyIndex != job.JobModifyIndex {
		return structs.NewError(structs.ErrCodeConflict,
			"enforcing job modify index %d: job %q has job modify index %d", args.JobModifyIndex, args.JobID, job.JobModifyIndex)
	}

	now := time.Now()
	event := &structs.ScalingEvent{Time: now.UnixNano(), Count: args.Count, PreviousCount: int64(tg.Count),
		Message: args.Message, Error: args.Error, Meta: args.Meta}
	req := &structs.ScalingEventRegisterRequest{JobID: job.ID, TaskGroup: group, Event: event,
		JobModifyIndex: args.JobModifyIndex, WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: ns}}
	if args.Count != nil {
		if job.Stop {
			return scaleInvalid("JobID", "job %q is stopped; run it again before scaling it", args.JobID)
		}
		count := *args.Count
		if sp := tg.Scaling; sp != nil {
			switch {
			case count < sp.Min:
				return scaleInvalid("Count", "group count was less than scaling policy minimum: %d < %d", count, sp.Min)
			case count > sp.Max:
				return scaleInvalid("Count", "group count was greater than scaling policy maximum: %d > %d", count, sp.Max)
			}
		}
		scaled := job.Copy()
		scaled.LookupTaskGroup(group).Count = int(count)
		if err := validateJob(scaled); err != nil {
			return err
		}
		eval := structs.NewEval(job, structs.EvalTriggerScaling, now)
		if job.SpecChanged(scaled) {
			scaled.SubmitTime = now.UnixNano()
			req.Job = scaled
		}
		req.Eval = eval
		event.EvalID = &eval.ID
	}
	buf, err := structs.Encode(structs.ScalingEventRegisterRequestType, req)
	if err != nil {
		return structs.NewError(structs.ErrCodeInvalid, "scaling request cannot be encoded: %v", err)
	}
	if len(buf) > structs.MaxJobSize {
		return structs.NewError(structs.ErrCodeTooLarge, "scaling request is %d bytes encoded; the limit is %d", len(buf), structs.MaxJobSize)
	}
	index, _, err := j.srv.raftApplyEncoded(buf)
	if err != nil {
		return err
	}
	if req.Eval != nil {
		reply.EvalID, reply.EvalCreateIndex = req.Eval.ID, index
	}
	reply.JobModifyIndex = job.JobModifyIndex
	if stored, err := j.srv.fsm.State().JobByID(nil, ns, job.ID); err == nil {
		reply.JobModifyIndex = stored.JobModifyIndex
	}
	reply.Index = index
	return nil
}

// checkScalingRequest checks what a scaling request says by itself and
// returns the group it targets.
func checkScalingRequest(args *structs.ScalingRequest) (string, error) {
	if args.JobID == "" {
		return "", scaleInvalid("JobID", "missing job ID")
	}
	if j := args.Target[structs.ScalingTargetJob]; j != "" && j != args.JobID {
		return "", scaleInvalid("Target.Job", "job %q does not match the request's job %q", j, args.JobID)
	}
	group := args.Target[structs.ScalingTargetGroup]
	if group == "" {
		return "", scaleInvalid("Target.Group", "missing task group name for scaling action")
	}
	if args.Count != nil {
		switch {
		case *args.Count < 0:
			return "", scaleInvalid("Count", "scaling action count can't be negative")
		case args.Error:
			return "", scaleInvalid("Count", "scaling action should not contain count if error is true")
		}
	}
	return group, nil
}

func scaleInvalid(field, format string, a ...any) error {
	return &structs.ValidationError{Errors: []structs.FieldError{{Field: field, Message: fmt.Sprintf(format, a...)}}}
}

// ScaleStatus returns a job's scaling state per group: its count, its live
// and running allocations, and its kept scaling events. A missing job is
// a nil status (not an error).
func (j *Job) ScaleStatus(args *structs.JobSpecificRequest, reply *structs.JobScaleStatusResponse) error {
	if done, err := j.srv.forward("Job.ScaleStatus", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := st.JobByID(ws, ns, args.JobID)
		if errors.Is(err, structs.ErrNotFound) {
			reply.JobScaleStatus = nil
			return st.Index(state.TableJobs)
		}
		if err != nil {
			return 0, err
		}
		events, err := st.ScalingEventsByJob(ws, ns, args.JobID)
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			return 0, err
		}
		allocs, err := st.AllocsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		out := &structs.JobScaleStatus{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
			JobModifyIndex: job.JobModifyIndex, JobStopped: job.Stop, TaskGroups: make(map[string]*structs.TaskGroupScaleStatus, len(job.TaskGroups))}
		index := job.ModifyIndex
		for _, tg := range job.TaskGroups {
			s := &structs.TaskGroupScaleStatus{Desired: tg.Count, Events: []*structs.ScalingEvent{}}
			if events != nil && events.ScalingEvents[tg.Name] != nil {
				s.Events = events.ScalingEvents[tg.Name]
			}
			out.TaskGroups[tg.Name] = s
		}
		if events != nil {
			index = max(index, events.ModifyIndex)
		}
		for _, a := range allocs {
			s := out.TaskGroups[a.TaskGroup]
			if s == nil || a.TerminalStatus() {
				continue
			}
			s.Placed++
			if a.ClientStatus == structs.AllocClientStatusRunning {
				s.Running++
			}
		}
		allocsIndex, err := st.Index(state.TableAllocs)
		if err != nil {
			return 0, err
		}
		reply.JobScaleStatus = out
		return max(index, allocsIndex), nil
	})
}

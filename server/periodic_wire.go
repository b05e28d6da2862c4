package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/server/periodic"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// This file wires the periodic dispatcher (package periodic) into the
// server: a leader hook runs it, and periodicLauncher turns its launches
// (and forced ones, Job.PeriodicForce) into PeriodicLaunch Raft entries.

const periodicHookName = "periodic_dispatcher"

// periodicHook runs the periodic dispatcher while leading. Establish runs
// after a barrier, so the dispatcher's first pass sees every launch the
// previous leader committed and launches the run it missed, if any.
type periodicHook struct{ run leaderRun }

func (h *periodicHook) Name() string { return periodicHookName }

func (h *periodicHook) Establish(s *Server) error {
	d, err := periodic.New(periodic.Config{
		Logger:   s.logger,
		State:    func() periodic.Reader { return s.fsm.State() },
		Launcher: periodicLauncher{s: s},
	})
	if err != nil {
		return err
	}
	h.run.start(s, d.Run)
	return nil
}

func (h *periodicHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

// periodicLauncher registers periodic jobs' children through Raft.
type periodicLauncher struct{ s *Server }

var _ periodic.Launcher = periodicLauncher{}

// Launch registers job's child for the run at `at`, with its evaluation
// and the parent's launch record, in one entry.
func (l periodicLauncher) Launch(job *structs.Job, at time.Time) error {
	_, _, err := l.launch(job, at)
	return err
}

func (l periodicLauncher) launch(job *structs.Job, at time.Time) (uint64, *structs.Evaluation, error) {
	child := periodicChild(job, at, time.Now())
	eval := structs.NewEval(child, structs.EvalTriggerPeriodicJob, time.Now())
	req := &structs.PeriodicLaunchRequest{Job: child, Eval: eval,
		Launch: &structs.PeriodicLaunch{Namespace: job.Namespace, ID: job.ID, Launch: at.UTC()}}
	index, _, err := l.s.raftApply(structs.PeriodicLaunchRequestType, req)
	return index, eval, err
}

// periodicChild derives the child job of periodic job for the run at
// `at`, as Nomad does: a copy named `<id>/periodic-<unix>` with ParentID
// set and no periodic block.
func periodicChild(job *structs.Job, at, now time.Time) *structs.Job {
	child := job.Copy()
	child.ParentID = job.ID
	child.ID = structs.PeriodicChildID(job.ID, at)
	child.Name = child.ID
	child.Periodic = nil
	child.Status, child.StatusDescription = "", ""
	child.Stable, child.Version = false, 0
	child.CreateIndex, child.ModifyIndex, child.JobModifyIndex = 0, 0, 0
	child.SubmitTime = now.UnixNano()
	return child
}

// PeriodicForce launches a run of a periodic job now, whatever its
// schedule (Nomad's periodic force). The job must be periodic, enabled
// and not stopped.
func (j *Job) PeriodicForce(args *structs.PeriodicForceRequest, reply *structs.PeriodicForceResponse) error {
	if done, err := j.srv.forward("Job.PeriodicForce", args, args, reply); done {
		return err
	}
	if args.JobID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobID", Message: "missing job ID"}}}
	}
	job, err := j.srv.fsm.State().JobByID(nil, args.RequestNamespace(), args.JobID)
	if err != nil {
		if errors.Is(err, structs.ErrNotFound) {
			return structs.NewError(structs.ErrCodeNotFound, "job %q not found", args.JobID)
		}
		return err
	}
	if !job.IsPeriodic() {
		return structs.NewError(structs.ErrCodeInvalid, "can't force launch non-periodic job %q", args.JobID)
	}
	if !job.IsPeriodicActive() {
		return structs.NewError(structs.ErrCodeInvalid, "can't force launch periodic job %q: it is stopped or its periodic block is disabled", args.JobID)
	}
	index, eval, err := periodicLauncher{s: j.srv}.launch(job, time.Now())
	if err != nil {
		return err
	}
	reply.EvalID = eval.ID
	reply.EvalCreateIndex = index
	reply.Index = index
	return nil
}

// withChildren returns the summary of a job, with, for a periodic or
// parameterized job, the count of its children by status (Nomad's
// Children summary) read from the jobs under "<id>/"; and the index of
// the answer. The stored summary is not modified.
func withChildren(ws memdb.WatchSet, st *state.StateStore, summary *structs.JobSummary) (*structs.JobSummary, uint64, error) {
	job, err := st.JobByID(ws, summary.Namespace, summary.JobID)
	if err != nil || !job.IsTemplate() {
		return summary, summary.ModifyIndex, nil
	}
	children, err := st.JobsByIDPrefix(ws, summary.Namespace, job.ID+"/")
	if err != nil {
		return nil, 0, err
	}
	c := &structs.JobChildrenSummary{}
	for _, child := range children {
		if child.ParentID != job.ID {
			continue
		}
		switch child.Status {
		case structs.JobStatusPending:
			c.Pending++
		case structs.JobStatusRunning:
			c.Running++
		default:
			c.Dead++
		}
	}
	out := *summary
	out.Children = c
	idx, err := st.Index(state.TableJobs)
	return &out, max(idx, summary.ModifyIndex), err
}

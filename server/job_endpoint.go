package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Job is the job endpoint: register, deregister, read and list jobs.
type Job struct {
	srv    *Server
	inproc bool // arguments come from an in-process caller
}

// Register creates or updates a job. On the leader it canonicalizes and
// validates the job, creates the pending evaluation, and writes both in
// one Raft entry. With EnforceIndex the write only happens if the stored
// job's JobModifyIndex equals args.JobModifyIndex (0: the job must not
// exist); otherwise it fails with code conflict. An update may not change
// the job's type (a *structs.ValidationError, as Nomad refuses it).
//
// A job whose spec equals the stored one (Job.SpecChanged, after
// canonicalization) is not written again, as in Nomad: its version and
// indexes stay, the reply carries the stored JobModifyIndex, and only the
// evaluation is written (registerUnchanged).
func (j *Job) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Register", args, args, reply); done {
		return err
	}
	defer measureSince(metricJobRegister, time.Now())

	if args.Job == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Job", Message: "missing job"}}}
	}
	if err := checkJobShape(args.Job); err != nil {
		return err
	}
	if args.Job.Dispatched {
		// Nomad refuses it too: only a dispatch makes a dispatched job.
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Dispatched",
			Message: "Drover does not support registering a job with Dispatched set: dispatch a parameterized job instead"}}}
	}
	// The caller's job is never modified: an in-process caller's job is
	// copied; one decoded from the wire is this call's own. The store owns
	// it afterwards.
	job := args.Job
	if j.inproc {
		job = job.Copy()
	}
	job.Canonicalize()
	if err := validateJob(job); err != nil {
		return err
	}
	if err := checkJobNodePool(j.srv.fsm.State(), job); err != nil {
		return err
	}

	existing, err := storedJob(j.srv.fsm.State(), job)
	if err != nil {
		return err
	}
	if err := checkJobUpdate(existing, job); err != nil {
		return err
	}
	if args.EnforceIndex {
		if err := checkJobModifyIndex(existing, args.JobModifyIndex); err != nil {
			return err
		}
	}

	now := time.Now()
	job.SubmitTime = now.UnixNano()
	// A periodic or parameterized job only launches children: its
	// registration creates no evaluation (as in Nomad).
	var eval *structs.Evaluation
	if !job.IsTemplate() {
		eval = structs.NewEval(job, structs.EvalTriggerJobRegister, now)
	}
	req := *args
	req.Job = job
	req.Eval = eval
	// The size limit applies to the encoded Raft entry, which is the job
	// plus a few hundred bytes of evaluation; encoding once serves both.
	buf, err := structs.Encode(structs.JobRegisterRequestType, &req)
	if err != nil {
		return structs.NewError(structs.ErrCodeInvalid, "job cannot be encoded: %v", err)
	}
	if len(buf) > structs.MaxJobSize {
		return structs.NewError(structs.ErrCodeTooLarge, "job is %d bytes encoded; the limit is %d", len(buf), structs.MaxJobSize)
	}
	if existing != nil {
		same, err := sameSpec(existing, buf)
		if err != nil {
			return err
		}
		if same && eval == nil {
			reply.JobModifyIndex = existing.JobModifyIndex
			reply.Index = existing.ModifyIndex
			return nil
		}
		if same {
			return j.registerUnchanged(existing, eval, reply)
		}
	}
	index, _, err := j.srv.raftApplyEncoded(buf)
	if err != nil {
		return err
	}

	if eval != nil {
		reply.EvalID = eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	if stored, err := j.srv.fsm.State().JobByID(nil, job.Namespace, job.ID); err == nil {
		reply.JobModifyIndex = stored.JobModifyIndex
	}
	reply.Index = index
	return nil
}

// storedJob returns the leader's copy of the job, or nil when there is
// none.
func storedJob(st *state.StateStore, job *structs.Job) (*structs.Job, error) {
	existing, err := st.JobByID(nil, job.Namespace, job.ID)
	if errors.Is(err, structs.ErrNotFound) {
		return nil, nil
	}
	return existing, err
}

// checkJobUpdate refuses the update Nomad refuses: a change of the job's
// type, even of a stopped job (purge it first).
func checkJobUpdate(existing, job *structs.Job) error {
	if existing == nil || existing.Type == job.Type {
		return nil
	}
	return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Type",
		Message: fmt.Sprintf("cannot update job from type %q to %q", existing.Type, job.Type)}}}
}

// sameSpec reports whether the job in the encoded register entry buf has
// the spec of existing. It compares the job as the FSM will decode it from
// buf, so that values which differ only in their Go type before encoding
// (a []string the store holds as []any) compare equal.
func sameSpec(existing *structs.Job, buf []byte) (bool, error) {
	var entry structs.JobRegisterRequest
	if err := structs.Decode(buf[1:], &entry); err != nil {
		return false, fmt.Errorf("decoding the register entry: %w", err)
	}
	return !existing.SpecChanged(entry.Job), nil
}

// registerUnchanged answers a registration of the stored spec: the job is
// left as it is and only the evaluation is written (one Raft entry), which
// re-checks the job's allocations against the same version.
func (j *Job) registerUnchanged(stored *structs.Job, eval *structs.Evaluation, reply *structs.JobRegisterResponse) error {
	eval.JobModifyIndex = stored.JobModifyIndex
	index, _, err := j.srv.raftApply(structs.EvalUpdateRequestType,
		&structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
	if err != nil {
		return err
	}
	reply.EvalID = eval.ID
	reply.EvalCreateIndex = index
	reply.JobModifyIndex = stored.JobModifyIndex
	reply.Index = index
	return nil
}

// checkJobShape rejects null groups and tasks, which Canonicalize cannot
// handle, with the same kind of error Validate returns.
func checkJobShape(job *structs.Job) error {
	var errs []structs.FieldError
	for i, tg := range job.TaskGroups {
		if tg == nil {
			errs = append(errs, structs.FieldError{Field: fmt.Sprintf("TaskGroups[%d]", i), Message: "must not be null"})
			continue
		}
		for k, t := range tg.Tasks {
			if t == nil {
				errs = append(errs, structs.FieldError{Field: fmt.Sprintf("TaskGroups[%d].Tasks[%d]", i, k), Message: "must not be null"})
			}
		}
	}
	if len(errs) > 0 {
		return &structs.ValidationError{Errors: errs}
	}
	return nil
}

// checkJobModifyIndex implements EnforceIndex against the leader's copy
// of the job (nil: there is none).
func checkJobModifyIndex(existing *structs.Job, want uint64) error {
	switch {
	case existing == nil:
		if want != 0 {
			return structs.NewError(structs.ErrCodeConflict,
				"enforcing job modify index %d: job does not exist", want)
		}
		return nil
	case want == 0:
		return structs.NewError(structs.ErrCodeConflict,
			"enforcing job modify index 0: job already exists with job modify index %d", existing.JobModifyIndex)
	case existing.JobModifyIndex != want:
		return structs.NewError(structs.ErrCodeConflict,
			"enforcing job modify index %d: job exists with conflicting job modify index %d", want, existing.JobModifyIndex)
	}
	return nil
}

// Deregister stops a job (or removes it with Purge) and creates the
// evaluation that stops its allocations, in one Raft entry. A missing job
// fails with code not_found.
func (j *Job) Deregister(args *structs.JobDeregisterRequest, reply *structs.JobDeregisterResponse) error {
	if done, err := j.srv.forward("Job.Deregister", args, args, reply); done {
		return err
	}
	defer measureSince(metricJobDeregister, time.Now())

	if args.JobID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobID", Message: "missing job ID"}}}
	}
	ns := args.RequestNamespace()
	job, err := j.srv.fsm.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		if errors.Is(err, structs.ErrNotFound) {
			return structs.NewError(structs.ErrCodeNotFound, "job %q not found", args.JobID)
		}
		return err
	}

	now := time.Now()
	var eval *structs.Evaluation
	if !job.IsTemplate() { // as Nomad: a periodic or parameterized job has nothing to stop
		eval = structs.NewEval(job, structs.EvalTriggerJobDeregister, now)
	}
	req := *args
	req.Namespace = ns
	req.Eval = eval
	req.SubmitTime = now.UnixNano()
	index, _, err := j.srv.raftApply(structs.JobDeregisterRequestType, &req)
	if err != nil {
		return err
	}
	if eval != nil {
		reply.EvalID = eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	reply.Index = index
	return nil
}

// GetJob returns one job; a missing job is a nil Job with the jobs table
// index (not an error), as in Nomad.
func (j *Job) GetJob(args *structs.JobSpecificRequest, reply *structs.SingleJobResponse) error {
	if done, err := j.srv.forward("Job.GetJob", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := st.JobByID(ws, ns, args.JobID)
		switch {
		case err == nil:
			reply.Job = job
			return job.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Job = nil
			return st.Index(state.TableJobs)
		default:
			return 0, err
		}
	})
}

// List returns job stubs with summaries, filtered by Prefix. Namespace "*"
// lists every namespace.
func (j *Job) List(args *structs.JobListRequest, reply *structs.JobListResponse) error {
	if done, err := j.srv.forward("Job.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		var (
			jobs []*structs.Job
			err  error
		)
		if ns == "*" {
			jobs, err = st.Jobs(ws)
		} else {
			jobs, err = st.JobsByIDPrefix(ws, ns, args.Prefix)
		}
		if err != nil {
			return 0, err
		}
		stubs := make([]*structs.JobListStub, 0, len(jobs))
		for _, job := range jobs {
			if ns == "*" && !strings.HasPrefix(job.ID, args.Prefix) {
				continue
			}
			summary, err := st.JobSummary(ws, job.Namespace, job.ID)
			if err != nil && !errors.Is(err, structs.ErrNotFound) {
				return 0, err
			}
			stubs = append(stubs, job.Stub(summary))
		}
		reply.Jobs = stubs
		// The stubs carry summaries, so (as Nomad) the list's index is the
		// later of the jobs and job summary tables: a blocking list returns
		// when a summary changes.
		jobsIndex, err := st.Index(state.TableJobs)
		if err != nil {
			return 0, err
		}
		sumIndex, err := st.Index(state.TableJobSummary)
		if err != nil {
			return 0, err
		}
		return max(jobsIndex, sumIndex), nil
	})
}

// checkJobNodePool refuses a job whose node pool does not exist.
func checkJobNodePool(st *state.StateStore, job *structs.Job) error {
	_, err := st.NodePoolByName(nil, job.NodePool)
	if errors.Is(err, structs.ErrNotFound) {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodePool",
			Message: fmt.Sprintf("node pool %q does not exist", job.NodePool)}}}
	}
	return err
}

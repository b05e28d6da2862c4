package server

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// GetJobVersions returns a job's kept versions, newest first, and with
// Diffs the change each made to the one before it. An unknown job has no
// versions (not an error), as in Nomad.
func (j *Job) GetJobVersions(args *structs.JobVersionsRequest, reply *structs.JobVersionsResponse) error {
	if done, err := j.srv.forward("Job.GetJobVersions", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		versions, err := st.JobVersionsByID(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Versions, reply.Diffs = versions, nil
		if args.Diffs {
			for i := 0; i+1 < len(versions); i++ {
				d, err := versions[i+1].Diff(versions[i], true)
				if err != nil {
					return 0, err
				}
				reply.Diffs = append(reply.Diffs, d)
			}
		}
		var index uint64
		for _, v := range versions {
			index = max(index, v.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableJobVersions)
		}
		return index, nil
	})
}

// Revert registers a kept version of a job again, as its newest version
// (Register does the work: validation, the evaluation, the unchanged-spec
// rule). The current version cannot be the target. With
// EnforcePriorVersion the job must still be at that version, or the
// revert fails with code conflict; the registration is then also
// conditional on the job's modify index, so a change racing the revert
// fails it too.
func (j *Job) Revert(args *structs.JobRevertRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Revert", args, args, reply); done {
		return err
	}
	if args.JobID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobID", Message: "missing job ID"}}}
	}
	if args.ConsulToken != "" || args.VaultToken != "" {
		return structs.NewError(structs.ErrCodeUnsupported, "Drover does not support Consul or Vault tokens (ConsulToken, VaultToken)")
	}
	ns := args.RequestNamespace()
	st := j.srv.fsm.State()
	cur, err := st.JobByID(nil, ns, args.JobID)
	if errors.Is(err, structs.ErrNotFound) {
		return structs.NewError(structs.ErrCodeNotFound, "job %q not found", args.JobID)
	}
	if err != nil {
		return err
	}
	if p := args.EnforcePriorVersion; p != nil && *p != cur.Version {
		return structs.NewError(structs.ErrCodeConflict,
			"revert request enforcing prior version %d but job %q has version %d", *p, args.JobID, cur.Version)
	}
	if args.JobVersion == cur.Version {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobVersion",
			Message: fmt.Sprintf("version %d is the job's current version; there is nothing to revert", cur.Version)}}}
	}
	old, err := st.JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if errors.Is(err, structs.ErrNotFound) {
		return structs.NewError(structs.ErrCodeNotFound, "job %q has no version %d (the servers keep the last %d)",
			args.JobID, args.JobVersion, st.JobTrackedVersions())
	}
	if err != nil {
		return err
	}
	reg := &structs.JobRegisterRequest{Job: revertedJob(old), WriteRequest: args.WriteRequest}
	if args.EnforcePriorVersion != nil {
		reg.EnforceIndex, reg.JobModifyIndex = true, cur.JobModifyIndex
	}
	return j.Register(reg, reply)
}

// revertedJob is the job a revert to version old registers: a copy of it,
// not stable (the new version has yet to prove itself). Job.Revert and the
// deployment watcher's auto-revert both register it.
func revertedJob(old *structs.Job) *structs.Job {
	job := old.Copy()
	job.Stable = false
	return job
}

// Stable sets the Stable flag of a kept version of a job (one Raft
// entry). A version not kept fails with code not_found.
func (j *Job) Stable(args *structs.JobStabilityRequest, reply *structs.JobStabilityResponse) error {
	if done, err := j.srv.forward("Job.Stable", args, args, reply); done {
		return err
	}
	if args.JobID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "JobID", Message: "missing job ID"}}}
	}
	ns := args.RequestNamespace()
	if _, err := j.srv.fsm.State().JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion); err != nil {
		if errors.Is(err, structs.ErrNotFound) {
			return structs.NewError(structs.ErrCodeNotFound, "job %q has no version %d", args.JobID, args.JobVersion)
		}
		return err
	}
	req := *args
	req.Namespace = ns
	index, _, err := j.srv.raftApply(structs.JobStabilityRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index, reply.JobModifyIndex = index, index
	return nil
}

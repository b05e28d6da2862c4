package server

import (
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Allocations returns the stubs of a job's allocations (terminal ones
// too).
func (j *Job) Allocations(args *structs.JobSpecificRequest, reply *structs.AllocListResponse) error {
	if done, err := j.srv.forward("Job.Allocations", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Allocations = allocStubs(allocs)
		return st.Index(state.TableAllocs)
	})
}

// Evaluations returns a job's evaluations.
func (j *Job) Evaluations(args *structs.JobSpecificRequest, reply *structs.EvalListResponse) error {
	if done, err := j.srv.forward("Job.Evaluations", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		evals, err := st.EvalsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Evaluations = evals
		return st.Index(state.TableEvals)
	})
}

// Summary returns a job's summary; a missing job is a nil JobSummary with
// the summary table index.
func (j *Job) Summary(args *structs.JobSpecificRequest, reply *structs.JobSummaryResponse) error {
	if done, err := j.srv.forward("Job.Summary", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		summary, err := st.JobSummary(ws, ns, args.JobID)
		switch {
		case err == nil:
			var index uint64
			reply.JobSummary, index, err = withChildren(ws, st, summary)
			return index, err
		case errors.Is(err, structs.ErrNotFound):
			reply.JobSummary = nil
			return st.Index(state.TableJobSummary)
		default:
			return 0, err
		}
	})
}

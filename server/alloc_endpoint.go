package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Alloc is the allocation endpoint: reads and stop.
type Alloc struct {
	srv *Server
}

// GetAlloc returns one allocation (with its Job); a missing one is a nil
// Alloc with the allocs table index.
func (a *Alloc) GetAlloc(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) error {
	if done, err := a.srv.forward("Alloc.GetAlloc", args, args, reply); done {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := st.AllocByID(ws, args.AllocID)
		switch {
		case err == nil:
			reply.Alloc = alloc
			return alloc.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Alloc = nil
			return st.Index(state.TableAllocs)
		default:
			return 0, err
		}
	})
}

// GetAllocs returns the named allocations, each with its Job, in the order
// asked; unknown IDs are left out. It blocks until one of them changes
// past MinQueryIndex.
func (a *Alloc) GetAllocs(args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	if done, err := a.srv.forward("Alloc.GetAllocs", args, args, reply); done {
		return err
	}
	// One slice for every pass: a pass refills it from the start.
	out := make([]*structs.Allocation, 0, len(args.AllocIDs))
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		found, index, err := st.AllocsByIDs(ws, args.AllocIDs, out[:0])
		if err != nil {
			return 0, err
		}
		reply.Allocs = found
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}

// List returns allocation stubs, filtered by ID Prefix, in the request's
// namespace ("*" for all).
func (a *Alloc) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) error {
	if done, err := a.srv.forward("Alloc.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByIDPrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		if ns != "*" {
			kept := allocs[:0:0]
			for _, al := range allocs {
				if al.Namespace == ns {
					kept = append(kept, al)
				}
			}
			allocs = kept
		}
		reply.Allocations = allocStubs(allocs)
		return st.Index(state.TableAllocs)
	})
}

// Stop asks for one allocation to be stopped and replaced: it is marked
// for migration (DesiredTransition.Migrate) and an evaluation of its job
// (trigger alloc-stop) is written with it, so the scheduler stops it and
// places its replacement.
func (a *Alloc) Stop(args *structs.AllocStopRequest, reply *structs.AllocStopResponse) error {
	s := a.srv
	if done, err := s.forward("Alloc.Stop", args, args, reply); done {
		return err
	}
	if args.AllocID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "AllocID", Message: "missing allocation ID"}}}
	}
	st := s.fsm.State()
	alloc, err := st.AllocByID(nil, args.AllocID)
	if err != nil {
		return err
	}
	job := alloc.Job
	if cur, err := st.JobByID(nil, alloc.Namespace, alloc.JobID); err == nil {
		job = cur
	}
	if job == nil {
		return structs.NewError(structs.ErrCodeNotFound, "job %q of allocation %q not found", alloc.JobID, alloc.ID)
	}
	now := time.Now()
	migrate := true
	eval := structs.NewEval(job, structs.EvalTriggerAllocStop, now)
	req := &structs.AllocUpdateDesiredTransitionRequest{
		Allocs:    map[string]*structs.DesiredTransition{alloc.ID: {Migrate: &migrate}},
		Evals:     []*structs.Evaluation{eval},
		UpdatedAt: now.UnixNano(),
	}
	index, _, err := s.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.Index = eval.ID, index
	return nil
}

// allocStubs returns the listing form of allocs.
func allocStubs(allocs []*structs.Allocation) []*structs.AllocListStub {
	out := make([]*structs.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Stub())
	}
	return out
}

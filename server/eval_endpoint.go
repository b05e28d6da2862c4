package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Dequeue long-poll bounds.
const (
	defaultDequeueTimeout = time.Second
	maxDequeueTimeout     = 30 * time.Second
)

// Eval is the evaluation endpoint: the broker's side for scheduler
// workers (Dequeue, Ack, Nack, Update, Create, Reblock) and evaluation
// reads. Every worker call is served by the leader (forwarded otherwise).
type Eval struct {
	srv *Server
}

// Dequeue waits up to args.Timeout for an evaluation of one of
// args.Schedulers. The reply has a nil Eval on timeout; otherwise the
// delivery token and the index the worker's state must reach first.
func (e *Eval) Dequeue(args *structs.EvalDequeueRequest, reply *structs.EvalDequeueResponse) error {
	s := e.srv
	if done, err := s.forward("Eval.Dequeue", args, args, reply); done {
		return err
	}
	if len(args.Schedulers) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Schedulers", Message: "no scheduler types"}}}
	}
	timeout := args.Timeout
	if timeout <= 0 {
		timeout = defaultDequeueTimeout
	}
	timeout = min(timeout, maxDequeueTimeout)
	ctx, cancel := context.WithTimeout(s.shutdownCtx, timeout)
	defer cancel()
	eval, token, index, err := s.dequeueEval(ctx, args.Schedulers, args.LocalWorker)
	for errors.Is(err, structs.ErrBrokerDisabled) && s.IsLeader() && !s.leaderEstablished.Load() {
		// Elected, the broker not yet enabled: wait for it here rather
		// than send the worker into its error backoff.
		changed := s.leaderChange.wait()
		if !s.leaderEstablished.Load() {
			select {
			case <-changed:
			case <-ctx.Done():
				return nil // an empty answer, as on a timeout
			}
		}
		eval, token, index, err = s.dequeueEval(ctx, args.Schedulers, args.LocalWorker)
	}
	if err != nil {
		return err
	}
	reply.Eval, reply.Token, reply.WaitIndex = eval, token, index
	reply.Index = index
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// dequeueEval takes an evaluation from the local broker; a nil evaluation
// with no error means ctx ended first (or the server is shutting down).
// local is set for this server's own workers, which the broker serves
// before remote ones.
func (s *Server) dequeueEval(ctx context.Context, schedulers []string, local bool) (*structs.Evaluation, string, uint64, error) {
	defer measureSince(metricEvalDequeue, time.Now())
	dequeue := s.broker.DequeueContext
	if local {
		dequeue = s.broker.DequeueLocal
	}
	eval, token, err := dequeue(ctx, schedulers)
	if err != nil {
		if ctx.Err() != nil {
			if s.isShutdown() {
				return nil, "", 0, structs.ErrShutdown
			}
			return nil, "", 0, nil
		}
		return nil, "", 0, err
	}
	if eval == nil {
		return nil, "", 0, nil
	}
	// Node events the evaluation absorbed (node_evals.go): their writes
	// are at most a Raft commit away, so wait for them here, bounded only
	// by shutdown (a lost leadership fails the writes).
	covered, err := s.broker.CoverIndex(s.shutdownCtx, eval.ID, token)
	if err != nil {
		return nil, "", 0, err
	}
	index := max(evalWaitIndex(s.fsm.State(), eval), covered, s.evalFloor.Load())
	return eval, token, index, nil
}

// Ack completes a delivery.
func (e *Eval) Ack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Ack", args, args, reply); done {
		return err
	}
	return e.srv.broker.Ack(args.EvalID, args.Token)
}

// Nack gives a delivery back for redelivery.
func (e *Eval) Nack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Nack", args, args, reply); done {
		return err
	}
	return e.srv.broker.Nack(args.EvalID, args.Token)
}

// Update writes evaluations from a worker: the one it holds (by ID) and
// those it creates (by PreviousEval) must be outstanding under
// args.EvalToken.
func (e *Eval) Update(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	s := e.srv
	if done, err := s.forward("Eval.Update", args, args, reply); done {
		return err
	}
	index, err := s.writeWorkerEvals(args.Evals, args.EvalToken)
	reply.Index = index
	return err
}

// Create writes new evaluations from a worker; each must not exist yet and
// must follow (PreviousEval) the evaluation held under args.EvalToken.
func (e *Eval) Create(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	s := e.srv
	if done, err := s.forward("Eval.Create", args, args, reply); done {
		return err
	}
	st := s.fsm.State()
	for _, ev := range args.Evals {
		if ev == nil {
			continue
		}
		if _, err := st.EvalByID(nil, ev.ID); err == nil {
			return structs.NewError(structs.ErrCodeInvalid, "evaluation %q already exists", ev.ID)
		}
	}
	index, err := s.writeWorkerEvals(args.Evals, args.EvalToken)
	reply.Index = index
	return err
}

// Reblock returns one blocked evaluation, still held by the worker under
// args.EvalToken, to blocked-evals tracking after writing it.
func (e *Eval) Reblock(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	s := e.srv
	if done, err := s.forward("Eval.Reblock", args, args, reply); done {
		return err
	}
	if len(args.Evals) != 1 || args.Evals[0] == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Evals", Message: "reblock takes exactly one evaluation"}}}
	}
	index, err := s.reblockEval(args.Evals[0], args.EvalToken)
	reply.Index = index
	return err
}

// checkEvalToken verifies that every evaluation in evals is, or follows,
// the evaluation outstanding in the broker under token.
func (s *Server) checkEvalToken(evals []*structs.Evaluation, token string) error {
	if !s.broker.Enabled() {
		return structs.ErrBrokerDisabled
	}
	for _, ev := range evals {
		held, ok := s.broker.Outstanding(ev.ID)
		if !ok && ev.PreviousEval != "" {
			held, ok = s.broker.Outstanding(ev.PreviousEval)
		}
		switch {
		case !ok:
			return structs.NewError(structs.ErrCodeNotFound, "evaluation %q is not outstanding", ev.ID)
		case held != token:
			return structs.NewError(structs.ErrCodeTokenMismatch, "token does not match the outstanding delivery of evaluation %q", ev.ID)
		}
	}
	return nil
}

// validateEvals rejects an empty batch or a nil or incomplete evaluation.
func validateEvals(evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Evals", Message: "no evaluations"}}}
	}
	var errs []structs.FieldError
	for i, ev := range evals {
		switch {
		case ev == nil:
			errs = append(errs, structs.FieldError{Field: "Evals[" + strconv.Itoa(i) + "]", Message: "must not be null"})
		case ev.ID == "":
			errs = append(errs, structs.FieldError{Field: "Evals[" + strconv.Itoa(i) + "].ID", Message: "missing evaluation ID"})
		case ev.Type == "":
			errs = append(errs, structs.FieldError{Field: "Evals[" + strconv.Itoa(i) + "].Type", Message: "missing scheduler type"})
		}
	}
	if len(errs) > 0 {
		return &structs.ValidationError{Errors: errs}
	}
	return nil
}

// writeWorkerEvals checks the token and writes evals through Raft.
func (s *Server) writeWorkerEvals(evals []*structs.Evaluation, token string) (uint64, error) {
	defer measureSince(metricEvalUpdate, time.Now())
	if err := validateEvals(evals); err != nil {
		return 0, err
	}
	if err := s.checkEvalToken(evals, token); err != nil {
		return 0, err
	}
	index, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals, EvalToken: token})
	return index, err
}

// reblockEval writes a blocked evaluation the worker still holds and hands
// it back to blocked evals under the worker's token.
func (s *Server) reblockEval(eval *structs.Evaluation, token string) (uint64, error) {
	if err := validateEvals([]*structs.Evaluation{eval}); err != nil {
		return 0, err
	}
	if eval.Status != structs.EvalStatusBlocked {
		return 0, structs.NewError(structs.ErrCodeInvalid, "evaluation %q is %s, not blocked", eval.ID, eval.Status)
	}
	held, ok := s.broker.Outstanding(eval.ID)
	switch {
	case !s.broker.Enabled():
		return 0, structs.ErrBrokerDisabled
	case !ok:
		return 0, structs.NewError(structs.ErrCodeNotFound, "evaluation %q is not outstanding", eval.ID)
	case held != token:
		return 0, structs.NewError(structs.ErrCodeTokenMismatch, "token does not match the outstanding delivery of evaluation %q", eval.ID)
	}
	index, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, EvalToken: token})
	if err != nil {
		return 0, err
	}
	// The FSM hook has blocked it already (without the token); this
	// replaces that entry so a release waits for the worker's ack.
	s.blocked.Reblock(eval, token)
	return index, nil
}

// GetEval returns one evaluation; a missing one is a nil Eval with the
// evals table index.
func (e *Eval) GetEval(args *structs.EvalSpecificRequest, reply *structs.SingleEvalResponse) error {
	if done, err := e.srv.forward("Eval.GetEval", args, args, reply); done {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		eval, err := st.EvalByID(ws, args.EvalID)
		switch {
		case err == nil:
			reply.Eval = eval
			return eval.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Eval = nil
			return st.Index(state.TableEvals)
		default:
			return 0, err
		}
	})
}

// List returns evaluations, filtered by ID Prefix, FilterJobID and
// FilterEvalStatus, in the request's namespace ("*" for all).
func (e *Eval) List(args *structs.EvalListRequest, reply *structs.EvalListResponse) error {
	if done, err := e.srv.forward("Eval.List", args, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		var (
			evals []*structs.Evaluation
			err   error
		)
		switch {
		case args.FilterJobID != "" && ns != "*":
			evals, err = st.EvalsByJob(ws, ns, args.FilterJobID)
		case args.FilterEvalStatus != "" && args.Prefix == "":
			evals, err = st.EvalsByStatus(ws, args.FilterEvalStatus)
		default:
			evals, err = st.EvalsByIDPrefix(ws, args.Prefix)
		}
		if err != nil {
			return 0, err
		}
		out := make([]*structs.Evaluation, 0, len(evals))
		for _, ev := range evals {
			switch {
			case ns != "*" && ev.Namespace != ns,
				args.FilterJobID != "" && ev.JobID != args.FilterJobID,
				args.FilterEvalStatus != "" && ev.Status != args.FilterEvalStatus,
				!strings.HasPrefix(ev.ID, args.Prefix):
				continue
			}
			out = append(out, ev)
		}
		reply.Evaluations = out
		return st.Index(state.TableEvals)
	})
}

// Allocations returns the stubs of the allocations an evaluation placed or
// changed.
func (e *Eval) Allocations(args *structs.EvalSpecificRequest, reply *structs.AllocListResponse) error {
	if done, err := e.srv.forward("Eval.Allocations", args, args, reply); done {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByEval(ws, args.EvalID)
		if err != nil {
			return 0, err
		}
		reply.Allocations = allocStubs(allocs)
		return st.Index(state.TableAllocs)
	})
}

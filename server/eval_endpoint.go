package server

import (
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Eval is the evaluation endpoint. (Dequeue, Ack, Nack, Update for the
// scheduler workers arrive with the eval broker.)
type Eval struct {
	srv *Server
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

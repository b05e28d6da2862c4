package fsm

import (
	"errors"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// The variable and keyring entries. A check-and-set conflict writes
// nothing; its result, a *structs.VarConflictError, carries the current
// variable back to the endpoint.

func (f *FSM) applyVarApplyState(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.VarApplyStateRequest
	if err := f.decodeLocked(buf, &req, structs.VarApplyStateRequestType, index); err != nil {
		return err, nil
	}
	err := b.ApplyVariable(index, &req)
	var conflict *structs.VarConflictError
	if errors.As(err, &conflict) {
		return conflict, nil
	}
	return refusal(err)
}

func (f *FSM) applyVariablesRekey(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.VariablesRekeyRequest
	if err := f.decodeLocked(buf, &req, structs.VariablesRekeyRequestType, index); err != nil {
		return err, nil
	}
	_, err := b.RekeyVariables(index, req.Vars)
	return refusal(err)
}

func (f *FSM) applyRootKeyMetaUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.RootKeyMetaUpsertRequest
	if err := f.decodeLocked(buf, &req, structs.RootKeyMetaUpsertRequestType, index); err != nil {
		return err, nil
	}
	return refusal(b.UpsertRootKeyMeta(index, req.RootKeyMeta))
}

package fsm

import (
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// The service registration entries. An undecodable entry, and a delete of
// a registration that does not exist, are refusals that write nothing.

func (f *FSM) applyServiceRegistrationUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ServiceRegistrationUpsertRequest
	if err := f.decodeLocked(buf, &req, structs.ServiceRegistrationUpsertRequestType, index); err != nil {
		return err, nil
	}
	return refusal(b.UpsertServiceRegistrations(index, req.Services))
}

func (f *FSM) applyServiceRegistrationDeleteByID(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ServiceRegistrationDeleteByIDRequest
	if err := f.decodeLocked(buf, &req, structs.ServiceRegistrationDeleteByIDRequestType, index); err != nil {
		return err, nil
	}
	return refusal(b.DeleteServiceRegistrationByID(index, req.RequestNamespace(), req.ID))
}

func (f *FSM) applyServiceRegistrationDeleteByAllocIDs(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ServiceRegistrationDeleteByAllocIDsRequest
	if err := f.decodeLocked(buf, &req, structs.ServiceRegistrationDeleteByAllocIDsRequestType, index); err != nil {
		return err, nil
	}
	return refusal(b.DeleteServiceRegistrationsByAllocIDs(index, req.AllocIDs))
}

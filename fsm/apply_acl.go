package fsm

import (
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// The ACL entries. A refusal (a missing policy or token, a second
// bootstrap) is found before anything is written and becomes the entry's
// result; the endpoint returns it to the caller.

func (f *FSM) applyACLPolicyUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLPolicyUpsertRequest
	f.decodeLocked(buf, &req, structs.ACLPolicyUpsertRequestType, index)
	return nil, b.UpsertACLPolicies(index, req.Policies)
}

func (f *FSM) applyACLPolicyDelete(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLPolicyDeleteRequest
	f.decodeLocked(buf, &req, structs.ACLPolicyDeleteRequestType, index)
	return refusal(b.DeleteACLPolicies(index, req.Names))
}

func (f *FSM) applyACLTokenUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLTokenUpsertRequest
	f.decodeLocked(buf, &req, structs.ACLTokenUpsertRequestType, index)
	return refusal(b.UpsertACLTokens(index, req.Tokens))
}

func (f *FSM) applyACLTokenDelete(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLTokenDeleteRequest
	f.decodeLocked(buf, &req, structs.ACLTokenDeleteRequestType, index)
	return refusal(b.DeleteACLTokens(index, req.AccessorIDs))
}

func (f *FSM) applyACLTokenBootstrap(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLTokenBootstrapRequest
	f.decodeLocked(buf, &req, structs.ACLTokenBootstrapRequestType, index)
	if req.Token == nil {
		return structs.NewError(structs.ErrCodeInvalid, "ACL bootstrap entry without a token"), nil
	}
	return refusal(b.BootstrapACLToken(index, req.ResetIndex, req.Token))
}

func (f *FSM) applyACLClusterSecret(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ACLClusterSecretRequest
	f.decodeLocked(buf, &req, structs.ACLClusterSecretRequestType, index)
	if req.Secret == nil || req.Secret.Secret == "" {
		return structs.NewError(structs.ErrCodeInvalid, "cluster secret entry without a secret"), nil
	}
	if req.Rotate {
		return nil, b.RotateACLClusterSecret(index, req.Secret)
	}
	return nil, b.SetACLClusterSecret(index, req.Secret)
}

// refusal sorts a state error: not found, conflict and invalid are
// refusals found before any write (the entry's result); anything else is
// a failed write.
func refusal(err error) (any, error) {
	switch structs.CodeOf(err) {
	case "":
		return nil, nil
	case structs.ErrCodeNotFound, structs.ErrCodeConflict, structs.ErrCodeInvalid:
		return err, nil
	}
	return nil, err
}

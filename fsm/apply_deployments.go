package fsm

import (
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Deployment entries (structs/deployment.go). A deployment the entry
// names that does not exist, a promotion of canaries that are not all
// healthy, or a health change for an allocation of another deployment is
// a refusal (the entry's result), found before anything is written.

// applyDeploymentStatusUpdate changes a deployment's status, with the job
// it reverts to and the evaluation it creates.
func (f *FSM) applyDeploymentStatusUpdate(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.DeploymentStatusUpdateRequest
	if err := f.decodeLocked(buf, &req, structs.DeploymentStatusUpdateRequestType, index); err != nil {
		return err, nil
	}
	resp, err := refusal(b.UpdateDeploymentStatus(index, &req, time.Time{}))
	if resp == nil && err == nil && req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return resp, err
}

// applyDeploymentPromotion promotes a deployment's canaries and writes the
// evaluation that places the rest.
func (f *FSM) applyDeploymentPromotion(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ApplyDeploymentPromoteRequest
	if err := f.decodeLocked(buf, &req, structs.DeploymentPromoteRequestType, index); err != nil {
		return err, nil
	}
	resp, err := refusal(b.UpdateDeploymentPromotion(index, &req, time.Time{}))
	if resp == nil && err == nil && req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return resp, err
}

// applyDeploymentAllocHealth sets allocations' health through their
// deployment, with what that causes.
func (f *FSM) applyDeploymentAllocHealth(b *state.Batch, buf []byte, index uint64) (any, error) {
	var req structs.ApplyDeploymentAllocHealthRequest
	if err := f.decodeLocked(buf, &req, structs.DeploymentAllocHealthRequestType, index); err != nil {
		return err, nil
	}
	resp, err := refusal(b.UpdateDeploymentAllocHealth(index, &req))
	if resp == nil && err == nil && req.Eval != nil {
		f.queueEvalsUpserted([]*structs.Evaluation{req.Eval})
	}
	return resp, err
}

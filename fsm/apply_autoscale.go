package fsm

import (
	"time"

	"github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// applyPoolAutoscalerUpsert sets or deletes a pool's autoscaler
// configuration; an invalid one, a missing pool or a missing
// configuration is refused and nothing is written.
func (f *FSM) applyPoolAutoscalerUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricPoolAutoscalerUpsert), time.Now())
	var req structs.PoolAutoscalerUpsertRequest
	if err := f.decodeLocked(buf, &req, structs.PoolAutoscalerUpsertRequestType, index); err != nil {
		return err, nil
	}
	if req.Autoscaler != nil {
		if err := req.Autoscaler.Validate(); err != nil {
			return err, nil
		}
	}
	if err := b.UpsertPoolAutoscaler(index, &req); err != nil {
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			return err, nil
		}
		f.logger.Error("pool autoscaler upsert failed", "error", err)
		return nil, err
	}
	return nil, nil
}

// applyPoolInstanceUpdate writes the leader autoscaler's instances and
// events.
func (f *FSM) applyPoolInstanceUpdate(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricPoolInstanceUpdate), time.Now())
	var req structs.PoolInstanceUpdateRequest
	if err := f.decodeLocked(buf, &req, structs.PoolInstanceUpdateRequestType, index); err != nil {
		return err, nil
	}
	for _, i := range req.Instances {
		if i == nil || i.ID == "" {
			return structs.NewError(structs.ErrCodeInvalid, "instance update with a null instance or an empty ID"), nil
		}
	}
	for _, e := range req.Events {
		if e == nil {
			return structs.NewError(structs.ErrCodeInvalid, "instance update with a null event"), nil
		}
	}
	if err := b.UpdatePoolInstances(index, &req); err != nil {
		f.logger.Error("pool instance update failed", "error", err)
		return nil, err
	}
	return nil, nil
}

// applyPoolInstanceBehavior sets an instance's behaviour; an unknown
// instance or behaviour is refused and nothing is written.
func (f *FSM) applyPoolInstanceBehavior(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricPoolInstanceBehavior), time.Now())
	var req structs.PoolInstanceBehaviorRequest
	if err := f.decodeLocked(buf, &req, structs.PoolInstanceBehaviorRequestType, index); err != nil {
		return err, nil
	}
	if err := b.SetPoolInstanceBehavior(index, &req); err != nil {
		switch structs.CodeOf(err) {
		case structs.ErrCodeInvalid, structs.ErrCodeNotFound:
			return err, nil
		}
		f.logger.Error("pool instance behaviour failed", "error", err)
		return nil, err
	}
	return nil, nil
}

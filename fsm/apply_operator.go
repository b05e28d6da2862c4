package fsm

import (
	"time"

	"github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// applySchedulerConfig sets the scheduler configuration. A check-and-set
// whose index does not match is refused (code conflict) and writes
// nothing; an invalid configuration (which the endpoint refuses first) is
// refused alike.
func (f *FSM) applySchedulerConfig(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricSchedulerConfig), time.Now())
	var req structs.SchedulerSetConfigRequest
	if err := f.decodeLocked(buf, &req, structs.SchedulerConfigRequestType, index); err != nil {
		return err, nil
	}
	if err := req.Config.Validate(); err != nil {
		return err, nil
	}
	if err := b.SetSchedulerConfig(index, &req.Config, req.CAS); err != nil {
		if structs.CodeOf(err) == structs.ErrCodeConflict {
			return err, nil
		}
		f.logger.Error("scheduler configuration update failed", "error", err)
		return nil, err
	}
	return nil, nil
}

// applyNodePoolUpsert writes node pools; an invalid or built-in one is
// refused and nothing is written.
func (f *FSM) applyNodePoolUpsert(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodePoolUpsert), time.Now())
	var req structs.NodePoolUpsertRequest
	if err := f.decodeLocked(buf, &req, structs.NodePoolUpsertRequestType, index); err != nil {
		return err, nil
	}
	for _, p := range req.NodePools {
		if p == nil {
			return structs.NewError(structs.ErrCodeInvalid, "node pool upsert entry with a null pool"), nil
		}
		if err := p.Validate(); err != nil {
			return err, nil
		}
	}
	if err := b.UpsertNodePools(index, req.NodePools); err != nil {
		f.logger.Error("node pool upsert failed", "error", err)
		return nil, err
	}
	return nil, nil
}

// applyNodePoolDelete deletes node pools; a refusal (built in, missing,
// still used) writes nothing.
func (f *FSM) applyNodePoolDelete(b *state.Batch, buf []byte, index uint64) (any, error) {
	defer metrics.MeasureSince(metricKey(metricNodePoolDelete), time.Now())
	var req structs.NodePoolDeleteRequest
	if err := f.decodeLocked(buf, &req, structs.NodePoolDeleteRequestType, index); err != nil {
		return err, nil
	}
	if err := b.DeleteNodePools(index, req.Names); err != nil {
		switch structs.CodeOf(err) {
		case structs.ErrCodeInvalid, structs.ErrCodeNotFound, structs.ErrCodeConflict:
			return err, nil
		}
		f.logger.Error("node pool delete failed", "error", err)
		return nil, err
	}
	return nil, nil
}

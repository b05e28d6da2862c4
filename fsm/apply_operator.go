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

package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// schedulerConfigKey is the primary key of the scheduler_config table's
// one row.
const schedulerConfigKey = "scheduler"

// defaultSchedulerConfig is what SchedulerConfig answers while none is
// stored; shared by every caller, so never modified.
var defaultSchedulerConfig = structs.DefaultSchedulerConfiguration()

// SchedulerConfig returns the scheduler configuration in force and the
// index of its last write: the stored one, or, when an operator never set
// one, structs.DefaultSchedulerConfiguration with index 0. The result is
// shared: never modify it.
func (s *StateStore) SchedulerConfig(ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableSchedulerConfig, IndexID, schedulerConfigKey)
	if err != nil {
		return 0, nil, fmt.Errorf("state: scheduler configuration lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return 0, defaultSchedulerConfig, nil
	}
	c := raw.(*structs.SchedulerConfiguration)
	return c.ModifyIndex, c, nil
}

// SetSchedulerConfig writes the scheduler configuration. With cas, it
// writes only if the stored row's ModifyIndex equals config.ModifyIndex
// (0 when none is stored) and otherwise fails with code conflict, writing
// nothing.
func (s *StateStore) SetSchedulerConfig(index uint64, config *structs.SchedulerConfiguration, cas bool) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.SetSchedulerConfig(index, config, cas); err != nil {
		return err
	}
	return b.Commit()
}

// SetSchedulerConfig is StateStore.SetSchedulerConfig within the batch.
func (b *Batch) SetSchedulerConfig(index uint64, config *structs.SchedulerConfiguration, cas bool) error {
	b.txn.t.begin(index)
	raw, err := b.txn.first(TableSchedulerConfig, schedulerConfigKey)
	if err != nil {
		return err
	}
	row := *config
	row.CreateIndex, row.ModifyIndex = index, index
	var stored uint64
	if prev, ok := raw.(*structs.SchedulerConfiguration); ok && prev != nil {
		row.CreateIndex, stored = prev.CreateIndex, prev.ModifyIndex
	}
	if cas && stored != config.ModifyIndex {
		return structs.NewError(structs.ErrCodeConflict,
			"scheduler configuration check-and-set: index %d does not match the stored index %d", config.ModifyIndex, stored)
	}
	if err := b.txn.insert(TableSchedulerConfig, &row); err != nil {
		return fmt.Errorf("state: writing the scheduler configuration: %w", err)
	}
	b.txn.t.add(TableSchedulerConfig)
	return nil
}

// StoredSchedulerConfig returns the row an operator set, or nil (for
// snapshots: the default is not written).
func (s *StateStore) StoredSchedulerConfig() (*structs.SchedulerConfiguration, error) {
	raw, err := s.db.Txn(false).First(TableSchedulerConfig, IndexID, schedulerConfigKey)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.SchedulerConfiguration), nil
}

// SchedulerConfigRestore loads a snapshot row.
func (r *StateRestore) SchedulerConfigRestore(c *structs.SchedulerConfiguration) error {
	return r.insert(TableSchedulerConfig, c)
}

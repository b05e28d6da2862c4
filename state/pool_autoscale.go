package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Autoscaling node pools: the pool_autoscaler table holds each pool's
// configuration (an operator's write), pool_instance the instances the
// leader's autoscaler created (its writes, but for the behaviour, which
// is the operator's), pool_autoscale_status each pool's newest events
// and the end of its quota back-off.

// PoolAutoscalers returns every pool's autoscaler configuration, by pool.
func (s *StateStore) PoolAutoscalers(ws memdb.WatchSet) ([]*structs.PoolAutoscaler, error) {
	return listTxn[structs.PoolAutoscaler](s.db.Txn(false), ws, TablePoolAutoscalers, IndexID)
}

// PoolAutoscalerByPool returns a pool's configuration, or an error
// matching structs.ErrNotFound.
func (s *StateStore) PoolAutoscalerByPool(ws memdb.WatchSet, pool string) (*structs.PoolAutoscaler, error) {
	return firstTxn[structs.PoolAutoscaler](s.db.Txn(false), ws, TablePoolAutoscalers, "autoscaler of node pool", pool, pool)
}

// PoolInstances returns the instances of pool ("": of every pool),
// sorted by pool, creation and ID.
func (s *StateStore) PoolInstances(ws memdb.WatchSet, pool string) ([]*structs.PoolInstance, error) {
	var list []*structs.PoolInstance
	var err error
	if pool == "" {
		list, err = listTxn[structs.PoolInstance](s.db.Txn(false), ws, TablePoolInstances, IndexID)
	} else {
		list, err = listTxn[structs.PoolInstance](s.db.Txn(false), ws, TablePoolInstances, IndexPool, pool)
	}
	if err != nil {
		return nil, err
	}
	structs.SortPoolInstances(list)
	return list, nil
}

// PoolInstanceByID returns one instance, or an error matching
// structs.ErrNotFound.
func (s *StateStore) PoolInstanceByID(ws memdb.WatchSet, id string) (*structs.PoolInstance, error) {
	return firstTxn[structs.PoolInstance](s.db.Txn(false), ws, TablePoolInstances, "instance", id, id)
}

// PoolAutoscaleStatusByPool returns a pool's events and back-off, or an
// error matching structs.ErrNotFound when nothing was recorded.
func (s *StateStore) PoolAutoscaleStatusByPool(ws memdb.WatchSet, pool string) (*structs.PoolAutoscaleStatus, error) {
	return firstTxn[structs.PoolAutoscaleStatus](s.db.Txn(false), ws, TablePoolAutoscaleStats, "autoscale status of node pool", pool, pool)
}

// PoolAutoscaleStatuses returns every pool's status (for snapshots).
func (s *StateStore) PoolAutoscaleStatuses(ws memdb.WatchSet) ([]*structs.PoolAutoscaleStatus, error) {
	return listTxn[structs.PoolAutoscaleStatus](s.db.Txn(false), ws, TablePoolAutoscaleStats, IndexID)
}

// UpsertPoolAutoscaler applies a PoolAutoscalerUpsertRequest in its own
// transaction (see Batch.UpsertPoolAutoscaler).
func (s *StateStore) UpsertPoolAutoscaler(index uint64, req *structs.PoolAutoscalerUpsertRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertPoolAutoscaler(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertPoolAutoscaler sets a pool's configuration (the pool must be a
// stored pool: code not_found otherwise) or deletes it (code not_found
// when there is none). Its instances stay: deleting the configuration
// stops the decisions, not the instances.
func (b *Batch) UpsertPoolAutoscaler(index uint64, req *structs.PoolAutoscalerUpsertRequest) error {
	b.txn.t.begin(index)
	if req.Autoscaler == nil {
		raw, err := b.txn.first(TablePoolAutoscalers, req.Delete)
		if err != nil {
			return err
		}
		if raw == nil {
			return structs.NewError(structs.ErrCodeNotFound, "node pool %q has no autoscaler", req.Delete)
		}
		if err := deleteByIDTxn(b.txn, TablePoolAutoscalers, req.Delete); err != nil {
			return err
		}
		b.txn.t.add(TablePoolAutoscalers)
		return nil
	}
	a := req.Autoscaler.Copy()
	pool, err := b.txn.first(TableNodePools, a.Pool)
	if err != nil {
		return err
	}
	if pool == nil {
		return structs.NewError(structs.ErrCodeNotFound, "node pool %q not found", a.Pool)
	}
	raw, err := b.txn.first(TablePoolAutoscalers, a.Pool)
	if err != nil {
		return err
	}
	a.CreateIndex, a.ModifyIndex = index, index
	if prev, ok := raw.(*structs.PoolAutoscaler); ok && prev != nil {
		a.CreateIndex = prev.CreateIndex
	}
	if err := b.txn.insert(TablePoolAutoscalers, a); err != nil {
		return fmt.Errorf("state: inserting autoscaler of node pool %q: %w", a.Pool, err)
	}
	b.txn.t.add(TablePoolAutoscalers)
	return nil
}

// UpdatePoolInstances applies a PoolInstanceUpdateRequest in its own
// transaction (see Batch.UpdatePoolInstances).
func (s *StateStore) UpdatePoolInstances(index uint64, req *structs.PoolInstanceUpdateRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdatePoolInstances(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpdatePoolInstances writes the autoscaler's instances (an instance
// already stored keeps its stored behaviour: the operator's), removes
// those named, and appends the events to their pools' status (a quota
// event sets the pool's back-off).
func (b *Batch) UpdatePoolInstances(index uint64, req *structs.PoolInstanceUpdateRequest) error {
	b.txn.t.begin(index)
	for _, in := range req.Instances {
		i := in.Copy()
		raw, err := b.txn.first(TablePoolInstances, i.ID)
		if err != nil {
			return err
		}
		i.CreateIndex, i.ModifyIndex = index, index
		if prev, ok := raw.(*structs.PoolInstance); ok && prev != nil {
			i.CreateIndex, i.Behavior = prev.CreateIndex, prev.Behavior
		}
		if i.Behavior == "" {
			i.Behavior = structs.InstanceBehaviorRun
		}
		if err := b.txn.insert(TablePoolInstances, i); err != nil {
			return fmt.Errorf("state: inserting instance %q: %w", i.ID, err)
		}
		b.txn.t.add(TablePoolInstances)
	}
	for _, id := range req.Remove {
		raw, err := b.txn.first(TablePoolInstances, id)
		if err != nil {
			return err
		}
		if raw == nil {
			continue
		}
		if err := b.txn.delete(TablePoolInstances, raw); err != nil {
			return err
		}
		b.txn.t.add(TablePoolInstances)
	}
	return appendPoolEventsTxn(b.txn, index, req.Events)
}

// SetPoolInstanceBehavior applies a PoolInstanceBehaviorRequest in its
// own transaction (see Batch.SetPoolInstanceBehavior).
func (s *StateStore) SetPoolInstanceBehavior(index uint64, req *structs.PoolInstanceBehaviorRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.SetPoolInstanceBehavior(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// SetPoolInstanceBehavior sets an instance's behaviour and records it as
// an event; an unknown instance is not_found, an unknown behaviour or a
// gone instance invalid.
func (b *Batch) SetPoolInstanceBehavior(index uint64, req *structs.PoolInstanceBehaviorRequest) error {
	b.txn.t.begin(index)
	if !structs.ValidInstanceBehavior(req.Behavior) {
		return structs.NewError(structs.ErrCodeInvalid, "Behavior: must be run, hold or drain; got %q", req.Behavior)
	}
	prev, err := lookup[structs.PoolInstance](b.txn, TablePoolInstances, "instance", req.InstanceID, req.InstanceID)
	if err != nil {
		return err
	}
	if prev.Gone() {
		return structs.NewError(structs.ErrCodeInvalid, "instance %q is gone", req.InstanceID)
	}
	i := prev.Copy()
	i.Behavior, i.ModifyIndex = req.Behavior, index
	if err := b.txn.insert(TablePoolInstances, i); err != nil {
		return fmt.Errorf("state: inserting instance %q: %w", i.ID, err)
	}
	b.txn.t.add(TablePoolInstances)
	ev := &structs.PoolEvent{Pool: i.Pool, Time: req.Time, Type: structs.PoolEventBehavior, InstanceID: i.ID,
		Message: fmt.Sprintf("operator set the instance's behaviour to %s (was %s)", req.Behavior, prev.Behavior)}
	return appendPoolEventsTxn(b.txn, index, []*structs.PoolEvent{ev})
}

// appendPoolEventsTxn adds events, newest first, to their pools' status
// rows, keeping structs.PoolTrackedEvents per pool. Rows are copied,
// never changed in place.
func appendPoolEventsTxn(txn *writeTxn, index uint64, events []*structs.PoolEvent) error {
	rows := map[string]*structs.PoolAutoscaleStatus{}
	for _, in := range events {
		row := rows[in.Pool]
		if row == nil {
			row = &structs.PoolAutoscaleStatus{Pool: in.Pool}
			raw, err := txn.first(TablePoolAutoscaleStats, in.Pool)
			if err != nil {
				return err
			}
			if prev, ok := raw.(*structs.PoolAutoscaleStatus); ok && prev != nil {
				row.Events = append([]*structs.PoolEvent(nil), prev.Events...)
				row.QuotaBackoffUntil = prev.QuotaBackoffUntil
			}
			rows[in.Pool] = row
		}
		ev := *in
		ev.CreateIndex = index
		row.Events = append([]*structs.PoolEvent{&ev}, row.Events...)
		if len(row.Events) > structs.PoolTrackedEvents {
			row.Events = row.Events[:structs.PoolTrackedEvents]
		}
		if ev.Type == structs.PoolEventQuota {
			row.QuotaBackoffUntil = ev.QuotaBackoffUntil
		}
	}
	for _, row := range rows {
		row.ModifyIndex = index
		if err := txn.insert(TablePoolAutoscaleStats, row); err != nil {
			return fmt.Errorf("state: inserting autoscale status of node pool %q: %w", row.Pool, err)
		}
		txn.t.add(TablePoolAutoscaleStats)
	}
	return nil
}

// PoolAutoscalerRestore, PoolInstanceRestore and PoolAutoscaleStatusRestore
// load snapshot rows.
func (r *StateRestore) PoolAutoscalerRestore(a *structs.PoolAutoscaler) error {
	return r.insert(TablePoolAutoscalers, a)
}

// PoolInstanceRestore loads a snapshot row.
func (r *StateRestore) PoolInstanceRestore(i *structs.PoolInstance) error {
	return r.insert(TablePoolInstances, i)
}

// PoolAutoscaleStatusRestore loads a snapshot row.
func (r *StateRestore) PoolAutoscaleStatusRestore(s *structs.PoolAutoscaleStatus) error {
	return r.insert(TablePoolAutoscaleStats, s)
}

package state

import (
	"fmt"
	"maps"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// The scaling_event table keeps, per job, the last
// structs.JobTrackedScalingEvents scaling events of each group, newest
// first, in one row (structs.JobScalingEvents) by (namespace, job). A
// purge of the job removes its row.

// UpsertScalingEvent applies a scaling request's entry: the scaled job
// with its evaluation (when the count changed) or the evaluation alone,
// then the event, in one transaction.
func (b *Batch) UpsertScalingEvent(index uint64, req *structs.ScalingEventRegisterRequest) error {
	ns := req.RequestNamespace()
	switch {
	case req.Job != nil:
		if err := b.UpsertJob(index, req.Job, req.Eval); err != nil {
			return err
		}
	case req.Eval != nil:
		if err := b.UpsertEvals(index, []*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	default:
		b.txn.t.begin(index)
	}
	if req.Event == nil {
		return nil
	}
	return upsertScalingEventTxn(b.txn, index, ns, req.JobID, req.TaskGroup, req.Event)
}

// UpsertScalingEvent is Batch.UpsertScalingEvent in its own transaction.
func (s *StateStore) UpsertScalingEvent(index uint64, req *structs.ScalingEventRegisterRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertScalingEvent(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// upsertScalingEventTxn adds event (the store owns it) as the newest of
// group's events, dropping the oldest beyond the limit. The row is copied,
// never changed in place.
func upsertScalingEventTxn(txn *writeTxn, index uint64, namespace, jobID, group string, event *structs.ScalingEvent) error {
	row := &structs.JobScalingEvents{Namespace: namespace, JobID: jobID, ScalingEvents: map[string][]*structs.ScalingEvent{}}
	raw, err := txn.first(TableScalingEvents, namespace, jobID)
	if err != nil {
		return err
	}
	if raw != nil {
		prev := raw.(*structs.JobScalingEvents)
		row.ScalingEvents = maps.Clone(prev.ScalingEvents)
	}
	event.CreateIndex = index
	events := append([]*structs.ScalingEvent{event}, row.ScalingEvents[group]...)
	if len(events) > structs.JobTrackedScalingEvents {
		events = events[:structs.JobTrackedScalingEvents]
	}
	row.ScalingEvents[group] = events
	row.ModifyIndex = index
	if err := txn.insert(TableScalingEvents, row); err != nil {
		return fmt.Errorf("state: inserting scaling events: %w", err)
	}
	txn.t.add(TableScalingEvents)
	return nil
}

// ScalingEventsByJob returns a job's kept scaling events, or an error
// satisfying errors.Is(err, structs.ErrNotFound) when it has none.
func (s *StateStore) ScalingEventsByJob(ws memdb.WatchSet, namespace, jobID string) (*structs.JobScalingEvents, error) {
	return firstTxn[structs.JobScalingEvents](s.db.Txn(false), ws, TableScalingEvents, "scaling events", jobID, defaultNamespace(namespace), jobID)
}

// ScalingEvents returns every job's scaling events, by namespace and job
// (snapshots write them).
func (s *StateStore) ScalingEvents(ws memdb.WatchSet) ([]*structs.JobScalingEvents, error) {
	return listTxn[structs.JobScalingEvents](s.db.Txn(false), ws, TableScalingEvents, IndexID)
}

// ScalingEventsRestore loads a job's scaling events.
func (r *StateRestore) ScalingEventsRestore(e *structs.JobScalingEvents) error {
	return r.insert(TableScalingEvents, e)
}

package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// periodicKey is a periodic job's key in the jobs table's periodic index:
// namespace and ID; "" (not indexed) for every other job, so that the
// index, and a watch on it, sees only periodic jobs.
func periodicKey(j *structs.Job) string {
	if j.Periodic == nil {
		return ""
	}
	return j.Namespace + "\x00" + j.ID
}

// PeriodicJobs returns every periodic job (enabled or not, stopped or
// not), sorted by namespace then ID. ws fires when one is written, and
// not for other jobs.
func (s *StateStore) PeriodicJobs(ws memdb.WatchSet) ([]*structs.Job, error) {
	return listTxn[structs.Job](s.db.Txn(false), ws, TableJobs, IndexPeriodic+prefixSuffix, "")
}

// PeriodicLaunchByID returns the last launch of the periodic job, or an
// error satisfying errors.Is(err, structs.ErrNotFound) when it has none.
func (s *StateStore) PeriodicLaunchByID(ws memdb.WatchSet, namespace, id string) (*structs.PeriodicLaunch, error) {
	return firstTxn[structs.PeriodicLaunch](s.db.Txn(false), ws, TablePeriodicLaunch, "periodic launch", id, defaultNamespace(namespace), id)
}

// PeriodicLaunches returns every launch row, sorted by namespace then ID.
func (s *StateStore) PeriodicLaunches(ws memdb.WatchSet) ([]*structs.PeriodicLaunch, error) {
	return listTxn[structs.PeriodicLaunch](s.db.Txn(false), ws, TablePeriodicLaunch, IndexID)
}

// LaunchPeriodicJob registers child, a job launched from a periodic job,
// with its evaluation, and records launch as the parent's last launch, in
// one transaction. A launch not later than the recorded one fails with
// code conflict and writes nothing: a run is never launched twice, even by
// a leader that has not yet learnt it was replaced.
func (s *StateStore) LaunchPeriodicJob(index uint64, child *structs.Job, eval *structs.Evaluation, launch *structs.PeriodicLaunch) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.LaunchPeriodicJob(index, child, eval, launch); err != nil {
		return err
	}
	return b.Commit()
}

// LaunchPeriodicJob is StateStore.LaunchPeriodicJob within the batch.
func (b *Batch) LaunchPeriodicJob(index uint64, child *structs.Job, eval *structs.Evaluation, launch *structs.PeriodicLaunch) error {
	b.txn.t.begin(index)
	launch.Namespace = defaultNamespace(launch.Namespace)
	raw, err := b.txn.first(TablePeriodicLaunch, launch.Namespace, launch.ID)
	if err != nil {
		return err
	}
	row := *launch
	row.CreateIndex, row.ModifyIndex = index, index
	if raw != nil {
		prev := raw.(*structs.PeriodicLaunch)
		if !launch.Launch.After(prev.Launch) {
			return structs.NewError(structs.ErrCodeConflict,
				"periodic job %q was already launched at %s (this launch: %s)", launch.ID,
				prev.Launch.UTC().Format("2006-01-02T15:04:05Z"), launch.Launch.UTC().Format("2006-01-02T15:04:05Z"))
		}
		row.CreateIndex = prev.CreateIndex
	}
	if existing, err := b.txn.first(TableJobs, defaultNamespace(child.Namespace), child.ID); err != nil {
		return err
	} else if existing != nil {
		return structs.NewError(structs.ErrCodeConflict, "job %q already exists", child.ID)
	}
	if err := b.UpsertJob(index, child, eval); err != nil {
		return err
	}
	if err := b.txn.insert(TablePeriodicLaunch, &row); err != nil {
		return fmt.Errorf("state: inserting periodic launch: %w", err)
	}
	b.txn.t.add(TablePeriodicLaunch)
	return nil
}

// deletePeriodicLaunchTxn forgets the job's last launch (on stop and
// purge, as Nomad: a job registered again starts afresh).
func deletePeriodicLaunchTxn(txn *writeTxn, namespace, id string) error {
	return deleteByIDTxn(txn, TablePeriodicLaunch, namespace, id)
}

// PeriodicLaunchRestore loads a snapshot row.
func (r *StateRestore) PeriodicLaunchRestore(l *structs.PeriodicLaunch) error {
	return r.insert(TablePeriodicLaunch, l)
}

package state

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// The job_version table keeps the last versions of every job, as Nomad's
// does: each write of the jobs table that makes a new version (register,
// stop) also writes the job here, in the same transaction, and drops the
// versions beyond the store's limit (jobVersions, the server's
// job_tracked_versions); a purge removes them all. The current version's
// row is the jobs table's object itself, so keeping it costs one row, not
// a copy.

// jobVersionIndex is the primary key of job_version: namespace, job ID
// (each NUL-terminated) and the version as 8 big-endian bytes, so a prefix
// scan of (namespace, job) lists the versions in ascending order. Exact
// lookups take (namespace, id, version uint64); prefix lookups take
// (namespace, id).
type jobVersionIndex struct{}

func (jobVersionIndex) FromObject(obj any) (bool, []byte, error) {
	j, ok := obj.(*structs.Job)
	if !ok {
		return false, nil, fmt.Errorf("state: index expects *structs.Job, got %T", obj)
	}
	if j.Namespace == "" || j.ID == "" {
		return false, nil, nil
	}
	return true, binary.BigEndian.AppendUint64(pair(j.Namespace, j.ID), j.Version), nil
}

func (jobVersionIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("state: job version index takes three arguments, got %d", len(args))
	}
	ns, id, err := twoStrings(args[:2])
	if err != nil {
		return nil, err
	}
	v, ok := args[2].(uint64)
	if !ok {
		return nil, fmt.Errorf("state: job version must be a uint64, got %T", args[2])
	}
	return binary.BigEndian.AppendUint64(pair(ns, id), v), nil
}

func (jobVersionIndex) PrefixFromArgs(args ...any) ([]byte, error) {
	ns, id, err := twoStrings(args)
	if err != nil {
		return nil, err
	}
	return pair(ns, id), nil
}

// upsertJobVersionTxn records job, just written to the jobs table, as a
// version of its job, and drops the oldest versions beyond the store's
// limit. Like Nomad, it keeps the newest stable version when that one
// would be dropped (so a revert to it stays possible), dropping the
// oldest unstable one in its place; the current version is always kept.
func upsertJobVersionTxn(txn *writeTxn, job *structs.Job) error {
	if err := txn.insert(TableJobVersions, job); err != nil {
		return fmt.Errorf("state: inserting job version: %w", err)
	}
	txn.t.add(TableJobVersions)
	all, err := listWrite[structs.Job](txn, TableJobVersions, IndexID+prefixSuffix, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	limit := max(txn.jobVersions, 1)
	if len(all) <= limit {
		return nil
	}
	slices.Reverse(all) // newest first
	keep := all[:limit:limit]
	drop := all[limit:]
	if stable := slices.IndexFunc(all, func(j *structs.Job) bool { return j.Stable }); stable >= limit && limit > 1 {
		// Keep the newest stable version in place of the oldest kept one.
		drop = append(slices.Clone(drop), keep[limit-1])
		drop = slices.DeleteFunc(drop, func(j *structs.Job) bool { return j == all[stable] })
	}
	for _, old := range drop {
		if err := txn.delete(TableJobVersions, old); err != nil {
			return fmt.Errorf("state: deleting job version: %w", err)
		}
	}
	return nil
}

// replaceJobVersionTxn makes job the row of its version when that version
// is kept (a status change copies the current job; its row follows).
func replaceJobVersionTxn(txn *writeTxn, job *structs.Job) error {
	raw, err := txn.first(TableJobVersions, job.Namespace, job.ID, job.Version)
	if err != nil || raw == nil {
		return err
	}
	if err := txn.insert(TableJobVersions, job); err != nil {
		return fmt.Errorf("state: inserting job version: %w", err)
	}
	txn.t.add(TableJobVersions)
	return nil
}

// deleteJobVersionsTxn removes every version of a purged job.
func deleteJobVersionsTxn(txn *writeTxn, namespace, id string) error {
	all, err := listWrite[structs.Job](txn, TableJobVersions, IndexID+prefixSuffix, namespace, id)
	if err != nil {
		return err
	}
	for _, j := range all {
		if err := txn.delete(TableJobVersions, j); err != nil {
			return fmt.Errorf("state: deleting job version: %w", err)
		}
	}
	if len(all) > 0 {
		txn.t.add(TableJobVersions)
	}
	return nil
}

// UpdateJobStability sets the Stable flag of one kept version of a job
// (and of the job itself when that version is the current one). A
// version that is not kept is an error satisfying errors.Is(err,
// structs.ErrNotFound); a flag already set as asked writes nothing.
func (s *StateStore) UpdateJobStability(index uint64, namespace, jobID string, version uint64, stable bool) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateJobStability(index, namespace, jobID, version, stable); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateJobStability is StateStore.UpdateJobStability within the batch.
func (b *Batch) UpdateJobStability(index uint64, namespace, jobID string, version uint64, stable bool) error {
	b.txn.t.begin(index)
	return updateJobStabilityTxn(b.txn, index, namespace, jobID, version, stable)
}

// updateJobStabilityTxn is UpdateJobStability within a write.
func updateJobStabilityTxn(txn *writeTxn, index uint64, namespace, jobID string, version uint64, stable bool) error {
	namespace = defaultNamespace(namespace)
	row, err := lookup[structs.Job](txn, TableJobVersions, "job version", fmt.Sprintf("%s version %d", jobID, version), namespace, jobID, version)
	if err != nil {
		return err
	}
	if row.Stable == stable {
		return nil
	}
	current, err := lookup[structs.Job](txn, TableJobs, "job", jobID, namespace, jobID)
	if err != nil {
		return err
	}
	updated := row.Copy()
	if current.Version == version {
		updated = current.Copy()
		updated.Stable = stable
		updated.ModifyIndex = index
		if err := txn.insert(TableJobs, updated); err != nil {
			return fmt.Errorf("state: inserting job: %w", err)
		}
		txn.t.add(TableJobs)
	}
	updated.Stable = stable
	if err := txn.insert(TableJobVersions, updated); err != nil {
		return fmt.Errorf("state: inserting job version: %w", err)
	}
	txn.t.add(TableJobVersions)
	return nil
}

// JobVersionsByID returns the kept versions of a job, newest first (none
// for an unknown job).
func (s *StateStore) JobVersionsByID(ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	out, err := listTxn[structs.Job](s.db.Txn(false), ws, TableJobVersions, IndexID+prefixSuffix, defaultNamespace(namespace), id)
	slices.Reverse(out)
	return out, err
}

// JobByIDAndVersion returns one kept version of a job, or an error
// satisfying errors.Is(err, structs.ErrNotFound).
func (s *StateStore) JobByIDAndVersion(ws memdb.WatchSet, namespace, id string, version uint64) (*structs.Job, error) {
	return firstTxn[structs.Job](s.db.Txn(false), ws, TableJobVersions, "job version",
		fmt.Sprintf("%s version %d", id, version), defaultNamespace(namespace), id, version)
}

// JobVersions returns every kept version of every job, by namespace, job
// and ascending version (snapshots write them).
func (s *StateStore) JobVersions(ws memdb.WatchSet) ([]*structs.Job, error) {
	return listTxn[structs.Job](s.db.Txn(false), ws, TableJobVersions, IndexID)
}

// JobVersionRestore loads a job version. JobRestore already recorded each
// current job as its own version; a version row read afterwards replaces
// it.
func (r *StateRestore) JobVersionRestore(j *structs.Job) error {
	return r.insert(TableJobVersions, j)
}

package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// UpsertJob registers job at index, or updates it, and writes eval (may be
// nil) in the same transaction. The caller has canonicalized job; the store
// owns it afterwards. It sets CreateIndex (kept from the stored version on
// update), ModifyIndex and JobModifyIndex to index, Version (incremented on
// every update of an existing job) and Status.
func (s *StateStore) UpsertJob(index uint64, job *structs.Job, eval *structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertJob(index, job, eval); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertJob is StateStore.UpsertJob within the batch.
func (b *Batch) UpsertJob(index uint64, job *structs.Job, eval *structs.Evaluation) error {
	b.txn.t.begin(index)
	if err := upsertJobTxn(b.txn, index, job); err != nil {
		return err
	}
	if eval == nil {
		return setJobStatusesTxn(b.txn, index, []jobRef{{id: job.NamespacedID()}})
	}
	// Writing the evaluation recomputes the status of its job, which is
	// this one when the evaluation is the job's own.
	if err := upsertEvalsTxn(b.txn, index, []*structs.Evaluation{eval}); err != nil {
		return err
	}
	if defaultNamespace(eval.Namespace) == job.Namespace && eval.JobID == job.ID {
		return nil
	}
	return setJobStatusesTxn(b.txn, index, []jobRef{{id: job.NamespacedID()}})
}

// upsertJobTxn inserts job as a new version and makes sure it has a
// summary row with an entry for every group.
func upsertJobTxn(txn *writeTxn, index uint64, job *structs.Job) error {
	job.Namespace = defaultNamespace(job.Namespace)
	existing, err := txn.first(TableJobs, job.Namespace, job.ID)
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	if existing != nil {
		prev := existing.(*structs.Job)
		job.CreateIndex = prev.CreateIndex
		job.Version = prev.Version + 1
	} else {
		job.CreateIndex = index
		job.Version = 0
	}
	job.ModifyIndex = index
	job.JobModifyIndex = index
	switch {
	case job.Stop:
		job.Status = structs.JobStatusDead
	case existing != nil:
		job.Status = existing.(*structs.Job).Status
	default:
		job.Status = structs.JobStatusPending
	}
	if err := txn.insert(TableJobs, job); err != nil {
		return fmt.Errorf("state: inserting job: %w", err)
	}
	txn.t.add(TableJobs)
	if err := upsertJobVersionTxn(txn, job); err != nil {
		return err
	}
	return ensureSummaryTxn(txn, index, job)
}

// DeregisterJob stops the job (a copy with Stop set and status dead), or
// with purge removes it; its allocations and evaluations are left for
// garbage collection. eval (may be nil) is written in the same transaction.
// submitTime, when non-zero, becomes the stopped job's SubmitTime.
func (s *StateStore) DeregisterJob(index uint64, namespace, jobID string, purge bool, submitTime int64, eval *structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeregisterJob(index, namespace, jobID, purge, submitTime, eval); err != nil {
		return err
	}
	return b.Commit()
}

// DeregisterJob is StateStore.DeregisterJob within the batch.
func (b *Batch) DeregisterJob(index uint64, namespace, jobID string, purge bool, submitTime int64, eval *structs.Evaluation) error {
	b.txn.t.begin(index)
	txn := b.txn
	namespace = defaultNamespace(namespace)
	job, err := lookup[structs.Job](txn, TableJobs, "job", jobID, namespace, jobID)
	if err != nil {
		return err
	}
	if purge {
		if err := txn.delete(TableJobs, job); err != nil {
			return fmt.Errorf("state: deleting job: %w", err)
		}
		txn.t.add(TableJobs)
		if err := deleteByIDTxn(txn, TableJobSummary, namespace, jobID); err != nil {
			return err
		}
		txn.t.add(TableJobSummary)
		if err := txn.deleteJobServices(namespace, jobID); err != nil {
			return err
		}
		if err := deleteJobVersionsTxn(txn, namespace, jobID); err != nil {
			return err
		}
		if err := deleteByIDTxn(txn, TableScalingEvents, namespace, jobID); err != nil {
			return err
		}
	} else {
		stopped := job.Copy()
		stopped.Stop = true
		stopped.Status = structs.JobStatusDead
		stopped.ModifyIndex = index
		stopped.JobModifyIndex = index
		stopped.Version = job.Version + 1
		if submitTime != 0 {
			stopped.SubmitTime = submitTime
		}
		if err := txn.insert(TableJobs, stopped); err != nil {
			return fmt.Errorf("state: inserting job: %w", err)
		}
		txn.t.add(TableJobs)
		if err := upsertJobVersionTxn(txn, stopped); err != nil {
			return err
		}
	}
	if err := deletePeriodicLaunchTxn(txn, namespace, jobID); err != nil {
		return err
	}
	if eval != nil {
		return upsertEvalsTxn(txn, index, []*structs.Evaluation{eval})
	}
	return nil
}

// setJobStatusesTxn recomputes the status of each job from its allocations
// and evaluations and writes a copy of any job whose status changed.
func setJobStatusesTxn(txn *writeTxn, index uint64, jobs []jobRef) error {
	for _, ref := range jobs {
		raw, err := txn.first(TableJobs, ref.id.Namespace, ref.id.ID)
		if err != nil {
			return fmt.Errorf("state: job lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		job := raw.(*structs.Job)
		status, err := jobStatusTxn(txn, job, ref.liveEval)
		if err != nil {
			return err
		}
		if status == job.Status {
			continue
		}
		updated := job.Copy()
		updated.Status = status
		updated.ModifyIndex = index
		if err := txn.insert(TableJobs, updated); err != nil {
			return fmt.Errorf("state: inserting job: %w", err)
		}
		txn.t.add(TableJobs)
		if err := replaceJobVersionTxn(txn, updated); err != nil {
			return err
		}
	}
	return nil
}

// jobStatusTxn derives a job's status as Nomad does: dead when stopped;
// running while any allocation is non-terminal; pending while any
// evaluation is; dead once it has allocations or evaluations and all are
// terminal; pending otherwise. liveEval says the caller knows of a
// non-terminal evaluation of the job (it just wrote one), which spares
// reading the job's evaluations.
func jobStatusTxn(txn *writeTxn, job *structs.Job, liveEval bool) (string, error) {
	if job.Stop {
		return structs.JobStatusDead, nil
	}
	if job.IsTemplate() {
		// A periodic or parameterized job runs nothing itself; it is
		// running while it can launch children (Nomad).
		return structs.JobStatusRunning, nil
	}
	hasAny, live := false, false
	err := txn.eachAlloc(job.Namespace, job.ID, func(a *structs.Allocation) bool {
		hasAny = true
		live = !a.TerminalStatus()
		return !live
	})
	if err != nil {
		return "", fmt.Errorf("state: allocs by job: %w", err)
	}
	if live {
		return structs.JobStatusRunning, nil
	}
	if liveEval {
		return structs.JobStatusPending, nil
	}
	evals, err := txn.get(TableEvals, IndexJob, job.Namespace, job.ID)
	if err != nil {
		return "", fmt.Errorf("state: evals by job: %w", err)
	}
	for raw := evals.Next(); raw != nil; raw = evals.Next() {
		hasAny = true
		if !raw.(*structs.Evaluation).TerminalStatus() {
			return structs.JobStatusPending, nil
		}
	}
	if hasAny {
		return structs.JobStatusDead, nil
	}
	return structs.JobStatusPending, nil
}

// JobByID returns the job, or an error satisfying errors.Is(err,
// structs.ErrNotFound).
func (s *StateStore) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	return firstTxn[structs.Job](s.db.Txn(false), ws, TableJobs, "job", id, defaultNamespace(namespace), id)
}

// Jobs returns every job, sorted by namespace then ID.
func (s *StateStore) Jobs(ws memdb.WatchSet) ([]*structs.Job, error) {
	return listTxn[structs.Job](s.db.Txn(false), ws, TableJobs, IndexID)
}

// JobsByIDPrefix returns the jobs of namespace whose ID starts with prefix,
// sorted by ID.
func (s *StateStore) JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Job, error) {
	return listTxn[structs.Job](s.db.Txn(false), ws, TableJobs, IndexID+prefixSuffix, defaultNamespace(namespace), prefix)
}

package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// UpsertEvals inserts or updates evaluations. For each it sets ModifyIndex
// (and CreateIndex when new), applies its QueuedAllocations to the job
// summary, and recomputes the job's status. A complete evaluation with no
// failed placements cancels the job's other blocked evaluations, as Nomad
// does: the capacity they waited for is no longer needed.
func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertEvals(index, evals); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertEvals is StateStore.UpsertEvals within the batch.
func (b *Batch) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	b.txn.t.begin(index)
	return upsertEvalsTxn(b.txn, index, evals)
}

// upsertEvalsTxn writes evals and everything that follows from them
// (summaries, blocked-eval cancellation, job statuses).
func upsertEvalsTxn(txn *writeTxn, index uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	sums := newSummaries(txn)
	var jobs jobSet
	for _, e := range evals {
		if err := upsertEvalTxn(txn, index, e); err != nil {
			return err
		}
		if err := sums.evalWritten(e); err != nil {
			return err
		}
		if e.JobID != "" {
			pos := jobs.add(e.Namespace, e.JobID)
			// Only other evaluations get cancelled below, so this one
			// stays live until the statuses are computed.
			if !e.TerminalStatus() {
				jobs.ids[pos].liveEval = true
			}
		}
	}
	txn.t.add(TableEvals)
	// Cancel blocked evaluations made redundant by a successful one (but
	// never one written by this same call).
	var batch map[string]bool
	for _, e := range evals {
		if e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) > 0 || e.JobID == "" {
			continue
		}
		if batch == nil {
			batch = make(map[string]bool, len(evals))
			for _, e := range evals {
				batch[e.ID] = true
			}
		}
		if err := cancelBlockedTxn(txn, index, e, batch); err != nil {
			return err
		}
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	return setJobStatusesTxn(txn, index, jobs.ids)
}

func upsertEvalTxn(txn *writeTxn, index uint64, e *structs.Evaluation) error {
	e.Namespace = defaultNamespace(e.Namespace)
	existing, err := txn.first(TableEvals, e.ID)
	if err != nil {
		return fmt.Errorf("state: eval lookup: %w", err)
	}
	if existing != nil {
		e.CreateIndex = existing.(*structs.Evaluation).CreateIndex
	} else {
		e.CreateIndex = index
	}
	e.ModifyIndex = index
	if err := txn.insert(TableEvals, e); err != nil {
		return fmt.Errorf("state: inserting eval %q: %w", e.ID, err)
	}
	return nil
}

// cancelBlockedTxn cancels the other blocked evaluations of done's job.
func cancelBlockedTxn(txn *writeTxn, index uint64, done *structs.Evaluation, batch map[string]bool) error {
	blocked, err := listWrite[structs.Evaluation](txn, TableEvals, IndexJob, done.Namespace, done.JobID)
	if err != nil {
		return err
	}
	for _, b := range blocked {
		if batch[b.ID] || b.Status != structs.EvalStatusBlocked {
			continue
		}
		c := b.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = fmt.Sprintf("evaluation %q successful", done.ID)
		c.ModifyIndex = index
		if err := txn.insert(TableEvals, c); err != nil {
			return fmt.Errorf("state: inserting eval %q: %w", c.ID, err)
		}
	}
	return nil
}

// DeleteEvalsAndAllocs removes evaluations and allocations (garbage
// collection). IDs that do not exist are skipped.
func (s *StateStore) DeleteEvalsAndAllocs(index uint64, evalIDs, allocIDs []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteEvalsAndAllocs(index, evalIDs, allocIDs); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteEvalsAndAllocs is StateStore.DeleteEvalsAndAllocs within the batch.
func (b *Batch) DeleteEvalsAndAllocs(index uint64, evalIDs, allocIDs []string) error {
	b.txn.t.begin(index)
	for _, id := range evalIDs {
		if err := deleteByIDTxn(b.txn, TableEvals, id); err != nil {
			return err
		}
	}
	for _, id := range allocIDs {
		a, err := b.txn.alloc(id)
		if err != nil {
			return err
		}
		if a == nil {
			continue
		}
		if err := b.txn.deleteAlloc(a); err != nil {
			return err
		}
		b.txn.t.add(TableAllocs)
	}
	return nil
}

// deleteByIDTxn deletes the row of table with primary key args, if any.
func deleteByIDTxn(txn *writeTxn, table string, args ...any) error {
	raw, err := txn.first(table, args...)
	if err != nil || raw == nil {
		return err
	}
	if err := txn.delete(table, raw); err != nil {
		return fmt.Errorf("state: deleting %s row %v: %w", table, args, err)
	}
	txn.t.add(table)
	return nil
}

// EvalByID returns the evaluation, or an error satisfying errors.Is(err,
// structs.ErrNotFound).
func (s *StateStore) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	return firstTxn[structs.Evaluation](s.db.Txn(false), ws, TableEvals, "evaluation", id, id)
}

// Evals returns every evaluation, sorted by ID.
func (s *StateStore) Evals(ws memdb.WatchSet) ([]*structs.Evaluation, error) {
	return listTxn[structs.Evaluation](s.db.Txn(false), ws, TableEvals, IndexID)
}

// EvalsByIDPrefix returns the evaluations whose ID starts with prefix.
func (s *StateStore) EvalsByIDPrefix(ws memdb.WatchSet, prefix string) ([]*structs.Evaluation, error) {
	return listTxn[structs.Evaluation](s.db.Txn(false), ws, TableEvals, IndexID+prefixSuffix, prefix)
}

// EvalsByJob returns the job's evaluations, sorted by ID.
func (s *StateStore) EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error) {
	return listTxn[structs.Evaluation](s.db.Txn(false), ws, TableEvals, IndexJob, defaultNamespace(namespace), jobID)
}

// EvalsByStatus returns the evaluations with the given status, sorted by
// ID. It reads every evaluation (there is no index by status: it would
// cost every evaluation write and restore more than this rare read, used
// when a leader rebuilds its queues, saves), and wakes ws on any change to
// the evaluations.
func (s *StateStore) EvalsByStatus(ws memdb.WatchSet, status string) ([]*structs.Evaluation, error) {
	iter, err := s.db.Txn(false).Get(TableEvals, IndexID)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s: %w", TableEvals, err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if e := raw.(*structs.Evaluation); e.Status == status {
			out = append(out, e)
		}
	}
	return out, nil
}

package state

import (
	"fmt"
	"maps"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// JobSummary returns the allocation counts of a job, or an error satisfying
// errors.Is(err, structs.ErrNotFound).
func (s *StateStore) JobSummary(ws memdb.WatchSet, namespace, id string) (*structs.JobSummary, error) {
	return firstTxn[structs.JobSummary](s.db.Txn(false), ws, TableJobSummary, "job summary", id, defaultNamespace(namespace), id)
}

// JobSummaries returns every job summary, sorted by namespace then job ID.
func (s *StateStore) JobSummaries(ws memdb.WatchSet) ([]*structs.JobSummary, error) {
	return listTxn[structs.JobSummary](s.db.Txn(false), ws, TableJobSummary, IndexID)
}

func copySummary(js *structs.JobSummary) *structs.JobSummary {
	c := *js
	c.Summary = maps.Clone(js.Summary)
	if c.Summary == nil {
		c.Summary = map[string]structs.TaskGroupSummary{}
	}
	if js.Children != nil {
		ch := *js.Children
		c.Children = &ch
	}
	return &c
}

// ensureSummaryTxn creates the job's summary row, or adds entries for
// groups the stored summary lacks.
func ensureSummaryTxn(txn *writeTxn, index uint64, job *structs.Job) error {
	raw, err := txn.first(TableJobSummary, job.Namespace, job.ID)
	if err != nil {
		return fmt.Errorf("state: job summary lookup: %w", err)
	}
	var js *structs.JobSummary
	if raw == nil {
		js = &structs.JobSummary{JobID: job.ID, Namespace: job.Namespace,
			Summary: map[string]structs.TaskGroupSummary{}, CreateIndex: index}
		// A job registered again after a purge may still have the old
		// incarnation's allocations: the new summary counts them, as it
		// would have had it never gone.
		err := txn.eachAlloc(job.Namespace, job.ID, func(a *structs.Allocation) bool {
			tg := js.Summary[a.TaskGroup]
			countStatus(&tg, a.ClientStatus, 1)
			js.Summary[a.TaskGroup] = tg
			return true
		})
		if err != nil {
			return err
		}
	} else {
		stored := raw.(*structs.JobSummary)
		missing := false
		for _, tg := range job.TaskGroups {
			if _, ok := stored.Summary[tg.Name]; !ok {
				missing = true
			}
		}
		if !missing {
			return nil
		}
		js = copySummary(stored)
	}
	for _, tg := range job.TaskGroups {
		if _, ok := js.Summary[tg.Name]; !ok {
			js.Summary[tg.Name] = structs.TaskGroupSummary{}
		}
	}
	js.ModifyIndex = index
	if err := txn.insert(TableJobSummary, js); err != nil {
		return fmt.Errorf("state: inserting job summary: %w", err)
	}
	txn.t.add(TableJobSummary)
	return nil
}

// summaries batches summary changes within one write: each job's row is
// copied once, changed in memory and inserted once by flush, however many
// allocations the write touches. Its maps are made on first use: most
// evaluation writes change no summary.
type summaries struct {
	txn   *writeTxn
	cache map[structs.NamespacedID]*structs.JobSummary // nil value: job has no summary
	dirty map[structs.NamespacedID]bool
}

func newSummaries(txn *writeTxn) *summaries { return &summaries{txn: txn} }

func (m *summaries) markDirty(id structs.NamespacedID) {
	if m.dirty == nil {
		m.dirty = map[structs.NamespacedID]bool{}
	}
	m.dirty[id] = true
}

// get returns a writable copy of the job's summary, or nil when the job has
// none (purged jobs keep allocations but not summaries).
func (m *summaries) get(namespace, jobID string) (*structs.JobSummary, error) {
	id := structs.NamespacedID{Namespace: namespace, ID: jobID}
	if js, ok := m.cache[id]; ok {
		return js, nil
	}
	raw, err := m.txn.first(TableJobSummary, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("state: job summary lookup: %w", err)
	}
	var js *structs.JobSummary
	if raw != nil {
		js = copySummary(raw.(*structs.JobSummary))
	}
	if m.cache == nil {
		m.cache = map[structs.NamespacedID]*structs.JobSummary{}
	}
	m.cache[id] = js
	return js, nil
}

// allocChanged accounts for an allocation moving from prev (nil when new)
// to next. Deleting an allocation (garbage collection) leaves the counts
// alone, as Nomad does.
func (m *summaries) allocChanged(prev, next *structs.Allocation) error {
	a := next
	js, err := m.get(a.Namespace, a.JobID)
	if err != nil || js == nil {
		return err
	}
	tg := js.Summary[a.TaskGroup]
	if prev == nil {
		// A new placement: it was queued and is now starting.
		if tg.Queued > 0 {
			tg.Queued--
		}
	} else {
		if prev.ClientStatus == next.ClientStatus {
			return nil
		}
		countStatus(&tg, prev.ClientStatus, -1)
	}
	countStatus(&tg, next.ClientStatus, 1)
	js.Summary[a.TaskGroup] = tg
	m.markDirty(structs.NamespacedID{Namespace: js.Namespace, ID: js.JobID})
	return nil
}

// evalWritten sets the queued counts an evaluation reports.
func (m *summaries) evalWritten(e *structs.Evaluation) error {
	if len(e.QueuedAllocations) == 0 || e.JobID == "" {
		return nil
	}
	js, err := m.get(e.Namespace, e.JobID)
	if err != nil || js == nil {
		return err
	}
	for name, n := range e.QueuedAllocations {
		tg, ok := js.Summary[name]
		if !ok || tg.Queued == n {
			continue
		}
		tg.Queued = n
		js.Summary[name] = tg
		m.markDirty(structs.NamespacedID{Namespace: js.Namespace, ID: js.JobID})
	}
	return nil
}

func countStatus(tg *structs.TaskGroupSummary, clientStatus string, delta int) {
	var c *int
	switch clientStatus {
	case structs.AllocClientStatusPending, "":
		c = &tg.Starting
	case structs.AllocClientStatusRunning:
		c = &tg.Running
	case structs.AllocClientStatusComplete:
		c = &tg.Complete
	case structs.AllocClientStatusFailed:
		c = &tg.Failed
	case structs.AllocClientStatusLost:
		c = &tg.Lost
	case structs.AllocClientStatusUnknown:
		c = &tg.Unknown
	default:
		return
	}
	*c += delta
	if *c < 0 {
		*c = 0
	}
}

// flush inserts every changed summary at index.
func (m *summaries) flush(index uint64) error {
	for id := range m.dirty {
		js := m.cache[id]
		js.ModifyIndex = index
		if err := m.txn.insert(TableJobSummary, js); err != nil {
			return fmt.Errorf("state: inserting job summary: %w", err)
		}
		m.txn.t.add(TableJobSummary)
	}
	return nil
}

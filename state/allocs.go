package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// UpsertPlanResults commits one plan in one transaction:
//
//   - every allocation in AllocsUpdated (and any existing allocation it
//     updates in place) points at one job: the stored job when req.Job is
//     nil or is the same version (JobModifyIndex) as the stored one, else
//     req.Job itself, shared by the whole plan. req.Job is never written to
//     the jobs table: a plan must not roll a job back to the version it was
//     planned for;
//   - AllocsStopped carry only changed fields; they are merged onto copies
//     of the stored allocations (missing ones are skipped);
//   - new allocations get CreateIndex, ModifyIndex and AllocModifyIndex =
//     index; updated ones keep CreateIndex and the client-owned fields;
//   - req.Evals are written, the plan's evaluation (EvalID) gets
//     ModifyIndex = index, and job summaries and statuses are updated.
//
// The cost is linear in the number of allocations: the job is looked up
// once per plan and each summary row is written once.
func (s *StateStore) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertPlanResults(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertPlanResults is StateStore.UpsertPlanResults within the batch.
func (b *Batch) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error {
	if err := req.Expand(); err != nil {
		return err
	}
	b.txn.t.begin(index)
	txn := b.txn
	sums := newSummaries(txn)
	var jobs jobSet

	planJob, err := planJobTxn(txn, req.Job)
	if err != nil {
		return err
	}
	// The plan's deployment goes first: its allocations count in it.
	var deltas deploymentDeltas
	if req.Deployment != nil {
		if err := upsertPlanDeploymentTxn(txn, index, req.Deployment); err != nil {
			return err
		}
	}
	for _, u := range req.DeploymentUpdates {
		if err := updateDeploymentStatusTxn(txn, index, u, time.Unix(0, req.UpdatedAt)); err != nil {
			return err
		}
	}
	for _, diff := range req.AllocsStopped {
		if err := stopAllocTxn(txn, sums, index, req.UpdatedAt, diff); err != nil {
			return err
		}
		jobs.add(diff.Namespace, diff.JobID)
	}
	for _, a := range req.AllocsUpdated {
		if a.Job == nil {
			a.Job = planJob
		}
		prev, err := upsertAllocTxn(txn, sums, index, req.UpdatedAt, a, true)
		if err != nil {
			return err
		}
		if a.DeploymentID != "" {
			deltas.allocChanged(prev, a)
		}
		jobs.add(a.Namespace, a.JobID)
	}
	if err := deltas.flush(txn, index, time.Time{}); err != nil {
		return err
	}
	if len(req.AllocsStopped)+len(req.AllocsUpdated) > 0 {
		txn.t.add(TableAllocs)
	}
	if req.EvalID != "" {
		if err := touchEvalTxn(txn, index, req.EvalID); err != nil {
			return err
		}
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	if err := upsertEvalsTxn(txn, index, req.Evals); err != nil {
		return err
	}
	return setJobStatusesTxn(txn, index, jobs.ids)
}

// planJobTxn returns the job a plan's allocations should point at: the
// stored job when it is the version planned for, else the plan's own.
func planJobTxn(txn *writeTxn, job *structs.Job) (*structs.Job, error) {
	if job == nil {
		return nil, nil
	}
	job.Namespace = defaultNamespace(job.Namespace)
	raw, err := txn.first(TableJobs, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("state: job lookup: %w", err)
	}
	if raw != nil {
		stored := raw.(*structs.Job)
		if stored.JobModifyIndex == job.JobModifyIndex {
			return stored, nil
		}
	}
	return job, nil
}

// stopAllocTxn merges a stop (DesiredStatus, DesiredDescription, and
// ClientStatus, FollowupEvalID, ModifyTime when set) onto a copy of the
// stored allocation.
func stopAllocTxn(txn *writeTxn, sums *summaries, index uint64, updatedAt int64, diff *structs.Allocation) error {
	prev, err := txn.alloc(diff.ID)
	if err != nil || prev == nil {
		return err
	}
	a := prev.Copy()
	a.DesiredStatus = diff.DesiredStatus
	if a.DesiredStatus == "" {
		a.DesiredStatus = structs.AllocDesiredStatusStop
	}
	a.DesiredDescription = diff.DesiredDescription
	if diff.ClientStatus != "" {
		a.ClientStatus = diff.ClientStatus
	}
	if diff.FollowupEvalID != "" {
		a.FollowupEvalID = diff.FollowupEvalID
	}
	if diff.PreemptedByAllocation != "" {
		a.PreemptedByAllocation = diff.PreemptedByAllocation
	}
	a.ModifyTime = diff.ModifyTime
	if a.ModifyTime == 0 && updatedAt != 0 {
		a.ModifyTime = updatedAt
	}
	a.ModifyIndex = index
	a.AllocModifyIndex = index
	if err := txn.insertAlloc(prev, a); err != nil {
		return err
	}
	return sums.allocChanged(prev, a)
}

// upsertAllocTxn inserts a new allocation or replaces a stored one. With
// keepClient, an update keeps the stored client-owned fields (status,
// description, task states) unless it marks the allocation lost or
// unknown, as the scheduler does for allocations on down nodes. A nil Job
// is filled from the stored allocation or the stored job.
func upsertAllocTxn(txn *writeTxn, sums *summaries, index uint64, updatedAt int64, a *structs.Allocation, keepClient bool) (*structs.Allocation, error) {
	a.Namespace = defaultNamespace(a.Namespace)
	prev, err := txn.alloc(a.ID)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		a.CreateIndex = prev.CreateIndex
		if a.CreateTime == 0 {
			a.CreateTime = prev.CreateTime
		}
		if keepClient {
			a.TaskStates = prev.TaskStates
			// The client's health report stands while the allocation
			// stays in the same deployment.
			if a.DeploymentStatus == nil && a.DeploymentID == prev.DeploymentID {
				a.DeploymentStatus = prev.DeploymentStatus
			}
			if a.ClientStatus != structs.AllocClientStatusLost && a.ClientStatus != structs.AllocClientStatusUnknown {
				a.ClientStatus = prev.ClientStatus
				a.ClientDescription = prev.ClientDescription
			}
		}
		if a.Job == nil {
			a.Job = prev.Job
		}
	} else {
		a.CreateIndex = index
		if a.ClientStatus == "" {
			a.ClientStatus = structs.AllocClientStatusPending
		}
		if a.CreateTime == 0 {
			a.CreateTime = updatedAt
		}
	}
	if a.Job == nil {
		job, err := lookup[structs.Job](txn, TableJobs, "job", a.JobID, a.Namespace, a.JobID)
		if err != nil {
			return nil, fmt.Errorf("state: allocation %q has no job: %w", a.ID, err)
		}
		a.Job = job
	}
	if a.ModifyTime == 0 {
		a.ModifyTime = updatedAt
	}
	a.ModifyIndex = index
	a.AllocModifyIndex = index
	if err := txn.insertAlloc(prev, a); err != nil {
		return nil, err
	}
	return prev, sums.allocChanged(prev, a)
}

// touchEvalTxn sets the evaluation's ModifyIndex so that watchers see the
// plan that was applied for it. A missing evaluation is skipped.
func touchEvalTxn(txn *writeTxn, index uint64, evalID string) error {
	raw, err := txn.first(TableEvals, evalID)
	if err != nil {
		return fmt.Errorf("state: eval lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	e := raw.(*structs.Evaluation).Copy()
	e.ModifyIndex = index
	if err := txn.insert(TableEvals, e); err != nil {
		return fmt.Errorf("state: inserting eval %q: %w", e.ID, err)
	}
	txn.t.add(TableEvals)
	return nil
}

// UpdateAllocsFromClient merges what clients report (ClientStatus,
// ClientDescription, and TaskStates and ModifyTime when set) onto copies of
// the stored allocations; unknown allocations are skipped. evals (for
// failed allocations that may be rescheduled) are written in the same
// transaction.
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation, evals []*structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateAllocsFromClient(index, allocs, evals); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateAllocsFromClient is StateStore.UpdateAllocsFromClient within the
// batch.
func (b *Batch) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation, evals []*structs.Evaluation) error {
	b.txn.t.begin(index)
	txn := b.txn
	sums := newSummaries(txn)
	var jobs jobSet
	var deltas deploymentDeltas
	var healthAt time.Time
	for _, upd := range allocs {
		prev, err := txn.alloc(upd.ID)
		if err != nil {
			return err
		}
		if prev == nil {
			continue
		}
		// A shallow copy: stored objects are never mutated, so the new
		// version may share everything the client does not own (the
		// resources, metrics and job of the old one).
		c := *prev
		a := &c
		a.ClientStatus = upd.ClientStatus
		a.ClientDescription = upd.ClientDescription
		if !upd.TaskStates.IsZero() {
			a.TaskStates = upd.TaskStates
		}
		if upd.ModifyTime != 0 {
			a.ModifyTime = upd.ModifyTime
		}
		a.ModifyIndex = index
		// The client's health report, for an allocation whose health is
		// not set yet (Nomad's rule: the client reports it once per
		// deployment; an allocation outside a deployment reports its
		// health by the migrate block, which drains wait for).
		if upd.DeploymentStatus.HasHealth() && !prev.DeploymentStatus.HasHealth() {
			ds := prev.DeploymentStatus.Copy()
			if ds == nil {
				ds = &structs.AllocDeploymentStatus{}
			}
			healthy := *upd.DeploymentStatus.Healthy
			ds.Healthy, ds.Timestamp, ds.ModifyIndex = &healthy, upd.DeploymentStatus.Timestamp, index
			a.DeploymentStatus = ds
			deltas.allocChanged(prev, a)
			if ts := upd.DeploymentStatus.Timestamp; a.DeploymentID != "" && ts.After(healthAt) {
				healthAt = ts
			}
		}
		if err := txn.insertAlloc(prev, a); err != nil {
			return err
		}
		txn.t.add(TableAllocs)
		if err := sums.allocChanged(prev, a); err != nil {
			return err
		}
		jobs.add(a.Namespace, a.JobID)
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	if err := deltas.flush(txn, index, healthAt); err != nil {
		return err
	}
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	return setJobStatusesTxn(txn, index, jobs.ids)
}

// UpdateAllocsDesiredTransition merges each transition onto a copy of the
// stored allocation (only its non-nil fields; unknown IDs are skipped),
// sets ModifyTime to updatedAt when non-zero, and writes evals in the same
// transaction. Merging at apply time means a concurrent write to the
// allocation (a plan that stopped it) is never undone.
func (s *StateStore) UpdateAllocsDesiredTransition(index uint64, allocs map[string]*structs.DesiredTransition, updatedAt int64, evals []*structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateAllocsDesiredTransition(index, allocs, updatedAt, evals); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateAllocsDesiredTransition is StateStore.UpdateAllocsDesiredTransition
// within the batch.
func (b *Batch) UpdateAllocsDesiredTransition(index uint64, allocs map[string]*structs.DesiredTransition, updatedAt int64, evals []*structs.Evaluation) error {
	b.txn.t.begin(index)
	txn := b.txn
	ids := make([]string, 0, len(allocs))
	for id := range allocs {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a deterministic write order
	for _, id := range ids {
		prev, err := txn.alloc(id)
		if err != nil {
			return err
		}
		if prev == nil {
			continue
		}
		a := prev.Copy()
		a.DesiredTransition.Merge(allocs[id])
		if updatedAt != 0 {
			a.ModifyTime = updatedAt
		}
		a.ModifyIndex = index
		a.AllocModifyIndex = index
		if err := txn.insertAlloc(prev, a); err != nil {
			return err
		}
		txn.t.add(TableAllocs)
	}
	return upsertEvalsTxn(txn, index, evals)
}

// UpsertAllocs writes allocations as given (tests and the scheduler
// harness use it): an update keeps only the stored CreateIndex (and Job
// when nil). A nil Job on a new allocation is filled from the jobs table;
// if the job does not exist either, nothing is written.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertAllocs(index, allocs); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertAllocs is StateStore.UpsertAllocs within the batch.
func (b *Batch) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	b.txn.t.begin(index)
	txn := b.txn
	sums := newSummaries(txn)
	var jobs jobSet
	var deltas deploymentDeltas
	for _, a := range allocs {
		prev, err := upsertAllocTxn(txn, sums, index, 0, a, false)
		if err != nil {
			return err
		}
		if a.DeploymentID != "" {
			deltas.allocChanged(prev, a)
		}
		jobs.add(a.Namespace, a.JobID)
	}
	if len(allocs) > 0 {
		txn.t.add(TableAllocs)
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	if err := deltas.flush(txn, index, time.Time{}); err != nil {
		return err
	}
	return setJobStatusesTxn(txn, index, jobs.ids)
}

// jobSet collects the distinct jobs a write touched, in first-seen order,
// for setJobStatusesTxn. Most writes touch one or a few jobs, so it
// searches a slice until it holds more than jobSetScan jobs and only then
// builds a map. The zero value is ready.
type jobSet struct {
	ids  []jobRef
	seen map[structs.NamespacedID]int // position in ids
}

// jobRef is a job whose status a write must recompute.
type jobRef struct {
	id structs.NamespacedID
	// liveEval: the write stored a non-terminal evaluation of the job.
	liveEval bool
}

const jobSetScan = 8

// add records the job and returns its position in j.ids.
func (j *jobSet) add(namespace, id string) int {
	k := structs.NamespacedID{Namespace: defaultNamespace(namespace), ID: id}
	if j.seen != nil {
		if pos, ok := j.seen[k]; ok {
			return pos
		}
		j.seen[k] = len(j.ids)
		j.ids = append(j.ids, jobRef{id: k})
		return len(j.ids) - 1
	}
	for pos, have := range j.ids {
		if have.id == k {
			return pos
		}
	}
	j.ids = append(j.ids, jobRef{id: k})
	if len(j.ids) > jobSetScan {
		j.seen = make(map[structs.NamespacedID]int, 2*len(j.ids))
		for pos, have := range j.ids {
			j.seen[have.id] = pos
		}
	}
	return len(j.ids) - 1
}

// AllocByID returns the allocation, or an error satisfying errors.Is(err,
// structs.ErrNotFound). ws wakes when it changes, appears or goes.
func (s *StateStore) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	a, found, err := s.LookupAlloc(ws, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", id)
	}
	return a, nil
}

// LookupAlloc returns the allocation and true, or false when there is
// none. Unlike AllocByID a miss builds no error, for callers that probe
// many IDs of which most are new (the plan applier).
func (s *StateStore) LookupAlloc(ws memdb.WatchSet, id string) (*structs.Allocation, bool, error) {
	t, err := s.watchedTables(ws, allocWatchKey(id))
	if err != nil {
		return nil, false, err
	}
	a, ok := t.byID.Get(id)
	return a, ok, nil
}

// Allocs returns every allocation, sorted by ID. ws wakes on any change.
func (s *StateStore) Allocs(ws memdb.WatchSet) ([]*structs.Allocation, error) {
	return s.AllocsByIDPrefix(ws, "")
}

// AllocsByIDPrefix returns the allocations whose ID starts with prefix,
// sorted by ID. ws wakes when any allocation changes.
func (s *StateStore) AllocsByIDPrefix(ws memdb.WatchSet, prefix string) ([]*structs.Allocation, error) {
	t, ch, err := s.tables(ws)
	if err != nil {
		return nil, err
	}
	ws.Add(ch)
	var out []*structs.Allocation
	t.byID.AscendPrefix(prefix, func(_ string, a *structs.Allocation) bool {
		out = append(out, a)
		return true
	})
	return out, nil
}

// AllocsByJob returns the job's allocations, sorted by ID. ws wakes when
// one is added, removed or changed.
func (s *StateStore) AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error) {
	namespace = defaultNamespace(namespace)
	t, err := s.watchedTables(ws, jobWatchKey(namespace, jobID))
	if err != nil {
		return nil, err
	}
	return allocsByJobTxn(t, nil, namespace, jobID)
}

// AllocsByNode returns the node's allocations, sorted by ID. ws wakes
// when one is added, removed or changed.
func (s *StateStore) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	t, err := s.watchedTables(ws, nodeWatchKey(nodeID))
	if err != nil {
		return nil, err
	}
	return allocsByNode(t, nodeID)
}

// AllocsByEval returns the allocations whose EvalID is the evaluation's,
// sorted by ID; none when the evaluation is unknown. Allocations have no
// index by evaluation (every allocation write would pay for it, and only
// this read needs it): they are found among the evaluation's job's. ws
// wakes when the evaluation changes or any allocation of its job does
// (an in-place update may give one this evaluation's ID).
func (s *StateStore) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableEvals, IndexID, evalID)
	if err != nil {
		return nil, fmt.Errorf("state: evaluation lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	eval := raw.(*structs.Evaluation)
	// The evaluation's job never changes, so its allocations may be read
	// from a later state than the evaluation: the watch is registered
	// first.
	namespace := defaultNamespace(eval.Namespace)
	t, err := s.watchedTables(ws, jobWatchKey(namespace, eval.JobID))
	if err != nil {
		return nil, err
	}
	return allocsByJobTxn(t, func(a *structs.Allocation) bool { return a.EvalID == evalID }, namespace, eval.JobID)
}

// WaitingAllocs calls fn with each allocation placed and not yet started
// (on a node, desired status run, client status pending), job by job,
// until fn returns false. No index is kept for it, so allocation writes
// pay nothing: the job summaries, which count each group's starting
// allocations, name the jobs to read, and only those jobs' allocations
// are walked. Its cost is the number of jobs plus the allocations of the
// jobs with work starting. ws wakes when any allocation or summary
// changes. fn must not modify the allocations.
func (s *StateStore) WaitingAllocs(ws memdb.WatchSet, fn func(*structs.Allocation) bool) error {
	txn := s.db.Txn(false)
	t, ch, err := allocTablesOf(txn)
	if err != nil {
		return err
	}
	ws.Add(ch)
	sums, err := listTxn[structs.JobSummary](txn, ws, TableJobSummary, IndexID)
	if err != nil {
		return err
	}
	for _, js := range sums {
		left := starting(js) // the walk ends once that many are found
		if left == 0 {
			continue
		}
		more := true
		err := eachJobAlloc(t.byJob, t.byID, js.Namespace, js.JobID, func(a *structs.Allocation) bool {
			if waitingAlloc(a) {
				more = fn(a)
				left--
			}
			return more && left > 0
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// starting is the number of the job's allocations its clients have not
// started (at least its waiting ones).
func starting(js *structs.JobSummary) int {
	n := 0
	for _, tg := range js.Summary {
		n += tg.Starting
	}
	return n
}

// waitingAlloc reports whether a is placed and not yet started: on a node,
// meant to run, and still pending on its client.
func waitingAlloc(a *structs.Allocation) bool {
	return a != nil && a.NodeID != "" && a.ClientStatus == structs.AllocClientStatusPending &&
		a.DesiredStatus == structs.AllocDesiredStatusRun
}

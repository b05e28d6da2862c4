package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// The deployment table holds deployments (structs/deployment.go) by ID and
// by (namespace, job). A plan writes the deployment it creates or updates
// with its allocations; clients' health reports and the deployment
// endpoints (status, promotion, allocation health) change it after. The
// counts of a deployment's groups (placed, healthy, unhealthy) follow its
// allocations: every write of an allocation that names a deployment
// updates them in the same transaction, as Nomad's store does.

// deploymentKeyLen is the length of a deployment's primary key, which
// memdb appends to the job index's keys.
func deploymentKeyLen(d *structs.Deployment) int { return len(d.ID) + 1 }

// upsertDeploymentTxn inserts d (the store owns it from now on), keeping
// the stored one's CreateIndex. A deployment that turns successful marks
// its job version stable in the same write, as Nomad's store does (a
// version no longer kept is skipped).
func upsertDeploymentTxn(txn *writeTxn, index uint64, d *structs.Deployment) error {
	d.Namespace = defaultNamespace(d.Namespace)
	raw, err := txn.first(TableDeployments, d.ID)
	if err != nil {
		return err
	}
	wasSuccessful := false
	if raw != nil {
		prev := raw.(*structs.Deployment)
		d.CreateIndex = prev.CreateIndex
		wasSuccessful = prev.Status == structs.DeploymentStatusSuccessful
	} else {
		d.CreateIndex = index
	}
	if d.Status == structs.DeploymentStatusSuccessful && !wasSuccessful {
		err := updateJobStabilityTxn(txn, index, d.Namespace, d.JobID, d.JobVersion, true)
		if err != nil && structs.CodeOf(err) != structs.ErrCodeNotFound {
			return err
		}
	}
	d.ModifyIndex = index
	if err := txn.insert(TableDeployments, d); err != nil {
		return fmt.Errorf("state: inserting deployment %q: %w", d.ID, err)
	}
	txn.t.add(TableDeployments)
	return nil
}

// upsertPlanDeploymentTxn writes the deployment a plan carries. The plan
// was made from an older state than the one it is applied to, so over a
// stored deployment it brings only what the scheduler owns (new groups,
// desired counts, placed canaries, and success of a running deployment);
// what changed meanwhile stays: the counts (allocation writes keep them),
// a promotion, a later progress deadline, and any other status (a
// failure, a pause, a cancellation is never undone by a stale plan).
func upsertPlanDeploymentTxn(txn *writeTxn, index uint64, d *structs.Deployment) error {
	raw, err := txn.first(TableDeployments, d.ID)
	if err != nil {
		return err
	}
	if raw != nil {
		mergePlanDeployment(raw.(*structs.Deployment), d)
	}
	return upsertDeploymentTxn(txn, index, d)
}

// mergePlanDeployment keeps, on d (a plan's copy, owned by the caller),
// what stored (the deployment as stored now) has newer.
func mergePlanDeployment(stored, d *structs.Deployment) {
	if stored.Status != structs.DeploymentStatusRunning || d.Status != structs.DeploymentStatusSuccessful {
		d.Status, d.StatusDescription = stored.Status, stored.StatusDescription
	}
	for name, g := range d.TaskGroups {
		sg := stored.TaskGroups[name]
		if sg == nil || g == nil {
			continue
		}
		g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs = sg.PlacedAllocs, sg.HealthyAllocs, sg.UnhealthyAllocs
		g.Promoted = g.Promoted || sg.Promoted
		if sg.RequireProgressBy.After(g.RequireProgressBy) {
			g.RequireProgressBy = sg.RequireProgressBy
		}
		for _, id := range sg.PlacedCanaries {
			if !slices.Contains(g.PlacedCanaries, id) {
				g.PlacedCanaries = append(g.PlacedCanaries, id)
			}
		}
	}
	for name, sg := range stored.TaskGroups {
		if _, ok := d.TaskGroups[name]; !ok {
			d.TaskGroups[name] = sg.Copy()
		}
	}
}

// UpsertDeployment writes a deployment (tests and tools; the servers write
// them with plans).
func (s *StateStore) UpsertDeployment(index uint64, d *structs.Deployment) error {
	b := s.Batch()
	defer b.Abort()
	b.txn.t.begin(index)
	if err := upsertDeploymentTxn(b.txn, index, d); err != nil {
		return err
	}
	return b.Commit()
}

// deploymentTxn returns a copy of the stored deployment id, or a
// not-found error.
func deploymentTxn(txn *writeTxn, id string) (*structs.Deployment, error) {
	d, err := lookup[structs.Deployment](txn, TableDeployments, "deployment", id, id)
	if err != nil {
		return nil, err
	}
	return d.Copy(), nil
}

// updateDeploymentStatusTxn sets a deployment's status. A deployment no
// longer stored is skipped (a plan may name one a purge removed).
func updateDeploymentStatusTxn(txn *writeTxn, index uint64, u *structs.DeploymentStatusUpdate, now time.Time) error {
	d, err := deploymentTxn(txn, u.DeploymentID)
	if structs.CodeOf(err) == structs.ErrCodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	d.Status, d.StatusDescription = u.Status, u.StatusDescription
	if !now.IsZero() {
		d.ModifyTime = now.UnixNano()
	}
	return upsertDeploymentTxn(txn, index, d)
}

// UpdateDeploymentStatus applies a deployment's status change: the job it
// reverts to (as a new version) and its evaluation first, then the status.
func (b *Batch) UpdateDeploymentStatus(index uint64, req *structs.DeploymentStatusUpdateRequest, now time.Time) error {
	b.txn.t.begin(index)
	if req.DeploymentUpdate == nil {
		return structs.NewError(structs.ErrCodeInvalid, "deployment status update without an update")
	}
	if _, err := lookup[structs.Deployment](b.txn, TableDeployments, "deployment", req.DeploymentUpdate.DeploymentID, req.DeploymentUpdate.DeploymentID); err != nil {
		return err
	}
	if err := b.upsertJobAndEval(index, req.Job, req.Eval); err != nil {
		return err
	}
	return updateDeploymentStatusTxn(b.txn, index, req.DeploymentUpdate, now)
}

// upsertJobAndEval writes a reverted job with its evaluation, or the
// evaluation alone; either may be nil.
func (b *Batch) upsertJobAndEval(index uint64, job *structs.Job, eval *structs.Evaluation) error {
	switch {
	case job != nil:
		return b.UpsertJob(index, job, eval)
	case eval != nil:
		return b.UpsertEvals(index, []*structs.Evaluation{eval})
	}
	return nil
}

// UpdateDeploymentPromotion promotes the canaries of the named groups (or
// of all groups) of a running deployment, which must each have as many
// healthy canaries as they want, and writes the evaluation that places
// the rest. The promoted allocations stop being canaries. Errors are
// typed: not found, or invalid (not running, unknown group, canaries not
// healthy), and nothing is written.
func (b *Batch) UpdateDeploymentPromotion(index uint64, req *structs.ApplyDeploymentPromoteRequest, now time.Time) error {
	b.txn.t.begin(index)
	txn := b.txn
	d, err := deploymentTxn(txn, req.DeploymentID)
	if err != nil {
		return err
	}
	if !d.Active() {
		return structs.NewError(structs.ErrCodeInvalid, "can't promote terminal deployment: status %q", d.Status)
	}
	groups, err := promotedGroups(d, req)
	if err != nil {
		return err
	}
	var promoted []*structs.Allocation
	for _, name := range groups {
		g := d.TaskGroups[name]
		healthy := 0
		for _, id := range g.PlacedCanaries {
			a, err := txn.alloc(id)
			if err != nil {
				return err
			}
			if a == nil || a.DeploymentID != d.ID || !a.DeploymentStatus.IsHealthy() || a.TerminalStatus() {
				continue
			}
			healthy++
			promoted = append(promoted, a)
		}
		if healthy < g.DesiredCanaries {
			return structs.NewError(structs.ErrCodeInvalid, "Task group %q has %d/%d healthy allocations", name, healthy, g.DesiredCanaries)
		}
		g.Promoted = true
	}
	if d.StatusDescription == structs.DeploymentStatusDescriptionRunningNeedsPromotion ||
		d.StatusDescription == structs.DeploymentStatusDescriptionRunningAutoPromotion {
		d.StatusDescription = structs.DeploymentStatusDescriptionRunning
	}
	if !now.IsZero() {
		d.ModifyTime = now.UnixNano()
	}
	if err := upsertDeploymentTxn(txn, index, d); err != nil {
		return err
	}
	sums := newSummaries(txn)
	for _, prev := range promoted {
		a := prev.Copy()
		a.DeploymentStatus.Canary = false
		a.DeploymentStatus.ModifyIndex = index
		a.ModifyIndex = index
		if err := txn.insertAlloc(prev, a); err != nil {
			return err
		}
		if err := sums.allocChanged(prev, a); err != nil {
			return err
		}
	}
	if len(promoted) > 0 {
		txn.t.add(TableAllocs)
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	if req.Eval != nil {
		return upsertEvalsTxn(txn, index, []*structs.Evaluation{req.Eval})
	}
	return nil
}

// promotedGroups names the groups a promotion promotes: those with
// canaries not yet promoted, all of them or the ones named.
func promotedGroups(d *structs.Deployment, req *structs.ApplyDeploymentPromoteRequest) ([]string, error) {
	var out []string
	if req.All {
		for name, g := range d.TaskGroups {
			if g.DesiredCanaries > 0 && !g.Promoted {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	for _, name := range req.Groups {
		g, ok := d.TaskGroups[name]
		if !ok {
			return nil, structs.NewError(structs.ErrCodeInvalid, "deployment %q has no task group %q", d.ID, name)
		}
		if g.DesiredCanaries > 0 && !g.Promoted {
			out = append(out, name)
		}
	}
	return out, nil
}

// UpdateDeploymentAllocHealth sets the health of allocations of a running
// deployment (by hand, or by the watcher), then applies what it causes: a
// status change, a reverted job, an evaluation. Each allocation must be
// the deployment's. Errors are typed and write nothing.
func (b *Batch) UpdateDeploymentAllocHealth(index uint64, req *structs.ApplyDeploymentAllocHealthRequest) error {
	b.txn.t.begin(index)
	txn := b.txn
	d, err := lookup[structs.Deployment](txn, TableDeployments, "deployment", req.DeploymentID, req.DeploymentID)
	if err != nil {
		return err
	}
	if !d.Active() {
		return structs.NewError(structs.ErrCodeInvalid, "can't set health of allocations for a terminal deployment: status %q", d.Status)
	}
	// Every allocation is checked before anything is written: a refusal
	// leaves the batch as it was.
	type change struct {
		prev    *structs.Allocation
		healthy bool
	}
	var changes []change
	for _, list := range []struct {
		ids     []string
		healthy bool
	}{{req.HealthyAllocationIDs, true}, {req.UnhealthyAllocationIDs, false}} {
		for _, id := range list.ids {
			prev, err := txn.alloc(id)
			if err != nil {
				return err
			}
			if prev == nil {
				return structs.NewError(structs.ErrCodeNotFound, "allocation %q not found", id)
			}
			if prev.DeploymentID != d.ID {
				return structs.NewError(structs.ErrCodeInvalid, "allocation %q is not part of deployment %q", id, d.ID)
			}
			changes = append(changes, change{prev, list.healthy})
		}
	}
	sums := newSummaries(txn)
	var deltas deploymentDeltas
	for _, c := range changes {
		prev, err := txn.alloc(c.prev.ID) // the same ID may be listed twice
		if err != nil {
			return err
		}
		a := prev.Copy()
		if a.DeploymentStatus == nil {
			a.DeploymentStatus = &structs.AllocDeploymentStatus{}
		}
		healthy := c.healthy
		a.DeploymentStatus.Healthy = &healthy
		a.DeploymentStatus.Timestamp = req.Timestamp
		a.DeploymentStatus.ModifyIndex = index
		a.ModifyIndex = index
		if err := txn.insertAlloc(prev, a); err != nil {
			return err
		}
		if err := sums.allocChanged(prev, a); err != nil {
			return err
		}
		deltas.allocChanged(prev, a)
	}
	if len(req.HealthyAllocationIDs)+len(req.UnhealthyAllocationIDs) > 0 {
		txn.t.add(TableAllocs)
	}
	if err := sums.flush(index); err != nil {
		return err
	}
	if err := deltas.flush(txn, index, req.Timestamp); err != nil {
		return err
	}
	if err := b.upsertJobAndEval(index, req.Job, req.Eval); err != nil {
		return err
	}
	if req.DeploymentUpdate != nil {
		return updateDeploymentStatusTxn(txn, index, req.DeploymentUpdate, req.Timestamp)
	}
	return nil
}

// deploymentDeltas collects, over one transaction's allocation writes,
// the changes to the counts of deployments' groups; flush writes them,
// one copy of each deployment. The zero value is ready, and costs nothing
// until an allocation of a deployment is written.
type deploymentDeltas struct {
	byID map[string]map[string]*groupDelta
}

type groupDelta struct{ placed, healthy, unhealthy int }

// allocChanged records the write of allocation a over prev (nil: a new
// allocation). Only allocations naming a deployment count.
func (dd *deploymentDeltas) allocChanged(prev, a *structs.Allocation) {
	if a.DeploymentID == "" {
		return
	}
	var g *groupDelta
	get := func() *groupDelta {
		if g != nil {
			return g
		}
		if dd.byID == nil {
			dd.byID = map[string]map[string]*groupDelta{}
		}
		groups := dd.byID[a.DeploymentID]
		if groups == nil {
			groups = map[string]*groupDelta{}
			dd.byID[a.DeploymentID] = groups
		}
		g = groups[a.TaskGroup]
		if g == nil {
			g = &groupDelta{}
			groups[a.TaskGroup] = g
		}
		return g
	}
	sameDeployment := prev != nil && prev.DeploymentID == a.DeploymentID
	if !sameDeployment {
		get().placed++
	}
	var was *structs.AllocDeploymentStatus
	if sameDeployment {
		was = prev.DeploymentStatus
	}
	now := a.DeploymentStatus
	switch {
	case was.IsHealthy() == now.IsHealthy() && was.IsUnhealthy() == now.IsUnhealthy():
	default:
		if was.IsHealthy() {
			get().healthy--
		}
		if was.IsUnhealthy() {
			get().unhealthy--
		}
		if now.IsHealthy() {
			get().healthy++
		}
		if now.IsUnhealthy() {
			get().unhealthy++
		}
	}
}

// flush writes the collected counts. A healthy allocation moves its
// group's progress deadline on (RequireProgressBy = ts + the group's
// ProgressDeadline), as Nomad does. Deployments no longer stored, and
// groups a deployment does not track, are skipped.
func (dd *deploymentDeltas) flush(txn *writeTxn, index uint64, ts time.Time) error {
	ids := make([]string, 0, len(dd.byID))
	for id := range dd.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		d, err := deploymentTxn(txn, id)
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			continue
		}
		if err != nil {
			return err
		}
		changed := false
		for name, delta := range dd.byID[id] {
			g := d.TaskGroups[name]
			if g == nil {
				continue
			}
			g.PlacedAllocs += delta.placed
			g.HealthyAllocs += delta.healthy
			g.UnhealthyAllocs += delta.unhealthy
			if delta.healthy > 0 && g.ProgressDeadline > 0 && !ts.IsZero() {
				g.RequireProgressBy = ts.Add(g.ProgressDeadline)
			}
			changed = true
		}
		if !changed {
			continue
		}
		if !ts.IsZero() {
			d.ModifyTime = ts.UnixNano()
		}
		if err := upsertDeploymentTxn(txn, index, d); err != nil {
			return err
		}
	}
	dd.byID = nil
	return nil
}

// DeleteDeployments removes deployments (garbage collection). IDs that do
// not exist are skipped.
func (s *StateStore) DeleteDeployments(index uint64, ids []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteDeployments(index, ids); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteDeployments is StateStore.DeleteDeployments within the batch.
func (b *Batch) DeleteDeployments(index uint64, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	b.txn.t.begin(index)
	for _, id := range ids {
		if err := deleteByIDTxn(b.txn, TableDeployments, id); err != nil {
			return err
		}
	}
	return nil
}

// DeploymentByID returns a deployment, or an error satisfying
// errors.Is(err, structs.ErrNotFound).
func (s *StateStore) DeploymentByID(ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	return firstTxn[structs.Deployment](s.db.Txn(false), ws, TableDeployments, "deployment", id, id)
}

// Deployments returns every deployment, by ID (snapshots write them).
func (s *StateStore) Deployments(ws memdb.WatchSet) ([]*structs.Deployment, error) {
	return listTxn[structs.Deployment](s.db.Txn(false), ws, TableDeployments, IndexID)
}

// DeploymentsByNamespace returns the deployments of a namespace ("*": all)
// whose ID starts with prefix, newest first (Nomad's order).
func (s *StateStore) DeploymentsByNamespace(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Deployment, error) {
	all, err := listTxn[structs.Deployment](s.db.Txn(false), ws, TableDeployments, IndexID+prefixSuffix, prefix)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, d := range all {
		if namespace == "*" || d.Namespace == defaultNamespace(namespace) {
			out = append(out, d)
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// DeploymentsByJobID returns a job's deployments, newest first: with all,
// every one kept; without, only those of the job as registered now (a job
// purged and registered again does not list its predecessor's).
func (s *StateStore) DeploymentsByJobID(ws memdb.WatchSet, namespace, jobID string, all bool) ([]*structs.Deployment, error) {
	txn := s.db.Txn(false)
	namespace = defaultNamespace(namespace)
	list, err := listTxn[structs.Deployment](txn, ws, TableDeployments, IndexJob, namespace, jobID)
	if err != nil {
		return nil, err
	}
	if !all {
		watchCh, raw, err := txn.FirstWatch(TableJobs, IndexID, namespace, jobID)
		if err != nil {
			return nil, fmt.Errorf("state: job lookup: %w", err)
		}
		ws.Add(watchCh)
		var createIndex uint64
		if raw != nil {
			createIndex = raw.(*structs.Job).CreateIndex
		}
		out := list[:0]
		for _, d := range list {
			if d.JobCreateIndex == createIndex {
				out = append(out, d)
			}
		}
		list = out
	}
	sortNewestFirst(list)
	return list, nil
}

// LatestDeploymentByJobID returns a job's newest deployment, or nil when
// it has none.
func (s *StateStore) LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error) {
	list, err := listTxn[structs.Deployment](s.db.Txn(false), ws, TableDeployments, IndexJob, defaultNamespace(namespace), jobID)
	if err != nil {
		return nil, err
	}
	var latest *structs.Deployment
	for _, d := range list {
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest, nil
}

// AllocsByDeployment returns the allocations of a deployment.
func (s *StateStore) AllocsByDeployment(ws memdb.WatchSet, id string) ([]*structs.Allocation, error) {
	d, err := s.DeploymentByID(ws, id)
	if err != nil {
		return nil, err
	}
	allocs, err := s.AllocsByJob(ws, d.Namespace, d.JobID)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Allocation, 0, len(allocs))
	for _, a := range allocs {
		if a.DeploymentID == id {
			out = append(out, a)
		}
	}
	return out, nil
}

func sortNewestFirst(list []*structs.Deployment) {
	slices.SortFunc(list, func(a, b *structs.Deployment) int {
		if a.CreateIndex != b.CreateIndex {
			if a.CreateIndex > b.CreateIndex {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// DeploymentRestore loads a deployment.
func (r *StateRestore) DeploymentRestore(d *structs.Deployment) error {
	return r.insert(TableDeployments, d)
}

// UpdateDeploymentStatus is Batch.UpdateDeploymentStatus in its own
// transaction.
func (s *StateStore) UpdateDeploymentStatus(index uint64, req *structs.DeploymentStatusUpdateRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateDeploymentStatus(index, req, time.Time{}); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateDeploymentPromotion is Batch.UpdateDeploymentPromotion in its own
// transaction.
func (s *StateStore) UpdateDeploymentPromotion(index uint64, req *structs.ApplyDeploymentPromoteRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateDeploymentPromotion(index, req, time.Time{}); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateDeploymentAllocHealth is Batch.UpdateDeploymentAllocHealth in its
// own transaction.
func (s *StateStore) UpdateDeploymentAllocHealth(index uint64, req *structs.ApplyDeploymentAllocHealthRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateDeploymentAllocHealth(index, req); err != nil {
		return err
	}
	return b.Commit()
}

package drainer

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Reader is the part of the state store a pass reads. Every read adds its
// watch channels to ws (which may be nil). *state.StateStore and
// *state.StateSnapshot satisfy it.
type Reader interface {
	Nodes(ws memdb.WatchSet) ([]*structs.Node, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error)
	// JobByID fails with an error satisfying errors.Is(err,
	// structs.ErrNotFound) when the job does not exist.
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
}

// Pass is what one look at the state decided. The objects are the stored
// ones: callers must copy before changing them.
type Pass struct {
	// Migrate are the allocations to mark for migration now, sorted by
	// node, job, name and ID.
	Migrate []*structs.Allocation
	// Evals holds one pending node-drain evaluation per job in Migrate.
	Evals []*structs.Evaluation
	// Complete are the draining nodes with nothing left to move.
	Complete []*structs.Node
	// NextDeadline is the earliest force deadline of a draining node
	// still ahead; zero when there is none. A pass is due then even if
	// nothing else changes.
	NextDeadline time.Time
}

// Empty reports whether the pass asks for no write.
func (p *Pass) Empty() bool { return len(p.Migrate) == 0 && len(p.Complete) == 0 }

// ForceDeadline returns when a drain must move everything left at once
// (see structs.DrainStrategy.DeadlineTime).
func ForceDeadline(ds *structs.DrainStrategy) (at time.Time, ok bool) { return ds.DeadlineTime() }

// Plan decides one pass of the drainer at time now. It reads through r
// (adding watch channels to ws) and writes nothing.
func Plan(r Reader, ws memdb.WatchSet, now time.Time) (*Pass, error) {
	nodes, err := r.Nodes(ws)
	if err != nil {
		return nil, err
	}
	p := &Pass{}
	mark := &marks{}
	// Unmarked live service allocations on draining nodes, by job, for
	// the max_parallel budget below.
	waiting := map[structs.NamespacedID][]*structs.Allocation{}
	for _, n := range nodes {
		ds := n.DrainStrategy
		if ds == nil {
			continue
		}
		deadline, hasDeadline := ForceDeadline(ds)
		forced := hasDeadline && !now.Before(deadline)
		allocs, err := r.AllocsByNode(ws, n.ID)
		if err != nil {
			return nil, err
		}
		var others, system []*structs.Allocation // live ones
		for _, a := range allocs {
			switch {
			case a.TerminalStatus():
			case structs.IsSystemType(jobType(a)): // system and sysbatch
				system = append(system, a)
			default:
				others = append(others, a)
			}
		}
		if ds.IgnoreSystemJobs {
			system = nil
		}
		if len(others) == 0 && len(system) == 0 {
			p.Complete = append(p.Complete, n)
			continue
		}
		if hasDeadline && !forced && (p.NextDeadline.IsZero() || deadline.Before(p.NextDeadline)) {
			p.NextDeadline = deadline
		}
		switch {
		case forced:
			mark.add(others...)
			mark.add(system...)
		case len(others) == 0:
			// System allocations go last, all at once: they have no
			// replacement elsewhere.
			mark.add(system...)
		default:
			for _, a := range others {
				// Batch work is left to finish (or to the deadline).
				if jobType(a) == structs.JobTypeBatch || a.DesiredTransition.ShouldMigrate() {
					continue
				}
				id := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
				waiting[id] = append(waiting[id], a)
			}
		}
	}
	for _, id := range sortedIDs(waiting) {
		chosen, err := withinBudget(r, ws, id, waiting[id])
		if err != nil {
			return nil, err
		}
		mark.add(chosen...)
	}
	if p.Migrate, p.Evals, err = mark.result(r, ws, now); err != nil {
		return nil, err
	}
	return p, nil
}

// withinBudget returns the candidates (unmarked live allocations of the
// job on draining nodes) that may be marked now without leaving more than
// migrate.max_parallel of any group unavailable.
//
// An allocation is available when it runs, is not being migrated, and
// (in a group whose migrate block judges health) its health is set: the
// client sets it, by the migrate block or the deployment's update block,
// once the tasks (and checks) have been healthy for min_healthy_time, or
// unhealthy at healthy_deadline. As in Nomad, an unhealthy verdict counts
// too (the replacement is done, for better or worse), so a replacement
// that never turns healthy holds the next batch for healthy_deadline, not
// for ever; one that fails is rescheduled and does not count.
func withinBudget(r Reader, ws memdb.WatchSet, id structs.NamespacedID, candidates []*structs.Allocation) ([]*structs.Allocation, error) {
	job, err := r.JobByID(ws, id.Namespace, id.ID)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		return candidates, nil // purged: the scheduler stops them all
	case err != nil:
		return nil, err
	case job.Stopped():
		return candidates, nil
	}
	all, err := r.AllocsByJob(ws, id.Namespace, id.ID)
	if err != nil {
		return nil, err
	}
	available := map[string]int{} // group -> running, not migrating, health set
	for _, a := range all {
		if !a.TerminalStatus() && a.ClientStatus == structs.AllocClientStatusRunning && !a.DesiredTransition.ShouldMigrate() &&
			(a.DeploymentStatus.HasHealth() || !waitsForHealth(job.LookupTaskGroup(a.TaskGroup))) {
			available[a.TaskGroup]++
		}
	}
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range candidates {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	var out []*structs.Allocation
	for _, group := range sortedKeys(byGroup) {
		cands := byGroup[group]
		tg := job.LookupTaskGroup(group)
		if tg == nil {
			out = append(out, cands...) // group removed: they all stop
			continue
		}
		par := maxParallel(tg)
		// Unavailable now: Count - available. At most par may be.
		allowed := min(par, par-(tg.Count-available[group]))
		if allowed <= 0 {
			continue
		}
		sortAllocs(cands)
		out = append(out, cands[:min(allowed, len(cands))]...)
	}
	return out, nil
}

// waitsForHealth reports whether the group's allocations count as
// available only once the client has set their health: a migrate block
// whose health_check the client judges (checks or task_states). A group
// removed from the job, or without such a block, counts running ones.
func waitsForHealth(tg *structs.TaskGroup) bool {
	if tg == nil || tg.Migrate == nil {
		return false
	}
	return tg.Migrate.HealthCheck == structs.UpdateHealthCheckChecks || tg.Migrate.HealthCheck == structs.UpdateHealthCheckTaskStates
}

// maxParallel is the group's migrate.max_parallel; 1 when unset, as
// Nomad's default.
func maxParallel(tg *structs.TaskGroup) int {
	if tg.Migrate == nil || tg.Migrate.MaxParallel <= 0 {
		return structs.DefaultMigrateMaxPar
	}
	return tg.Migrate.MaxParallel
}

// jobType is the type of the job an allocation belongs to; service when
// the allocation carries no job.
func jobType(a *structs.Allocation) string {
	if a.Job == nil {
		return structs.JobTypeService
	}
	return a.Job.Type
}

// marks collects the allocations a pass marks, once each.
type marks struct {
	seen   map[string]bool
	allocs []*structs.Allocation
}

func (m *marks) add(allocs ...*structs.Allocation) {
	for _, a := range allocs {
		if a.DesiredTransition.ShouldMigrate() || m.seen[a.ID] {
			continue
		}
		if m.seen == nil {
			m.seen = map[string]bool{}
		}
		m.seen[a.ID] = true
		m.allocs = append(m.allocs, a)
	}
}

// result sorts the marked allocations and builds one evaluation per job,
// for the job's current version (or the allocation's copy of a purged
// job).
func (m *marks) result(r Reader, ws memdb.WatchSet, now time.Time) ([]*structs.Allocation, []*structs.Evaluation, error) {
	if len(m.allocs) == 0 {
		return nil, nil, nil
	}
	slices.SortFunc(m.allocs, func(a, b *structs.Allocation) int {
		return cmp.Or(strings.Compare(a.NodeID, b.NodeID), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.JobID, b.JobID), compareAllocs(a, b))
	})
	var evals []*structs.Evaluation
	done := map[structs.NamespacedID]bool{}
	for _, a := range m.allocs {
		id := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
		if done[id] {
			continue
		}
		done[id] = true
		job, err := r.JobByID(ws, a.Namespace, a.JobID)
		switch {
		case errors.Is(err, structs.ErrNotFound):
			job = a.Job
		case err != nil:
			return nil, nil, err
		}
		if job == nil {
			job = &structs.Job{Namespace: a.Namespace, ID: a.JobID, Type: structs.JobTypeService, Priority: structs.DefaultPriority}
		}
		evals = append(evals, structs.NewEval(job, structs.EvalTriggerNodeDrain, now))
	}
	slices.SortFunc(evals, func(a, b *structs.Evaluation) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.JobID, b.JobID))
	})
	return m.allocs, evals, nil
}

// sortAllocs orders allocations by instance name, then ID, so passes are
// deterministic.
func sortAllocs(allocs []*structs.Allocation) { slices.SortFunc(allocs, compareAllocs) }

func compareAllocs(a, b *structs.Allocation) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
}

func sortedIDs(m map[structs.NamespacedID][]*structs.Allocation) []structs.NamespacedID {
	ids := make([]structs.NamespacedID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b structs.NamespacedID) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.ID, b.ID))
	})
	return ids
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package coregc

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Nomad's default thresholds.
const (
	DefaultEvalThreshold = time.Hour
	DefaultJobThreshold  = 4 * time.Hour
	DefaultNodeThreshold = 24 * time.Hour
	// DefaultDeploymentThreshold is Nomad's deployment_gc_threshold.
	DefaultDeploymentThreshold = time.Hour
)

// Thresholds are the ages past which garbage is collected. Zero (or
// negative) means any age.
type Thresholds struct {
	Eval       time.Duration
	Job        time.Duration
	Node       time.Duration
	Deployment time.Duration
}

// DefaultThresholds returns Nomad's defaults: 1 h, 4 h, 24 h and 1 h.
func DefaultThresholds() Thresholds {
	return Thresholds{Eval: DefaultEvalThreshold, Job: DefaultJobThreshold, Node: DefaultNodeThreshold,
		Deployment: DefaultDeploymentThreshold}
}

// Force collects everything terminal, whatever its age (drover system gc).
var Force = Thresholds{}

// Reader is the part of the state store Find reads (with nil watch sets).
// *state.StateStore and *state.StateSnapshot satisfy it. Lookups by ID
// fail with an error satisfying errors.Is(err, structs.ErrNotFound).
type Reader interface {
	Jobs(ws memdb.WatchSet) ([]*structs.Job, error)
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	Evals(ws memdb.WatchSet) ([]*structs.Evaluation, error)
	EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error)
	Nodes(ws memdb.WatchSet) ([]*structs.Node, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	Deployments(ws memdb.WatchSet) ([]*structs.Deployment, error)
	DeploymentsByJobID(ws memdb.WatchSet, namespace, jobID string, all bool) ([]*structs.Deployment, error)
	AllocsByDeployment(ws memdb.WatchSet, id string) ([]*structs.Allocation, error)
}

// Garbage is what one collection found. Evals, Allocs and Deployments
// include those of the purged Jobs; delete them before the jobs.
type Garbage struct {
	Evals       []string
	Allocs      []string
	Deployments []string
	// Jobs to purge, as read (a writer must skip a job changed since).
	Jobs  []*structs.Job
	Nodes []string
}

// Empty reports whether nothing was found.
func (g *Garbage) Empty() bool {
	return len(g.Evals)+len(g.Allocs)+len(g.Deployments)+len(g.Jobs)+len(g.Nodes) == 0
}

// Find decides a collection at time now with thresholds th. It only
// reads.
func Find(r Reader, now time.Time, th Thresholds) (*Garbage, error) {
	f := &finder{r: r, now: now, th: th, g: &Garbage{}, taken: map[string]bool{}, jobs: map[structs.NamespacedID]*structs.Job{},
		byEval: map[structs.NamespacedID]map[string][]*structs.Allocation{}}
	if err := f.collectJobs(); err != nil {
		return nil, err
	}
	if err := f.collectEvals(); err != nil {
		return nil, err
	}
	if err := f.collectDeployments(); err != nil {
		return nil, err
	}
	if err := f.collectNodes(); err != nil {
		return nil, err
	}
	return f.g, nil
}

type finder struct {
	r     Reader
	now   time.Time
	th    Thresholds
	g     *Garbage
	taken map[string]bool // evaluation and allocation IDs already in g
	jobs  map[structs.NamespacedID]*structs.Job
	// byEval holds, per job, its allocations grouped by EvalID (read once
	// per job: allocations have no index by evaluation).
	byEval map[structs.NamespacedID]map[string][]*structs.Allocation
}

// old reports whether t is at least threshold ago. An unknown time (zero)
// counts as old.
func (f *finder) old(t time.Time, threshold time.Duration) bool {
	return threshold <= 0 || t.IsZero() || f.now.Sub(t) >= threshold
}

// nanos converts unix nanoseconds (0 for unknown) to a time.
func nanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// collectJobs collects dead jobs with everything they own.
func (f *finder) collectJobs() error {
	jobs, err := f.r.Jobs(nil)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Status != structs.JobStatusDead {
			continue
		}
		evals, err := f.r.EvalsByJob(nil, j.Namespace, j.ID)
		if err != nil {
			return err
		}
		allocs, err := f.r.AllocsByJob(nil, j.Namespace, j.ID)
		if err != nil {
			return err
		}
		last, done := j.SubmitTime, true
		for _, e := range evals {
			done = done && e.TerminalStatus()
			last = max(last, e.ModifyTime)
		}
		for _, a := range allocs {
			done = done && a.TerminalStatus() && a.ClientStatus != structs.AllocClientStatusRunning
			last = max(last, a.ModifyTime)
		}
		if !done || !f.old(nanos(last), f.th.Job) {
			continue
		}
		f.g.Jobs = append(f.g.Jobs, j)
		for _, e := range evals {
			f.take(&f.g.Evals, e.ID)
		}
		for _, a := range allocs {
			f.take(&f.g.Allocs, a.ID)
		}
		deps, err := f.r.DeploymentsByJobID(nil, j.Namespace, j.ID, true)
		if err != nil {
			return err
		}
		for _, d := range deps {
			f.take(&f.g.Deployments, d.ID)
		}
	}
	return nil
}

func (f *finder) take(list *[]string, id string) {
	if !f.taken[id] {
		f.taken[id] = true
		*list = append(*list, id)
	}
}

// job returns the stored job, or nil when it does not exist (cached).
func (f *finder) job(namespace, id string) (*structs.Job, error) {
	key := structs.NamespacedID{Namespace: namespace, ID: id}
	if j, ok := f.jobs[key]; ok {
		return j, nil
	}
	j, err := f.r.JobByID(nil, namespace, id)
	switch {
	case errors.Is(err, structs.ErrNotFound):
		j = nil
	case err != nil:
		return nil, err
	}
	f.jobs[key] = j
	return j, nil
}

// evalAllocs returns the allocations whose EvalID is e's, from its job's
// allocations (read and grouped once per job).
func (f *finder) evalAllocs(e *structs.Evaluation) ([]*structs.Allocation, error) {
	key := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
	groups, ok := f.byEval[key]
	if !ok {
		allocs, err := f.r.AllocsByJob(nil, e.Namespace, e.JobID)
		if err != nil {
			return nil, err
		}
		groups = map[string][]*structs.Allocation{}
		for _, a := range allocs {
			groups[a.EvalID] = append(groups[a.EvalID], a)
		}
		f.byEval[key] = groups
	}
	return groups[e.ID], nil
}

// collectEvals collects old terminal evaluations with their allocations.
func (f *finder) collectEvals() error {
	evals, err := f.r.Evals(nil)
	if err != nil {
		return err
	}
	for _, e := range evals {
		if f.taken[e.ID] || !e.TerminalStatus() || !f.old(nanos(e.ModifyTime), f.th.Eval) {
			continue
		}
		job, err := f.job(e.Namespace, e.JobID)
		if err != nil {
			return err
		}
		typ := e.Type
		if job != nil {
			typ = job.Type
		}
		if structs.IsBatchType(typ) && job != nil && !job.Stop {
			// The job collection takes a finished batch job whole; a
			// sysbatch job's finished allocations are what keep it from
			// running again on their nodes.
			continue
		}
		allocs, err := f.evalAllocs(e)
		if err != nil {
			return err
		}
		all := true
		for _, a := range allocs {
			switch {
			case f.taken[a.ID]:
			case f.allocCollectable(a, job):
				f.take(&f.g.Allocs, a.ID)
			default:
				all = false
			}
		}
		if all {
			f.take(&f.g.Evals, e.ID)
		}
	}
	return nil
}

// allocCollectable reports whether an allocation may be forgotten: it is
// terminal, no client runs it, it is older than the evaluation threshold,
// and no scheduler will need it to reschedule.
func (f *finder) allocCollectable(a *structs.Allocation, job *structs.Job) bool {
	switch {
	case !a.TerminalStatus() || a.ClientStatus == structs.AllocClientStatusRunning:
		return false
	case !f.old(nanos(max(a.ModifyTime, a.CreateTime)), f.th.Eval):
		return false
	case job == nil || job.Stop || job.Status == structs.JobStatusDead:
		return true
	case a.ServerTerminalStatus() || a.ClientStatus != structs.AllocClientStatusFailed:
		return true
	case a.NextAllocation != "":
		return true // replaced: its successor carries the reschedule history
	}
	// Failed and not replaced: the scheduler may still reschedule it, or
	// counts it as a failure that used up its attempts.
	tg := job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return true
	}
	p := tg.ReschedulePolicy
	return p == nil || (!p.Unlimited && p.Attempts == 0)
}

// collectDeployments collects deployments as Nomad does: one that is no
// longer active (successful, failed or cancelled), older than the
// deployment threshold, and that no live allocation names. A deployment
// whose job no longer exists (purged) goes whatever its status: nothing
// will ever act on it again.
func (f *finder) collectDeployments() error {
	deps, err := f.r.Deployments(nil)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if f.taken[d.ID] {
			continue
		}
		job, err := f.job(d.Namespace, d.JobID)
		if err != nil {
			return err
		}
		if job != nil && (d.Active() || !f.old(nanos(d.ModifyTime), f.th.Deployment)) {
			continue
		}
		allocs, err := f.r.AllocsByDeployment(nil, d.ID)
		if err != nil {
			return err
		}
		live := false
		for _, a := range allocs {
			live = live || (!f.taken[a.ID] && !a.TerminalStatus())
		}
		if !live {
			f.take(&f.g.Deployments, d.ID)
		}
	}
	return nil
}

// collectNodes collects nodes down for longer than the node threshold with no
// live allocation.
func (f *finder) collectNodes() error {
	nodes, err := f.r.Nodes(nil)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Status != structs.NodeStatusDown {
			continue
		}
		var since time.Time // StatusUpdatedAt is in seconds; 0 unknown
		if n.StatusUpdatedAt != 0 {
			since = time.Unix(n.StatusUpdatedAt, 0)
		}
		if !f.old(since, f.th.Node) {
			continue
		}
		allocs, err := f.r.AllocsByNode(nil, n.ID)
		if err != nil {
			return err
		}
		live := false
		for _, a := range allocs {
			live = live || !a.TerminalStatus()
		}
		if !live {
			f.g.Nodes = append(f.g.Nodes, n.ID)
		}
	}
	return nil
}

package deploymentwatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Reader is the state the watcher reads; *state.StateStore satisfies it.
type Reader interface {
	Deployments(ws memdb.WatchSet) ([]*structs.Deployment, error)
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	JobVersionsByID(ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error)
	AllocsByDeployment(ws memdb.WatchSet, id string) ([]*structs.Allocation, error)
	AbandonCh() <-chan struct{}
}

// Writer makes the watcher's decisions durable (Raft applies in the
// server). Each call writes an evaluation of the deployment's job too, and
// returns once the write is applied, or fails having written nothing the
// watcher relies on (the next pass decides again from state).
type Writer interface {
	// FailDeployment marks d failed with desc; with revertTo (a kept
	// version of d's job), the job goes back to it as a new version in
	// the same write.
	FailDeployment(d *structs.Deployment, desc string, revertTo *structs.Job) error
	// PromoteDeployment promotes every canary of d.
	PromoteDeployment(d *structs.Deployment) error
}

// Failure is a deployment to fail.
type Failure struct {
	Deployment  *structs.Deployment
	Description string
	// RevertTo is the job version to go back to (nil: none).
	RevertTo *structs.Job
}

// Pass is what one look at the state decided.
type Pass struct {
	Fail    []Failure
	Promote []*structs.Deployment
	// NextDeadline is the earliest progress deadline still ahead (zero:
	// none).
	NextDeadline time.Time
}

// Plan decides, for every running deployment, what the watcher does now.
func Plan(r Reader, ws memdb.WatchSet, now time.Time) (*Pass, error) {
	list, err := r.Deployments(ws)
	if err != nil {
		return nil, err
	}
	p := &Pass{}
	for _, d := range list {
		if d.Status != structs.DeploymentStatusRunning {
			continue // paused ones wait; the others are over
		}
		job, err := r.JobByID(ws, d.Namespace, d.JobID)
		if errors.Is(err, structs.ErrNotFound) {
			continue // the scheduler cancels it
		}
		if err != nil {
			return nil, err
		}
		if job.Version != d.JobVersion || job.Stopped() {
			continue // a newer version or a stop: the scheduler cancels it
		}
		// The deployment's counts (kept by the state store from the
		// allocations' health) say when its allocations need a look: an
		// unhealthy one, or canaries possibly ready for promotion. Most
		// running deployments need neither, and a pass then costs
		// nothing per allocation (a busy cluster runs a pass at most
		// every MinInterval, with a thousand deployments in flight).
		var allocs []*structs.Allocation
		loaded := needsAllocs(d)
		if loaded {
			if allocs, err = r.AllocsByDeployment(ws, d.ID); err != nil {
				return nil, err
			}
		}
		if err := p.judge(r, ws, job, d, allocs, loaded, now); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// needsAllocs reports whether judging d needs its allocations: some group
// counts an unhealthy allocation, or has as many healthy ones as it wants
// canaries while it waits for promotion. The counts never fall short of
// what the allocations say (an allocation that turned healthy or
// unhealthy is counted, and stays counted once terminal), so without
// either, no allocation is unhealthy and no group's canaries are ready,
// and the counts bound the healthy canaries from above.
func needsAllocs(d *structs.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.UnhealthyAllocs > 0 || g.DesiredCanaries > 0 && !g.Promoted && g.HealthyAllocs >= g.DesiredCanaries {
			return true
		}
	}
	return false
}

// judge decides for one running deployment: from its allocations when
// they were loaded (needsAllocs), else from its counts.
func (p *Pass) judge(r Reader, ws memdb.WatchSet, job *structs.Job, d *structs.Deployment, allocs []*structs.Allocation, loaded bool, now time.Time) error {
	desc := ""
	for _, a := range allocs {
		if a.DeploymentStatus.IsUnhealthy() {
			desc = structs.DeploymentStatusDescriptionFailedAllocations
			break
		}
	}
	healthyCanaries := map[string]int{}
	if !loaded {
		for name, g := range d.TaskGroups {
			healthyCanaries[name] = g.HealthyAllocs // an upper bound, below DesiredCanaries
		}
	}
	for _, a := range allocs {
		if a.DeploymentStatus.IsCanary() && a.DeploymentStatus.IsHealthy() && !a.TerminalStatus() {
			healthyCanaries[a.TaskGroup]++
		}
	}
	for _, name := range sortedGroups(d) {
		g := d.TaskGroups[name]
		if groupDone(g, healthyCanaries[name]) || g.RequireProgressBy.IsZero() {
			continue
		}
		if !now.Before(g.RequireProgressBy) {
			if desc == "" {
				desc = structs.DeploymentStatusDescriptionProgressDeadline
			}
			continue
		}
		if p.NextDeadline.IsZero() || g.RequireProgressBy.Before(p.NextDeadline) {
			p.NextDeadline = g.RequireProgressBy
		}
	}
	if desc != "" {
		f, err := FailureFor(r, ws, job, d, desc)
		if err != nil {
			return err
		}
		p.Fail = append(p.Fail, f)
		return nil
	}
	if d.RequiresPromotion() && d.HasAutoPromote() && canariesReady(d, healthyCanaries) {
		p.Promote = append(p.Promote, d)
	}
	return nil
}

// FailureFor is the failure of deployment d of job for reason desc: with
// auto_revert, back to the newest stable version older than d's (not when
// its spec is the job's own: it would fail the same way). The operator's
// fail (Deployment.Fail) uses it too.
func FailureFor(r Reader, ws memdb.WatchSet, job *structs.Job, d *structs.Deployment, desc string) (Failure, error) {
	f := Failure{Deployment: d, Description: desc}
	if !autoRevert(d) {
		return f, nil
	}
	stable, err := latestStable(r, ws, d)
	if err != nil {
		return f, err
	}
	switch {
	case stable != nil && !stable.SpecChanged(job):
		f.Description = fmt.Sprintf("%s - not rolling back to stable job version %d as current job has same specification", desc, stable.Version)
	case stable != nil:
		f.RevertTo = stable
		f.Description = fmt.Sprintf("%s - rolling back to job version %d", desc, stable.Version)
	default:
		f.Description = desc + " - no stable job version to auto revert to"
	}
	return f, nil
}

// groupDone reports whether a group needs no more progress: all its
// allocations healthy, or its canaries healthy and waiting for promotion
// (the deadline does not run against an operator).
func groupDone(g *structs.DeploymentState, healthyCanaries int) bool {
	if g.DesiredCanaries > 0 && !g.Promoted {
		return healthyCanaries >= g.DesiredCanaries
	}
	return g.HealthyAllocs >= g.DesiredTotal
}

// canariesReady reports whether every group waiting for promotion has its
// canaries healthy.
func canariesReady(d *structs.Deployment, healthy map[string]int) bool {
	for name, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted && healthy[name] < g.DesiredCanaries {
			return false
		}
	}
	return true
}

func autoRevert(d *structs.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.AutoRevert {
			return true
		}
	}
	return false
}

// latestStable returns the newest stable version of d's job older than
// d's, or nil.
func latestStable(r Reader, ws memdb.WatchSet, d *structs.Deployment) (*structs.Job, error) {
	versions, err := r.JobVersionsByID(ws, d.Namespace, d.JobID)
	if err != nil {
		return nil, err
	}
	for _, v := range versions { // newest first
		if v.Stable && v.Version < d.JobVersion {
			return v, nil
		}
	}
	return nil, nil
}

func sortedGroups(d *structs.Deployment) []string {
	out := make([]string, 0, len(d.TaskGroups))
	for name := range d.TaskGroups {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Defaults of Config.
const (
	DefaultMinInterval = 50 * time.Millisecond
	DefaultRetryBase   = 250 * time.Millisecond
	DefaultRetryLimit  = 10 * time.Second
)

// Config configures a Watcher. State and Writer are required.
type Config struct {
	Logger hclog.Logger
	// State returns the current state store; it is called once per pass.
	State  func() Reader
	Writer Writer
	// Clock is the source of time for deadlines; nil means the wall
	// clock.
	Clock clock.Clock
	// MinInterval is the least time between passes (0: the default;
	// negative: none).
	MinInterval time.Duration
}

// Watcher runs passes while its context lives. Create with New.
type Watcher struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock
}

// New returns a watcher; it does nothing until Run.
func New(cfg Config) (*Watcher, error) {
	if cfg.State == nil || cfg.Writer == nil {
		return nil, errors.New("deploymentwatcher: State and Writer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	return &Watcher{cfg: cfg, logger: cfg.Logger.Named("deployment_watcher"), clock: cfg.Clock}, nil
}

// Run makes passes until ctx ends: each pass plans from the current state
// and writes what it decided; then Run waits until something the pass
// read changes or the next deadline comes, and at least MinInterval. A
// failed pass is retried with backoff.
func (w *Watcher) Run(ctx context.Context) {
	w.logger.Debug("deployment watcher started")
	defer w.logger.Debug("deployment watcher stopped")
	b := backoff.New(DefaultRetryBase, DefaultRetryLimit)
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		p, err := w.Pass(ws)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.Error("deployment pass failed; retrying", "error", err)
			if b.Wait(ctx) != nil {
				return
			}
			continue
		}
		b.Reset()
		if w.wait(ctx, ws, p.NextDeadline) != nil || w.pause(ctx) != nil {
			return
		}
	}
}

// Pass plans from the current state and writes the decisions, adding to
// ws what it read.
func (w *Watcher) Pass(ws memdb.WatchSet) (*Pass, error) {
	st := w.cfg.State()
	ws.Add(st.AbandonCh())
	p, err := Plan(st, ws, w.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	for _, f := range p.Fail {
		if err := w.cfg.Writer.FailDeployment(f.Deployment, f.Description, f.RevertTo); err != nil {
			return nil, fmt.Errorf("failing deployment %s: %w", f.Deployment.ID, err)
		}
		w.logger.Info("deployment failed", "deployment_id", f.Deployment.ID, "job_id", f.Deployment.JobID, "reason", f.Description)
	}
	for _, d := range p.Promote {
		if err := w.cfg.Writer.PromoteDeployment(d); err != nil {
			return nil, fmt.Errorf("promoting deployment %s: %w", d.ID, err)
		}
		w.logger.Info("deployment auto-promoted", "deployment_id", d.ID, "job_id", d.JobID)
	}
	return p, nil
}

// wait blocks until a watch channel in ws fires, deadline (if not zero)
// passes on the watcher's clock, or ctx ends (its error is returned).
func (w *Watcher) wait(ctx context.Context, ws memdb.WatchSet, deadline time.Time) error {
	wctx, cancel := clock.WithDeadline(ctx, w.clock, deadline)
	defer cancel()
	_ = ws.WatchCtx(wctx)
	return ctx.Err()
}

// pause waits MinInterval on the watcher's clock.
func (w *Watcher) pause(ctx context.Context) error {
	return clock.Sleep(ctx, w.clock, w.cfg.MinInterval)
}

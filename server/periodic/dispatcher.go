package periodic

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// retryDelay is how long the dispatcher waits after a launch failed (a
// Raft error, a lost leadership) before it tries again.
const retryDelay = time.Second

// Reader is what the dispatcher reads: state.StateStore satisfies it.
type Reader interface {
	PeriodicJobs(ws memdb.WatchSet) ([]*structs.Job, error)
	PeriodicLaunchByID(ws memdb.WatchSet, namespace, id string) (*structs.PeriodicLaunch, error)
	JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Job, error)
}

// Launcher registers a periodic job's child launched at a time, with the
// parent's new last launch, in one Raft entry. An error with code
// conflict means the run was already launched.
type Launcher interface {
	Launch(job *structs.Job, at time.Time) error
}

// Config configures a Dispatcher.
type Config struct {
	Logger   hclog.Logger
	Clock    clock.Clock // nil: the wall clock
	State    func() Reader
	Launcher Launcher
}

// Dispatcher launches periodic jobs. Step and Run must not be called
// concurrently.
type Dispatcher struct {
	logger   hclog.Logger
	clock    clock.Clock
	state    func() Reader
	launcher Launcher

	// handled is, per job, the latest due time this dispatcher launched
	// or skipped (prohibit_overlap); the store's launch record may lag it
	// only for a skipped run.
	handled map[structs.NamespacedID]time.Time
	// schedules caches parsed specs by job, for a JobModifyIndex.
	schedules map[structs.NamespacedID]*cached
}

type cached struct {
	modifyIndex uint64
	sched       *Schedule
}

// New returns a dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.State == nil || cfg.Launcher == nil {
		return nil, fmt.Errorf("periodic: State and Launcher are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Dispatcher{
		logger: cfg.Logger.Named("periodic"), clock: cfg.Clock, state: cfg.State, launcher: cfg.Launcher,
		handled: map[structs.NamespacedID]time.Time{}, schedules: map[structs.NamespacedID]*cached{},
	}, nil
}

// Run launches due runs until ctx ends: a pass (Step), then a wait until
// the next due time, a change to a periodic job, or ctx.
func (d *Dispatcher) Run(ctx context.Context) {
	for ctx.Err() == nil {
		now := d.clock.Now()
		next, ws, err := d.Step(now)
		if err != nil {
			d.logger.Warn("periodic launch failed; retrying", "error", err)
			if retry := now.Add(retryDelay); next.IsZero() || retry.Before(next) {
				next = retry
			}
		}
		wctx, cancel := clock.WithDeadline(ctx, d.clock, next)
		if ws == nil {
			<-wctx.Done()
		} else {
			_ = ws.WatchCtx(wctx)
		}
		cancel()
	}
}

// Step launches, for every active periodic job, the most recent run due
// at or before now that was not launched yet. It returns the next time a
// run falls due (zero: none) and a watch set that fires when a periodic
// job changes. Launch errors are returned (joined with the job's name)
// after the other jobs had their turn; a failed run is tried again on the
// next Step.
func (d *Dispatcher) Step(now time.Time) (time.Time, memdb.WatchSet, error) {
	st := d.state()
	ws := memdb.NewWatchSet()
	jobs, err := st.PeriodicJobs(ws)
	if err != nil {
		return time.Time{}, nil, err
	}
	var (
		next     time.Time
		firstErr error
		seen     = make(map[structs.NamespacedID]bool, len(jobs))
	)
	for _, job := range jobs {
		if !job.IsPeriodicActive() {
			continue
		}
		k := job.NamespacedID()
		seen[k] = true
		sched, err := d.schedule(job)
		if err != nil {
			d.logger.Error("periodic job has an invalid schedule", "job_id", job.ID, "namespace", job.Namespace, "error", err)
			continue
		}
		last, err := d.lastLaunch(st, job)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if due := sched.LatestDue(last, now); !due.IsZero() {
			if err := d.launch(st, job, due); err != nil {
				firstErr = cmpErr(firstErr, fmt.Errorf("job %q: %w", job.ID, err))
				continue
			}
			last = due
		}
		if t := sched.Next(last); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for k := range d.handled {
		if !seen[k] {
			delete(d.handled, k)
		}
	}
	for k := range d.schedules {
		if !seen[k] {
			delete(d.schedules, k)
		}
	}
	return next, ws, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// lastLaunch is the time runs are counted from: the recorded last
// launch, else the job's submission, or a later run this dispatcher
// skipped.
func (d *Dispatcher) lastLaunch(st Reader, job *structs.Job) (time.Time, error) {
	last := time.Unix(0, job.SubmitTime)
	l, err := st.PeriodicLaunchByID(nil, job.Namespace, job.ID)
	switch {
	case err == nil:
		last = l.Launch
	case structs.CodeOf(err) != structs.ErrCodeNotFound:
		return time.Time{}, err
	}
	if h, ok := d.handled[job.NamespacedID()]; ok && h.After(last) {
		last = h
	}
	return last, nil
}

// launch launches job's run due at due, or skips it when the job
// prohibits overlap and a child still runs.
func (d *Dispatcher) launch(st Reader, job *structs.Job, due time.Time) error {
	log := d.logger.With("job_id", job.ID, "namespace", job.Namespace, "launch", due.UTC())
	if job.Periodic.ProhibitOverlap {
		running, err := RunningChildren(st, job)
		if err != nil {
			return err
		}
		if running {
			log.Info("skipping launch of periodic job: a previous run is still running (prohibit_overlap)")
			d.handled[job.NamespacedID()] = due
			return nil
		}
	}
	err := d.launcher.Launch(job, due)
	switch {
	case err == nil:
		log.Debug("launched periodic job")
	case structs.CodeOf(err) == structs.ErrCodeConflict:
		log.Debug("periodic run was already launched", "reason", err)
	default:
		return err
	}
	d.handled[job.NamespacedID()] = due
	return nil
}

// RunningChildren reports whether a child of the periodic job is not dead.
func RunningChildren(st Reader, job *structs.Job) (bool, error) {
	children, err := st.JobsByIDPrefix(nil, job.Namespace, job.ID+structs.PeriodicLaunchSuffix)
	if err != nil {
		return false, err
	}
	for _, c := range children {
		if c.ParentID == job.ID && !c.Stop && c.Status != structs.JobStatusDead {
			return true, nil
		}
	}
	return false, nil
}

// schedule returns the job's parsed specs, cached per job version.
func (d *Dispatcher) schedule(job *structs.Job) (*Schedule, error) {
	k := job.NamespacedID()
	if c, ok := d.schedules[k]; ok && c.modifyIndex == job.JobModifyIndex {
		return c.sched, nil
	}
	s, err := NewSchedule(job.Periodic)
	if err != nil {
		return nil, err
	}
	d.schedules[k] = &cached{modifyIndex: job.JobModifyIndex, sched: s}
	return s, nil
}

// Schedule is a periodic block's cron specs, parsed, in its time zone.
type Schedule struct {
	exprs []*cronexpr.Expression
	loc   *time.Location
}

// NewSchedule parses the block's specs.
func NewSchedule(p *structs.PeriodicConfig) (*Schedule, error) {
	s := &Schedule{loc: p.Location()}
	for _, spec := range p.AllSpecs() {
		e, err := cronexpr.Parse(strings.TrimSpace(spec))
		if err != nil {
			return nil, fmt.Errorf("invalid cron spec %q: %w", spec, err)
		}
		s.exprs = append(s.exprs, e)
	}
	if len(s.exprs) == 0 {
		return nil, fmt.Errorf("no cron spec")
	}
	return s, nil
}

// Next returns the earliest time strictly after from that a spec names,
// or the zero time when none names any.
func (s *Schedule) Next(from time.Time) time.Time {
	from = from.In(s.loc)
	var best time.Time
	for _, e := range s.exprs {
		t := e.Next(from)
		if !t.IsZero() && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best
}

// maxSteps bounds the walk from a due run to the latest one.
const maxSteps = 100000

// lookBack are the windows LatestDue tries, from the smallest, to find a
// run close to now without walking every run since a launch long ago.
var lookBack = []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour}

// LatestDue returns the latest run after last and at or before now, or
// the zero time when none is due.
func (s *Schedule) LatestDue(last, now time.Time) time.Time {
	first := s.Next(last)
	if first.IsZero() || first.After(now) {
		return time.Time{}
	}
	from := first
	for _, back := range lookBack {
		start := now.Add(-back)
		if !start.After(from) {
			break
		}
		if t := s.Next(start); !t.IsZero() && !t.After(now) {
			from = t
			break
		}
	}
	for range maxSteps {
		t := s.Next(from)
		if t.IsZero() || t.After(now) {
			break
		}
		from = t
	}
	return from
}

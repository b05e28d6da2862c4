package periodic

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// t0 is a whole minute, so that "every 10 seconds" falls on :00, :10...
var t0 = time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)

// storeLauncher launches into a real store, as the server's launcher does
// through Raft, and records each launch.
type storeLauncher struct {
	mu       sync.Mutex
	store    *state.StateStore
	index    uint64
	launches []time.Time
}

func (l *storeLauncher) Launch(job *structs.Job, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	child := job.Copy()
	child.ParentID, child.ID, child.Periodic = job.ID, structs.PeriodicChildID(job.ID, at), nil
	l.index++
	err := l.store.LaunchPeriodicJob(l.index, child, mock.EvalFor(child),
		&structs.PeriodicLaunch{Namespace: job.Namespace, ID: job.ID, Launch: at})
	if err == nil {
		l.launches = append(l.launches, at)
	}
	return err
}

func (l *storeLauncher) got() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.launches...)
}

// setup registers a periodic job (every 10 s) submitted at t0.
func setup(t *testing.T, mutate func(*structs.Job)) (*state.StateStore, *structs.Job, *storeLauncher) {
	t.Helper()
	store, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	job := mock.BatchJob()
	job.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "*/10 * * * * * *", SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"}
	job.SubmitTime = t0.UnixNano()
	if mutate != nil {
		mutate(job)
	}
	if err := store.UpsertJob(1000, job, nil); err != nil {
		t.Fatal(err)
	}
	return store, job, &storeLauncher{store: store, index: 1000}
}

func newDispatcher(t *testing.T, store *state.StateStore, l Launcher, c clock.Clock) *Dispatcher {
	t.Helper()
	d, err := New(Config{Clock: c, State: func() Reader { return store }, Launcher: l})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func step(t *testing.T, d *Dispatcher, now time.Time) time.Time {
	t.Helper()
	next, _, err := d.Step(now)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func wantLaunches(t *testing.T, l *storeLauncher, want ...time.Time) {
	t.Helper()
	got := l.got()
	if len(got) != len(want) {
		t.Fatalf("launches %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("launch %d at %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

// TestDispatcherLaunchesOncePerDueTime: each due time is launched once,
// however often the dispatcher looks, and the next wake-up is the next due
// time.
func TestDispatcherLaunchesOncePerDueTime(t *testing.T) {
	store, job, l := setup(t, nil)
	d := newDispatcher(t, store, l, nil)
	if next := step(t, d, t0.Add(5*time.Second)); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next %v, want %v", next, t0.Add(10*time.Second))
	}
	wantLaunches(t, l)
	for _, s := range []int{10, 10, 12, 19} {
		step(t, d, t0.Add(time.Duration(s)*time.Second))
	}
	wantLaunches(t, l, t0.Add(10*time.Second))
	if next := step(t, d, t0.Add(20*time.Second)); !next.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("next %v, want %v", next, t0.Add(30*time.Second))
	}
	wantLaunches(t, l, t0.Add(10*time.Second), t0.Add(20*time.Second))

	child, err := store.JobByID(nil, job.Namespace, structs.PeriodicChildID(job.ID, t0.Add(20*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentID != job.ID || child.Periodic != nil {
		t.Fatalf("child %+v", child)
	}
	launch, err := store.PeriodicLaunchByID(nil, job.Namespace, job.ID)
	if err != nil || !launch.Launch.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("launch record %v, %v", launch, err)
	}
}

// TestDispatcherRun drives Run with a manual clock: it wakes at each due
// time and launches it.
func TestDispatcherRun(t *testing.T) {
	store, _, l := setup(t, nil)
	c := clock.NewManual(t0.Add(time.Second))
	d := newDispatcher(t, store, l, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := 1; i <= 3; i++ {
		if !c.WaitPending(1, 5*time.Second) { // Run waits on its timer
			t.Fatalf("%d timers pending, want Run's", c.Pending())
		}
		c.Advance(10 * time.Second)
		waitFor(t, func() bool { return len(l.got()) == i })
	}
	wantLaunches(t, l, t0.Add(10*time.Second), t0.Add(20*time.Second), t0.Add(30*time.Second))
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDispatcherProhibitOverlap: a run is skipped while a child is not
// dead, and launched again once it is.
func TestDispatcherProhibitOverlap(t *testing.T) {
	store, job, l := setup(t, func(j *structs.Job) { j.Periodic.ProhibitOverlap = true })
	d := newDispatcher(t, store, l, nil)
	step(t, d, t0.Add(10*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second))
	// The child is pending (its evaluation is): the next run is skipped,
	// once, and not retried at the following passes.
	step(t, d, t0.Add(20*time.Second))
	step(t, d, t0.Add(25*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second))

	// The child finishes: stopped (dead), the next run goes.
	if err := store.DeregisterJob(2000, job.Namespace, structs.PeriodicChildID(job.ID, t0.Add(10*time.Second)), false, 0, nil); err != nil {
		t.Fatal(err)
	}
	step(t, d, t0.Add(30*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second), t0.Add(30*time.Second))

	// Without prohibit_overlap the same situation launches.
	store2, _, l2 := setup(t, nil)
	d2 := newDispatcher(t, store2, l2, nil)
	step(t, d2, t0.Add(10*time.Second))
	step(t, d2, t0.Add(20*time.Second))
	wantLaunches(t, l2, t0.Add(10*time.Second), t0.Add(20*time.Second))
}

// TestDispatcherCatchUp: a new dispatcher (a new leader) reads the last
// launch from the store; it launches the most recent run that fell due
// while none ran (one, not every missed run), and nothing already
// launched.
func TestDispatcherCatchUp(t *testing.T) {
	store, _, l := setup(t, nil)
	d := newDispatcher(t, store, l, nil)
	step(t, d, t0.Add(10*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second))

	// Leader loop restarted at 0:15: nothing is due (0:10 was launched).
	d = newDispatcher(t, store, l, nil)
	step(t, d, t0.Add(15*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second))

	// No leader from 0:15 to 0:47: 0:20, 0:30 and 0:40 were missed; the
	// new leader launches 0:40 only, then 0:50 on time.
	d = newDispatcher(t, store, l, nil)
	if next := step(t, d, t0.Add(47*time.Second)); !next.Equal(t0.Add(50 * time.Second)) {
		t.Fatalf("next %v", next)
	}
	step(t, d, t0.Add(50*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second), t0.Add(40*time.Second), t0.Add(50*time.Second))

	// A stale leader that still believes 0:50 is due cannot launch it
	// again: the store refuses a launch not after the recorded one.
	if err := l.Launch(mustJob(t, store), t0.Add(50*time.Second)); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("second launch of a run: %v, want a conflict", err)
	}
}

func mustJob(t *testing.T, store *state.StateStore) *structs.Job {
	t.Helper()
	jobs, err := store.PeriodicJobs(nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("periodic jobs %v, %v", jobs, err)
	}
	return jobs[0]
}

// TestDispatcherInactive: a disabled block, a stopped job and a purged job
// launch nothing.
func TestDispatcherInactive(t *testing.T) {
	store, _, l := setup(t, func(j *structs.Job) { j.Periodic.Enabled = false })
	d := newDispatcher(t, store, l, nil)
	if next := step(t, d, t0.Add(time.Minute)); !next.IsZero() {
		t.Fatalf("next %v for a disabled job", next)
	}
	wantLaunches(t, l)

	store, job, l := setup(t, nil)
	d = newDispatcher(t, store, l, nil)
	step(t, d, t0.Add(10*time.Second))
	if err := store.DeregisterJob(3000, job.Namespace, job.ID, false, 0, nil); err != nil {
		t.Fatal(err)
	}
	step(t, d, t0.Add(30*time.Second))
	if err := store.DeregisterJob(3001, job.Namespace, job.ID, true, 0, nil); err != nil {
		t.Fatal(err)
	}
	step(t, d, t0.Add(40*time.Second))
	wantLaunches(t, l, t0.Add(10*time.Second))
	if _, err := store.PeriodicLaunchByID(nil, job.Namespace, job.ID); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("launch record after purge: %v", err)
	}
}

// TestScheduleTimeZoneAndSpecs: specs are read in the time zone, and the
// earliest of several specs wins.
func TestScheduleTimeZoneAndSpecs(t *testing.T) {
	s, err := NewSchedule(&structs.PeriodicConfig{Specs: []string{"0 9 * * *", "30 8 * * *"}, TimeZone: "America/New_York"})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // 07:00 in New York
	if got, want := s.Next(from), time.Date(2026, 11, 27, 13, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("next %v, want %v", got.UTC(), want)
	}
	// LatestDue over a long gap finds the last run without walking them all.
	every, _ := NewSchedule(&structs.PeriodicConfig{Spec: "* * * * * * *"})
	if got, want := every.LatestDue(t0.Add(-3*365*24*time.Hour), t0.Add(1500*time.Millisecond)), t0.Add(time.Second); !got.Equal(want) {
		t.Fatalf("latest due %v, want %v", got, want)
	}
}

package coregc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// stateWriter applies deletions to the world's state store, as the FSM
// would, and records each call.
type stateWriter struct {
	w *world

	mu    sync.Mutex
	calls []string // guarded by mu
	fail  int      // fail the call with this number (1-based); guarded by mu
}

var errInjected = errors.New("injected write failure")

func (s *stateWriter) record(call string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	if len(s.calls) == s.fail {
		return errInjected
	}
	return nil
}

func (s *stateWriter) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *stateWriter) DeleteEvalsAndAllocs(evals, allocs, deployments []string) error {
	call := fmt.Sprintf("delete %v %v", evals, allocs)
	if len(deployments) > 0 {
		call += fmt.Sprintf(" deployments %v", deployments)
	}
	if err := s.record(call); err != nil {
		return err
	}
	if err := s.w.st.DeleteEvalsAndAllocs(s.w.next(), evals, allocs); err != nil {
		return err
	}
	return s.w.st.DeleteDeployments(s.w.next(), deployments)
}

func (s *stateWriter) PurgeJob(job *structs.Job) error {
	if err := s.record("purge " + job.ID); err != nil {
		return err
	}
	return s.w.st.DeregisterJob(s.w.next(), job.Namespace, job.ID, true, 0, nil)
}

func (s *stateWriter) DeleteNodes(ids []string) error {
	if err := s.record(fmt.Sprintf("nodes %v", ids)); err != nil {
		return err
	}
	return s.w.st.DeleteNodes(s.w.next(), ids)
}

// garbageWorld has a stopped job with three old evaluations, each with
// one allocation, and an old down node.
func garbageWorld(t *testing.T) *world {
	w := newWorld(t)
	w.job("web", structs.JobTypeService, 10*time.Hour)
	for i := 1; i <= 3; i++ {
		e := fmt.Sprintf("e%d", i)
		w.eval(e, "web", structs.JobTypeService, structs.EvalStatusComplete, 5*time.Hour)
		w.alloc(fmt.Sprintf("a%d", i), "web", e, "stop,complete", 5*time.Hour)
	}
	w.stop("web", 5*time.Hour)
	w.addNode("down", structs.NodeStatusDown, 25*time.Hour)
	return w
}

func newCollector(t *testing.T, w *world, wr Writer, clk clock.Clock) *Collector {
	t.Helper()
	c, err := New(Config{State: func() Reader { return w.st }, Writer: wr, Clock: clk, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollectWritesInBatches(t *testing.T) {
	w := garbageWorld(t)
	wr := &stateWriter{w: w}
	c := newCollector(t, w, wr, clock.NewManual(t0))
	stats, err := c.Collect(c.Thresholds())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Evals: 3, Allocs: 3, Jobs: 1, Nodes: 1}); stats != want {
		t.Fatalf("stats %+v, want %+v", stats, want)
	}
	want := []string{"delete [e1 e2] []", "delete [e3] [a1]", "delete [] [a2 a3]", "purge web", "nodes [down]"}
	if got := wr.recorded(); !slices.Equal(got, want) {
		t.Fatalf("writes %q\nwant %q", got, want)
	}
	if g, err := Find(w.st, t0, Force); err != nil || !g.Empty() {
		t.Fatalf("garbage left: %v, %v", g, err)
	}
	evals, _ := w.st.Evals(nil)
	allocs, _ := w.st.Allocs(nil)
	jobs, _ := w.st.Jobs(nil)
	nodes, _ := w.st.Nodes(nil)
	if len(evals)+len(allocs)+len(jobs) != 0 || len(nodes) != 1 {
		t.Fatalf("left %d evals, %d allocs, %d jobs, %d nodes", len(evals), len(allocs), len(jobs), len(nodes))
	}
	// Nothing more to do: no write.
	if stats, err := c.Collect(Force); err != nil || stats != (Stats{}) || len(wr.recorded()) != len(want) {
		t.Fatalf("second collection: %+v, %v, writes %q", stats, err, wr.recorded())
	}
}

func TestCollectStopsAtAFailedWrite(t *testing.T) {
	w := garbageWorld(t)
	wr := &stateWriter{w: w, fail: 2}
	c := newCollector(t, w, wr, clock.NewManual(t0))
	stats, err := c.Collect(c.Thresholds())
	if !errors.Is(err, errInjected) {
		t.Fatalf("error %v, want the injected one", err)
	}
	if stats != (Stats{Evals: 2}) || len(wr.recorded()) != 2 {
		t.Fatalf("stats %+v, writes %q", stats, wr.recorded())
	}
}

// TestRunCollectsEachInterval drives Run with a manual clock: nothing
// happens before the interval; each interval collects with the
// configured thresholds.
func TestRunCollectsEachInterval(t *testing.T) {
	w := garbageWorld(t)
	wr := &stateWriter{w: w}
	clk := clock.NewManual(t0)
	c := newCollector(t, w, wr, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitTimer := func() {
		t.Helper()
		if !clk.WaitPending(1, 5*time.Second) {
			t.Fatalf("%d timers armed, want Run's", clk.Pending())
		}
	}
	waitTimer()
	clk.Advance(DefaultInterval - time.Second)
	if got := wr.recorded(); len(got) != 0 {
		t.Fatalf("writes before the interval: %q", got)
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for len(wr.recorded()) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("writes after one interval: %q", wr.recorded())
		}
		time.Sleep(time.Millisecond)
	}
	// A job that turns 4 h dead exactly at the next run: that run
	// collects it.
	w.job("later", structs.JobTypeService, 10*time.Hour)
	w.stop("later", 4*time.Hour-2*DefaultInterval)
	waitTimer()
	clk.Advance(DefaultInterval)
	deadline = time.Now().Add(5 * time.Second)
	for !slices.Contains(wr.recorded(), "purge later") {
		if time.Now().After(deadline) {
			t.Fatalf("writes after two intervals: %q", wr.recorded())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCollectDeploymentsByAge: a finished deployment is deleted through the
// writer once the collector's clock puts it past the deployment threshold;
// a running one stays; a forced collection takes a young finished one.
func TestCollectDeploymentsByAge(t *testing.T) {
	w := newWorld(t)
	w.job("web", structs.JobTypeService, 10*time.Hour)
	w.eval("e1", "web", structs.JobTypeService, structs.EvalStatusComplete, time.Minute)
	w.deployment("d1", "web", structs.DeploymentStatusSuccessful, 30*time.Minute)
	w.deployment("d2", "web", structs.DeploymentStatusRunning, 5*time.Hour)
	w.alloc("a1", "web", "e1", "running,dep:d2", time.Minute)
	wr := &stateWriter{w: w}
	clk := clock.NewManual(t0)
	c := newCollector(t, w, wr, clk)
	if stats, err := c.Collect(c.Thresholds()); err != nil || stats != (Stats{}) {
		t.Fatalf("young deployment: %+v, %v, writes %q", stats, err, wr.recorded())
	}
	clk.Advance(DefaultDeploymentThreshold - 30*time.Minute)
	stats, err := c.Collect(c.Thresholds())
	if err != nil || stats != (Stats{Deployments: 1}) {
		t.Fatalf("old deployment: %+v, %v", stats, err)
	}
	if want := []string{"delete [] [] deployments [d1]"}; !slices.Equal(wr.recorded(), want) {
		t.Fatalf("writes %q, want %q", wr.recorded(), want)
	}
	deps, err := w.st.Deployments(nil)
	if err != nil || len(deps) != 1 || deps[0].ID != "d2" {
		t.Fatalf("deployments left %v, %v", deps, err)
	}

	w.deployment("d3", "web", structs.DeploymentStatusFailed, -time.Hour) // modified just now
	if stats, err := c.Collect(Force); err != nil || stats != (Stats{Deployments: 1}) {
		t.Fatalf("forced: %+v, %v", stats, err)
	}
	if _, err := w.st.DeploymentByID(nil, "d3"); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("d3 after a forced collection: %v", err)
	}
}

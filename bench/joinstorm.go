package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// A join storm (KindJoinStorm): the scenario's Jobs system jobs are
// registered while no node of the run exists, then the simulator starts
// every node at once (RegisterConcurrency registrations in flight). Each
// joining node calls for every system job's allocation. Measured: when the
// last node registered, when every system allocation was placed and
// running, and the evaluations the servers wrote for the jobs (each one a
// Raft write, a canceled duplicate a second one), by trigger.

// EvalCounts are the evaluations of a run's jobs, read at the end.
type EvalCounts struct {
	// Written is every evaluation of the jobs (each was created by a
	// Raft write); Canceled those later canceled as superseded (a
	// second write each).
	Written  int `json:"written"`
	Canceled int `json:"canceled"`
	// ByTrigger counts them by TriggeredBy (job-register, node-update...).
	ByTrigger map[string]int `json:"by_trigger,omitempty"`
}

// String renders the counts in one line.
func (e *EvalCounts) String() string {
	if e == nil {
		return "-"
	}
	triggers := slices.Sorted(maps.Keys(e.ByTrigger))
	parts := make([]string, len(triggers))
	for i, k := range triggers {
		parts[i] = fmt.Sprintf("%s %s", k, fmtCount(float64(e.ByTrigger[k])))
	}
	return fmt.Sprintf("%s written (%s canceled as duplicates): %s", fmtCount(float64(e.Written)),
		fmtCount(float64(e.Canceled)), strings.Join(parts, ", "))
}

// systemJob returns a system job of one mock_driver task.
func (r *runner) systemJob(id string) *nomad.Job {
	sc := r.cfg.Scenario
	task := nomad.NewTask("t", "mock_driver").
		SetConfig("run_for", r.cfg.RunFor).
		Require(&nomad.Resources{CPU: new(sc.TaskCPU), MemoryMB: new(sc.TaskMemoryMB)})
	tg := nomad.NewTaskGroup("g", 1).AddTask(task)
	if r.cfg.Nomad {
		task.LogConfig = &nomad.LogConfig{MaxFiles: new(1), MaxFileSizeMB: new(1)}
		tg.EphemeralDisk = &nomad.EphemeralDisk{SizeMB: new(10)}
	}
	region := r.cfg.Region
	if region == "" {
		region = "global"
	}
	return nomad.NewSystemJob(id, id, region, 50).AddTaskGroup(tg).AddDatacenter(r.cfg.Datacenter)
}

// runJoinStorm registers the system jobs, starts the nodes and waits until
// every node runs every job's allocation; the nodes are stopped by the
// returned function's caller (stopNodes).
func (r *runner) runJoinStorm(ctx context.Context, stopNodes *func()) error {
	sc := r.cfg.Scenario
	if r.cfg.StartNodes == nil {
		return errors.New("bench: a join storm needs the node simulator (-sim)")
	}
	total := sc.Jobs * sc.Nodes.Count
	r.res.Jobs, r.res.Allocs = sc.Jobs, total

	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	var watchers sync.WaitGroup
	defer watchers.Wait()
	defer cancelWatch()

	r.start = time.Now()
	counts := newPlaceCounts(total, r.start)
	for i := range sc.Jobs {
		id := r.placeJobID(i)
		resp, err := r.register(ctx, i, r.systemJob(id))
		if err != nil {
			return fmt.Errorf("registering %s: %w", id, err)
		}
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			r.watchSummary(watchCtx, i, id, int64(sc.Nodes.Count), resp.JobModifyIndex, 0, 0, counts)
		}()
	}
	r.res.RegisterSeconds = time.Since(r.start).Seconds()

	joining := time.Now()
	r.setProgress(func() string {
		return fmt.Sprintf("%s %s | %d nodes joining | placed %d/%d | running %d/%d%s", sc.Name, r.since(),
			sc.Nodes.Count, counts.placed.Load(), total, counts.running.Load(), total, r.sourceStatus())
	})
	stop, err := r.startNodes(ctx)
	if err != nil {
		return err
	}
	*stopNodes = stop
	r.res.JoinSeconds = time.Since(joining).Seconds()
	r.res.Nodes = sc.Nodes.Count

	timer := time.NewTimer(r.cfg.Timeout)
	defer timer.Stop()
	select {
	case <-counts.runningReachedCh:
	case <-timer.C:
		err = fmt.Errorf("timed out after %v: placed %d, running %d of %d",
			r.cfg.Timeout, counts.placed.Load(), counts.running.Load(), total)
	case <-ctx.Done():
		err = ctx.Err()
	}
	r.res.Placed, r.res.Running = int(counts.placed.Load()), int(counts.running.Load())
	// Times from the first node's start, not from the job writes.
	offset := joining.Sub(r.start)
	if at := counts.placedAt.Load(); at > 0 {
		r.res.PlacedSeconds = (time.Duration(at) - offset).Seconds()
		r.res.PlacementsPerSec = float64(total) / r.res.PlacedSeconds
	}
	if at := counts.runningAt.Load(); at > 0 {
		r.res.RunningSeconds = (time.Duration(at) - offset).Seconds()
	}
	return err
}

// countEvals reads every evaluation of the run's jobs (all pages), once
// none of them is pending any more (or after evalDrainTimeout). It runs
// after the measured window.
func (r *runner) countEvals(ctx context.Context) *EvalCounts {
	r.setProgress(func() string { return r.cfg.Scenario.Name + ": counting the evaluations" })
	deadline := time.Now().Add(evalDrainTimeout)
	for {
		c, pending, err := r.readEvals(ctx)
		if err != nil {
			r.res.Errors = append(r.res.Errors, "reading the evaluations: "+err.Error())
			return nil
		}
		if pending == 0 || !time.Now().Before(deadline) {
			if pending > 0 {
				r.res.Notes = append(r.res.Notes, fmt.Sprintf("%d evaluations still pending %v after the run", pending, evalDrainTimeout))
			}
			return c
		}
		select {
		case <-ctx.Done():
			return c
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readEvals counts the run's jobs' evaluations and how many are pending.
func (r *runner) readEvals(ctx context.Context) (*EvalCounts, int, error) {
	c := &EvalCounts{ByTrigger: map[string]int{}}
	pending := 0
	q := (&nomad.QueryOptions{Prefix: "", AllowStale: r.cfg.Stale}).WithContext(ctx)
	prefix := r.jobPrefix()
	for {
		evals, meta, err := r.client(0).Evaluations().List(q)
		if err != nil {
			return c, 0, err
		}
		for _, e := range evals {
			if !strings.HasPrefix(e.JobID, prefix) {
				continue
			}
			c.Written++
			c.ByTrigger[e.TriggeredBy]++
			switch e.Status {
			case "canceled":
				c.Canceled++
			case "pending":
				pending++
			}
		}
		if meta.NextToken == "" {
			return c, pending, nil
		}
		q.NextToken = meta.NextToken
	}
}

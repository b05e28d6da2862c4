package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// allocFollowTimeout bounds how long job run follows the allocations it
// placed: Nomad's default healthy_deadline, the longest a Nomad deployment
// waits for an allocation by default.
const allocFollowTimeout = 5 * time.Minute

// startFailures are the task events that say a task could not start.
var startFailures = map[string]bool{
	structs.TaskHookFailed:             true, // a template that could not render
	structs.TaskArtifactDownloadFailed: true,
	structs.TaskDriverFailure:          true,
	structs.TaskSetupFailure:           true,
	structs.TaskFailedValidate:         true,
}

// followedEvents are the task events job run prints while it follows the
// allocations: why a task could not start, and what the client does next.
var followedEvents = map[string]bool{
	structs.TaskTemplate:               true, // what a template waits for
	structs.TaskHookFailed:             true,
	structs.TaskArtifactDownloadFailed: true,
	structs.TaskDriverFailure:          true,
	structs.TaskSetupFailure:           true,
	structs.TaskFailedValidate:         true,
	structs.TaskRestarting:             true,
	structs.TaskNotRestarting:          true,
}

// runJob monitors the evaluation that registering a job created, then
// follows the allocations it placed until each has started (client status
// running or complete) or failed, printing the events of tasks that could
// not start as they come. It returns the evaluation's exit code, except
// that a service job whose allocation failed, or had not started within
// timeout, exits 1: Nomad's job run monitors a service job's deployment
// and exits 1 when it fails (an allocation that is not healthy by the
// healthy_deadline fails it). A batch
// or system job keeps its code, as in Nomad (whose job run returns once
// the evaluation is done), and its allocations are followed only until
// a task is known to have failed to start (the client may still retry).
func (m *evalMonitor) runJob(ctx context.Context, evalID string, job *structs.Job, timeout time.Duration) int {
	code := m.monitor(ctx, evalID)
	if code == exitError || len(m.placed) == 0 {
		return code
	}
	f := &allocFollower{m: m, job: job, reported: map[string]int{}}
	failed, timedOut, ok := f.follow(ctx, timeout)
	if !ok {
		return exitError
	}
	if (failed > 0 || timedOut) && isService(job) && code == exitOK {
		return exitError
	}
	return code
}

// isService: a job of type service (the default when none is given).
func isService(job *structs.Job) bool {
	return job.Type == structs.JobTypeService || job.Type == ""
}

// allocFollower follows a job's newly placed allocations.
type allocFollower struct {
	m   *evalMonitor
	job *structs.Job
	// reported counts, per allocation and task ("alloc/task"), the events
	// already looked at.
	reported map[string]int
}

// follow returns how many allocations failed (or, for a job that is not
// a service, could not start a task), whether some were still waiting
// when timeout passed, and false when the allocations could not be read
// (the error is printed).
func (f *allocFollower) follow(ctx context.Context, timeout time.Duration) (failed int, timedOut, ok bool) {
	m, out := f.m, f.m.e.stdout
	pending := map[string]bool{}
	for _, a := range m.placed {
		pending[a.ID] = true
	}
	noun := "allocation"
	if len(pending) > 1 {
		noun += "s"
	}
	fmt.Fprintf(out, "==> Monitoring %d %s until the tasks start\n", len(pending), noun)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var index uint64
	var failedIDs []string
	started := 0
	for len(pending) > 0 {
		q := &api.QueryOptions{Namespace: f.job.Namespace, WaitIndex: index, WaitTime: m.e.monitorWait}
		allocs, qm, err := m.c.JobAllocations(ctx, f.job.ID, false, q)
		if ctx.Err() != nil {
			fmt.Fprintf(out, "==> %d of %d %s not started after %v; see drover job status %s\n",
				len(pending), len(m.placed), noun, timeout, f.job.ID)
			return failed, true, true
		}
		if err != nil {
			errorf(m.e, "reading the job's allocations: %v", err)
			return failed, false, false
		}
		index = qm.LastIndex
		for _, a := range allocs {
			if !pending[a.ID] {
				continue
			}
			switch f.check(a) {
			case allocStarted:
				delete(pending, a.ID)
				started++
			case allocFailed:
				delete(pending, a.ID)
				failed++
				failedIDs = append(failedIDs, shortID(a.ID, m.verbose))
			case allocStopped:
				delete(pending, a.ID)
			}
		}
	}
	switch {
	case failed == 0:
		fmt.Fprintf(out, "==> %d of %d %s started\n", started, len(m.placed), noun)
	default:
		what := "failed"
		if !isService(f.job) {
			what = "could not start a task"
		}
		fmt.Fprintf(out, "==> %d of %d %s %s; see drover alloc status %s\n", failed, len(m.placed), noun, what, failedIDs[0])
	}
	return failed, false, true
}

// allocProgress is where a followed allocation stands.
type allocProgress int

const (
	allocWaiting allocProgress = iota
	allocStarted
	allocFailed
	allocStopped // stopped before it started (the job was stopped or updated)
)

// check prints what is new about one allocation and says where it stands.
func (f *allocFollower) check(a *structs.AllocListStub) allocProgress {
	m, out := f.m, f.m.e.stdout
	id := shortID(a.ID, m.verbose)
	states, err := a.TaskStates.Map()
	if err != nil {
		states = nil // undecodable task states: go by the client status alone
	}
	startFailed := false
	for _, name := range sortedKeys(states) {
		ts := states[name]
		if ts == nil {
			continue
		}
		key := a.ID + "/" + name
		for _, ev := range ts.Events[min(f.reported[key], len(ts.Events)):] {
			if startFailures[ev.Type] {
				startFailed = true
			}
			if followedEvents[ev.Type] {
				fmt.Fprintf(out, "    Allocation %q task %q: %s: %s\n", id, name, ev.Type, taskEventText(ev))
			}
		}
		f.reported[key] = len(ts.Events)
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusRunning, structs.AllocClientStatusComplete:
		fmt.Fprintf(out, "    Allocation %q status %q\n", id, a.ClientStatus)
		return allocStarted
	case structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		fmt.Fprintf(out, "    Allocation %q status %q (%s)\n", id, a.ClientStatus, orNone(a.ClientDescription))
		return allocFailed
	}
	switch {
	case a.DesiredStatus != structs.AllocDesiredStatusRun:
		fmt.Fprintf(out, "    Allocation %q desired status %q (%s)\n", id, a.DesiredStatus, orNone(a.DesiredDescription))
		return allocStopped
	case startFailed && !isService(f.job):
		fmt.Fprintf(out, "    Allocation %q could not start a task; the client retries it per the restart policy\n", id)
		return allocFailed
	}
	return allocWaiting
}

// taskFailureTable lists, under a job's allocations, each task that failed
// or could not start, with the latest event that says why (Nomad's job
// status shows only the allocations' statuses; alloc status has every
// event). Nothing is written when no task failed.
func taskFailureTable(e *env, w io.Writer, allocs []*structs.AllocListStub, verbose bool) {
	type row struct {
		alloc, task string
		ev          *structs.TaskEvent
		create      uint64
	}
	var rows []row
	for _, a := range allocs {
		states, err := a.TaskStates.Map()
		if err != nil {
			continue
		}
		for _, name := range sortedKeys(states) {
			if ev := failureEvent(states[name]); ev != nil {
				rows = append(rows, row{shortID(a.ID, verbose), name, ev, a.CreateIndex})
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].create > rows[j].create })
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Task Failures")
	t := newTable(w)
	t.row("Alloc ID", "Task", "Time", "Type", "Description")
	for _, r := range rows {
		t.row(r.alloc, r.task, e.formatTime(time.Unix(0, r.ev.Time)), r.ev.Type, taskEventText(r.ev))
	}
	t.flush()
}

// failureEvent returns the latest event explaining why a task failed or
// could not start, or nil when it did not fail: a task that is not running
// and could not start, or a dead task marked failed (its last non-zero
// exit, or the failure that ended it).
func failureEvent(ts *structs.TaskState) *structs.TaskEvent {
	if ts == nil || ts.State == structs.TaskStateRunning {
		return nil
	}
	for i := len(ts.Events) - 1; i >= 0; i-- {
		ev := ts.Events[i]
		switch {
		case startFailures[ev.Type]:
			return ev
		case ev.Type == structs.TaskStarted && !ts.Failed:
			return nil // started after the last failure
		case ts.Failed && ev.Type == structs.TaskTerminated && (ev.ExitCode != 0 || ev.Signal != 0):
			return ev
		}
	}
	if ts.Failed {
		for i := len(ts.Events) - 1; i >= 0; i-- {
			if ts.Events[i].FailsTask {
				return ts.Events[i]
			}
		}
	}
	return nil
}

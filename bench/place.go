package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/backoff"
)

// placeCounts aggregates the jobs' summaries: every watcher adds the
// change it saw, and the first to push a total to the target stamps it.
type placeCounts struct {
	target           int64
	start            time.Time
	placed, running  atomic.Int64
	placedAt         atomic.Int64 // ns since start; 0 until reached
	runningAt        atomic.Int64
	runningReachedCh chan struct{}
	runningOnce      sync.Once
}

func newPlaceCounts(target int, start time.Time) *placeCounts {
	return &placeCounts{target: int64(target), start: start, runningReachedCh: make(chan struct{})}
}

// add applies a watcher's deltas.
func (p *placeCounts) add(dPlaced, dRunning int64, now time.Time) {
	elapsed := max(now.Sub(p.start).Nanoseconds(), 1)
	if dPlaced != 0 && p.placed.Add(dPlaced) >= p.target {
		p.placedAt.CompareAndSwap(0, elapsed)
	}
	if dRunning != 0 && p.running.Add(dRunning) >= p.target {
		p.runningAt.CompareAndSwap(0, elapsed)
		p.runningOnce.Do(func() { close(p.runningReachedCh) })
	}
}

// summaryCounts returns a summary's placed (every non-queued state) and
// running (running or complete) allocations.
func summaryCounts(s *nomad.JobSummary) (placed, running int64) {
	if s == nil {
		return 0, 0
	}
	for _, tg := range s.Summary {
		placed += int64(tg.Starting + tg.Running + tg.Complete + tg.Failed + tg.Lost + tg.Unknown)
		running += int64(tg.Running + tg.Complete)
	}
	return placed, running
}

// watchSummary follows one job's summary with blocking queries from
// index on, adding its changes to counts, until the job is fully running
// or ctx ends. It asks client ci, and the next live one after an error.
func (r *runner) watchSummary(ctx context.Context, ci int, jobID string, count int64, index uint64, counts *placeCounts) {
	var placed, running int64
	for ctx.Err() == nil {
		q := (&nomad.QueryOptions{WaitIndex: index, WaitTime: summaryWait, AllowStale: r.cfg.Stale}).WithContext(ctx)
		sum, meta, err := r.client(ci).Jobs().Summary(jobID, q)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ci++
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		now := time.Now()
		p, run := summaryCounts(sum)
		counts.add(p-placed, run-running, now)
		placed, running = p, run
		if running >= count {
			return
		}
		if meta.LastIndex > index {
			index = meta.LastIndex
		}
	}
}

// evalResolver finds when evaluations completed: workers follow each
// evaluation with blocking queries until it is terminal, and record its
// ModifyTime minus the write's start.
type evalResolver struct {
	r       *runner
	queue   chan evalReq
	wg      sync.WaitGroup
	lat     latencies
	pending atomic.Int64
	done    atomic.Int64
}

type evalReq struct {
	id    string
	start time.Time
	ci    int // client index (see runner.client)
}

func (r *runner) newEvalResolver(ctx context.Context, workers int) *evalResolver {
	e := &evalResolver{r: r, queue: make(chan evalReq, 1<<16)}
	for range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for req := range e.queue {
				e.resolve(ctx, req)
			}
		}()
	}
	return e
}

// add queues an evaluation (ignored when id is empty).
func (e *evalResolver) add(id string, start time.Time, ci int) {
	if id == "" {
		return
	}
	e.pending.Add(1)
	e.queue <- evalReq{id: id, start: start, ci: ci}
}

func (e *evalResolver) resolve(ctx context.Context, req evalReq) {
	defer e.pending.Add(-1)
	if lat, ok := e.r.waitEval(ctx, req.ci, req.id, req.start, time.Time{}); ok {
		e.lat.add(lat)
		e.done.Add(1)
	}
}

// waitEval follows an evaluation with blocking queries until it is
// terminal (complete, failed or canceled), ctx ends or the deadline (if
// not zero) passes, and returns its ModifyTime minus start. It asks
// client ci, and the next live one after an error.
func (r *runner) waitEval(ctx context.Context, ci int, id string, start, deadline time.Time) (time.Duration, bool) {
	if id == "" {
		return 0, false
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	var index uint64
	for ctx.Err() == nil {
		q := (&nomad.QueryOptions{WaitIndex: index, WaitTime: summaryWait, AllowStale: r.cfg.Stale}).WithContext(ctx)
		ev, meta, err := r.client(ci).Evaluations().Info(id, q)
		if err != nil {
			ci++
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		switch ev.Status {
		case "complete", "failed", "canceled":
			done := time.Unix(0, ev.ModifyTime)
			if ev.ModifyTime == 0 {
				done = time.Now()
			}
			return max(done.Sub(start), 0), true
		}
		if meta.LastIndex > index {
			index = meta.LastIndex
		}
	}
	return 0, false
}

// finish waits up to timeout for the queued evaluations; it returns the
// latencies and how many were left unresolved.
func (e *evalResolver) finish(cancel context.CancelFunc, timeout time.Duration) (Percentiles, int) {
	close(e.queue)
	waited := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(timeout):
		cancel()
		<-waited
	}
	return e.lat.summary(), int(e.pending.Load())
}

// perJobWatchLimit: up to this many jobs, each job's summary is followed
// with its own blocking query (exact); above it, one poller reads every
// job's summary from the job list every listPollEvery (an agent allows a
// client about 100 connections, and a Drover job list does not block on
// summary changes).
const (
	perJobWatchLimit = 32
	listPollEvery    = 200 * time.Millisecond
)

// pollJobList reads the summaries of every job with the prefix from the
// job list until every allocation runs or ctx ends.
func (r *runner) pollJobList(ctx context.Context, counts *placeCounts) {
	var placed, running int64
	t := time.NewTicker(listPollEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		q := (&nomad.QueryOptions{Prefix: r.jobPrefix(), AllowStale: r.cfg.Stale}).WithContext(ctx)
		jobs, _, err := r.client(i).Jobs().List(q)
		if err == nil {
			var p, run int64
			for _, j := range jobs {
				jp, jr := summaryCounts(j.JobSummary)
				p, run = p+jp, run+jr
			}
			counts.add(p-placed, run-running, time.Now())
			placed, running = p, run
			if running >= counts.target {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Job writes are retried for up to writeRetryFor after a refused
// connection (429: the agent never read the request), a transport error
// (the agent died) or a 5xx answer (no leader during an election, a
// forward to a dead leader), each time through the next live agent.
const (
	writeRetryFor   = time.Minute
	writeRetryBase  = 50 * time.Millisecond
	writeRetryLimit = time.Second
)

// write runs fn with client ci, retrying as above; retried writes are
// counted for the result's notes.
func (r *runner) write(ctx context.Context, ci int, fn func(c *nomad.Client) error) error {
	attempt := 0
	return backoff.Retry(ctx, backoff.New(writeRetryBase, writeRetryLimit), writeRetryFor, retryableWrite, func() error {
		err := fn(r.client(ci + attempt))
		if err != nil && retryableWrite(err) && ctx.Err() == nil {
			if attempt == 0 {
				r.retried.Add(1)
			}
			r.firstRetry.CompareAndSwap(nil, err.Error())
		}
		attempt++
		return err
	})
}

// register sends one job registration (see write).
func (r *runner) register(ctx context.Context, ci int, job *nomad.Job) (*nomad.JobRegisterResponse, error) {
	var resp *nomad.JobRegisterResponse
	err := r.write(ctx, ci, func(c *nomad.Client) error {
		var err error
		resp, _, err = c.Jobs().Register(job, (&nomad.WriteOptions{}).WithContext(ctx))
		return err
	})
	return resp, err
}

// retryableWrite reports whether another attempt at a job write may
// succeed: an agent's 429 or 5xx answer, or a transport error.
func retryableWrite(err error) bool {
	var ue nomad.UnexpectedResponseError
	if errors.As(err, &ue) {
		return ue.StatusCode() == http.StatusTooManyRequests || ue.StatusCode() >= http.StatusInternalServerError
	}
	var ne *url.Error
	return errors.As(err, &ne) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// placeJobID is the ID of a place scenario's i-th job.
func (r *runner) placeJobID(i int) string { return fmt.Sprintf("%s%05d", r.jobPrefix(), i) }

// runPlace registers the scenario's jobs at once (Concurrency writes in
// flight) and waits until every allocation is placed and running.
func (r *runner) runPlace(ctx context.Context) error {
	sc := r.cfg.Scenario
	total := sc.AllocTotal()
	r.res.Jobs, r.res.Allocs = sc.Jobs, total

	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	evalCtx, cancelEvals := context.WithCancel(ctx)
	defer cancelEvals()
	evals := r.newEvalResolver(evalCtx, DefaultEvalWorkers)
	var writeLat latencies
	var submitted, failed atomic.Int64
	var firstErr atomic.Value

	r.start = time.Now()
	counts := newPlaceCounts(total, r.start)
	r.setProgress(func() string {
		return fmt.Sprintf("%s %s | submitted %d/%d | placed %d/%d | running %d/%d | evals %d/%d%s",
			sc.Name, r.since(), submitted.Load(), sc.Jobs, counts.placed.Load(), total,
			counts.running.Load(), total, evals.done.Load(), submitted.Load(), r.sourceStatus())
	})

	var writers, watchers sync.WaitGroup
	perJob := sc.Jobs <= perJobWatchLimit
	if !perJob {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			r.pollJobList(watchCtx, counts)
		}()
	}
	sem := make(chan struct{}, r.cfg.Concurrency)
	for i := range sc.Jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		writers.Add(1)
		go func() {
			defer writers.Done()
			id := r.placeJobID(i)
			start := time.Now()
			resp, err := r.register(ctx, i, r.job(id, sc.Count))
			<-sem
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Errorf("registering %s: %w", id, err))
				return
			}
			writeLat.add(time.Since(start))
			submitted.Add(1)
			evals.add(resp.EvalID, start, i)
			if perJob {
				watchers.Add(1)
				go func() {
					defer watchers.Done()
					r.watchSummary(watchCtx, i, id, int64(sc.Count), resp.JobModifyIndex, counts)
				}()
			}
		}()
	}
	writers.Wait()
	r.res.RegisterSeconds = time.Since(r.start).Seconds()
	r.res.WriteLatency = latencyOf(writeLat.summary())

	var err error
	if n := failed.Load(); n > 0 {
		err = fmt.Errorf("%d of %d registrations failed; first: %v", n, sc.Jobs, firstErr.Load())
	} else {
		timer := time.NewTimer(r.cfg.Timeout)
		select {
		case <-counts.runningReachedCh:
		case <-timer.C:
			err = fmt.Errorf("timed out after %v: placed %d, running %d of %d",
				r.cfg.Timeout, counts.placed.Load(), counts.running.Load(), total)
		case <-ctx.Done():
			err = ctx.Err()
		}
		timer.Stop()
	}
	cancelWatch()
	watchers.Wait()

	r.res.Placed, r.res.Running = int(counts.placed.Load()), int(counts.running.Load())
	if at := counts.placedAt.Load(); at > 0 {
		r.res.PlacedSeconds = time.Duration(at).Seconds()
		r.res.PlacementsPerSec = float64(total) / r.res.PlacedSeconds
	}
	if at := counts.runningAt.Load(); at > 0 {
		r.res.RunningSeconds = time.Duration(at).Seconds()
	}
	lat, unresolved := evals.finish(cancelEvals, evalDrainTimeout)
	r.res.EvalLatency, r.res.EvalsUnresolved = latencyOf(lat), unresolved
	return err
}

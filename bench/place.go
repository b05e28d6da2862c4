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
// index on, adding its changes (from placed and running, the counts
// already added for it) to counts, until the job is fully running or ctx
// ends. It asks client ci, and the next live one after an error.
func (r *runner) watchSummary(ctx context.Context, ci int, jobID string, count int64, index uint64, placed, running int64, counts *placeCounts) {
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

// evalResolver finds when the run's evaluations completed. An
// evaluation's latency is its ModifyTime (stamped by the servers when it
// became terminal) minus its write's start, so nothing watches the
// evaluations while the run goes on (thousands of blocking queries the
// servers would serve inside the measured window): finish reads the
// evaluation list once at the end and follows with blocking queries only
// the evaluations not terminal in it.
type evalResolver struct {
	r    *runner
	mu   sync.Mutex
	reqs []evalReq // guarded by mu
}

type evalReq struct {
	id    string
	start time.Time
	ci    int // client index (see runner.client)
}

func (r *runner) newEvalResolver() *evalResolver { return &evalResolver{r: r} }

// add records an evaluation (ignored when id is empty).
func (e *evalResolver) add(id string, start time.Time, ci int) {
	if id == "" {
		return
	}
	e.mu.Lock()
	e.reqs = append(e.reqs, evalReq{id: id, start: start, ci: ci})
	e.mu.Unlock()
}

// finish resolves the recorded evaluations, waiting up to timeout for
// those not yet terminal (DefaultEvalWorkers followed at a time); it
// returns the latencies and how many were left unresolved.
func (e *evalResolver) finish(ctx context.Context, timeout time.Duration) (Percentiles, int) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e.mu.Lock()
	reqs := e.reqs
	e.mu.Unlock()
	var lat latencies
	terminal := e.r.terminalEvals(ctx)
	var rest []evalReq
	for _, req := range reqs {
		if done, ok := terminal[req.id]; ok {
			lat.add(max(done.Sub(req.start), 0))
		} else {
			rest = append(rest, req)
		}
	}
	queue := make(chan evalReq)
	var wg sync.WaitGroup
	var resolved atomic.Int64
	for range min(DefaultEvalWorkers, len(rest)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range queue {
				if d, ok := e.r.waitEval(ctx, req.ci, req.id, req.start, time.Time{}); ok {
					lat.add(d)
					resolved.Add(1)
				}
			}
		}()
	}
	for _, req := range rest {
		queue <- req
	}
	close(queue)
	wg.Wait()
	return lat.summary(), len(rest) - int(resolved.Load())
}

// terminalEvals lists every evaluation (all pages) and returns when each
// terminal one completed (its ModifyTime); nil if the list failed.
func (r *runner) terminalEvals(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	q := (&nomad.QueryOptions{AllowStale: r.cfg.Stale}).WithContext(ctx)
	for {
		evals, meta, err := r.client(0).Evaluations().List(q)
		if err != nil {
			return nil
		}
		for _, ev := range evals {
			if evalTerminal(ev.Status) && ev.ModifyTime != 0 {
				out[ev.ID] = time.Unix(0, ev.ModifyTime)
			}
		}
		if meta.NextToken == "" {
			return out
		}
		q.NextToken = meta.NextToken
	}
}

// evalTerminal reports whether an evaluation status is final.
func evalTerminal(status string) bool {
	return status == "complete" || status == "failed" || status == "canceled"
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
		if evalTerminal(ev.Status) {
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

// perJobWatchLimit: up to this many jobs, each job's summary is followed
// with its own blocking query (exact: it answers when the summary
// changes). With more jobs, one poller reads every job's summary from the
// job list (an agent allows a client about 100 connections, and a Drover
// job list does not block on summary changes), every listPollEvery near
// the end and less often (up to listPollMax) while the allocations left
// would take long at the rate seen so far; once no more than
// perJobWatchLimit jobs have allocations not yet running, those jobs get
// their own blocking queries and the poller stops.
const (
	perJobWatchLimit = 32
	listPollEvery    = 200 * time.Millisecond
	listPollMax      = time.Second
)

// listPollInterval is the wait before the next job list read: a tenth of
// the time the nearer of the remaining placements and starts would take
// at the rates seen so far, within [listPollEvery, listPollMax].
func listPollInterval(counts *placeCounts, now time.Time) time.Duration {
	elapsed := now.Sub(counts.start).Seconds()
	next := listPollMax
	for _, done := range []int64{counts.placed.Load(), counts.running.Load()} {
		left := counts.target - done
		if done <= 0 || elapsed <= 0 {
			return listPollEvery // no rate yet
		}
		if left <= 0 {
			continue
		}
		eta := time.Duration(float64(left) / (float64(done) / elapsed) * float64(time.Second))
		next = min(next, eta/10)
	}
	return max(next, listPollEvery)
}

// jobListEntry is what the poller reads of a job list stub.
type jobListEntry struct {
	ID         string
	JobSummary *nomad.JobSummary
}

// tailJob is a job the poller hands to its own blocking query, with the
// counts the list last showed for it.
type tailJob struct {
	id              string
	placed, running int64
}

// pollJobList reads the summaries of every job with the prefix from the
// job list until every allocation runs or ctx ends, or until the list
// holds all the scenario's jobs and at most perJobWatchLimit of them are
// not fully running: it then passes those to tail and returns.
func (r *runner) pollJobList(ctx context.Context, counts *placeCounts, jobCount int, count int64, tail func([]tailJob)) {
	var placed, running int64
	for i := 0; ; i++ {
		q := (&nomad.QueryOptions{Prefix: r.jobPrefix(), AllowStale: r.cfg.Stale}).WithContext(ctx)
		var jobs []jobListEntry
		_, err := r.client(i).Raw().Query("/v1/jobs", &jobs, q)
		if err == nil {
			var p, run int64
			var unfinished []tailJob
			for _, j := range jobs {
				jp, jr := summaryCounts(j.JobSummary)
				p, run = p+jp, run+jr
				if jr < count {
					unfinished = append(unfinished, tailJob{id: j.ID, placed: jp, running: jr})
				}
			}
			counts.add(p-placed, run-running, time.Now())
			placed, running = p, run
			if running >= counts.target {
				return
			}
			if len(jobs) >= jobCount && len(unfinished) <= perJobWatchLimit {
				tail(unfinished)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(listPollInterval(counts, time.Now())):
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
	evals := r.newEvalResolver()
	var writeLat latencies
	var submitted, failed atomic.Int64
	var firstErr atomic.Value

	r.start = time.Now()
	counts := newPlaceCounts(total, r.start)
	r.setProgress(func() string {
		return fmt.Sprintf("%s %s | submitted %d/%d | placed %d/%d | running %d/%d%s",
			sc.Name, r.since(), submitted.Load(), sc.Jobs, counts.placed.Load(), total,
			counts.running.Load(), total, r.sourceStatus())
	})

	var writers, watchers sync.WaitGroup
	perJob := sc.Jobs <= perJobWatchLimit
	if !perJob {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			r.pollJobList(watchCtx, counts, sc.Jobs, int64(sc.Count), func(jobs []tailJob) {
				for i, j := range jobs {
					watchers.Add(1)
					go func() {
						defer watchers.Done()
						// The list's index is the jobs table's: the first
						// query answers at once with the current summary.
						r.watchSummary(watchCtx, i, j.id, int64(sc.Count), 0, j.placed, j.running, counts)
					}()
				}
			})
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
					r.watchSummary(watchCtx, i, id, int64(sc.Count), resp.JobModifyIndex, 0, 0, counts)
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
	lat, unresolved := evals.finish(ctx, evalDrainTimeout)
	r.res.EvalLatency, r.res.EvalsUnresolved = latencyOf(lat), unresolved
	return err
}

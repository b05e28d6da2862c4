package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// churnOp is one kind of job write.
type churnOp string

const (
	opRegister churnOp = "register"
	opScale    churnOp = "scale"
	opStop     churnOp = "stop"
)

// churnState is the set of live jobs; a job being written is taken out
// so that no two workers write it at once.
type churnState struct {
	mu   sync.Mutex
	rng  *rand.Rand     // guarded by mu
	live []string       // guarded by mu
	seq  int            // guarded by mu
	ops  map[string]int // guarded by mu
	want int            // jobs to keep alive (about)
}

// next picks an operation and, for scale and stop, takes a live job.
func (s *churnState) next() (churnOp, string, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := opRegister
	switch n := len(s.live); {
	case n < s.want/2:
	case n >= s.want:
		op = []churnOp{opScale, opStop}[s.rng.IntN(2)]
	default:
		if x := s.rng.IntN(10); x >= 4 {
			op = opScale
			if x >= 8 {
				op = opStop
			}
		}
	}
	if op == opRegister {
		s.seq++
		return op, "", s.seq, 0
	}
	i := s.rng.IntN(len(s.live))
	id := s.live[i]
	s.live[i] = s.live[len(s.live)-1]
	s.live = s.live[:len(s.live)-1]
	return op, id, 0, s.rng.IntN(1 << 30)
}

// done records a finished write; a registered or scaled job is live again.
func (s *churnState) done(op churnOp, id string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.ops[string(op)]++
	}
	if op != opStop && id != "" && (ok || op == opScale) {
		s.live = append(s.live, id)
	}
}

func (s *churnState) liveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// runChurn registers, scales and stops jobs for the duration in a closed
// loop: each of Concurrency workers makes a job write, waits for its
// evaluation to complete, and goes on. Throughput is completed writes per
// second; latency is write -> evaluation complete.
func (r *runner) runChurn(ctx context.Context) error {
	sc := r.cfg.Scenario
	var writeLat, evalLat latencies
	var writes, errs, unresolved atomic.Int64
	var firstErr atomic.Value
	st := &churnState{rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), 1)), ops: map[string]int{}, want: max(sc.Jobs, 1)}

	r.start = time.Now()
	deadline := r.start.Add(r.cfg.Duration)
	r.setProgress(func() string {
		el := time.Since(r.start)
		return fmt.Sprintf("%s %s/%s | writes %d (%.0f/s) | live jobs %d | errors %d%s",
			sc.Name, el.Round(time.Second), r.cfg.Duration, writes.Load(), float64(writes.Load())/max(el.Seconds(), 0.001),
			st.liveCount(), errs.Load(), r.sourceStatus())
	})
	fail := func(err error) {
		if ctx.Err() == nil {
			errs.Add(1)
			firstErr.CompareAndSwap(nil, err)
		}
	}
	var wg sync.WaitGroup
	for w := range r.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				op, id, seq, pick := st.next()
				count := 1 + pick%max(sc.Count, 1)
				if op == opRegister {
					id = fmt.Sprintf("%s%06d", r.jobPrefix(), seq)
					count = 1 + seq%max(sc.Count, 1)
				}
				start := time.Now()
				var evalID string
				var err error
				switch op {
				case opRegister, opScale:
					var resp *nomad.JobRegisterResponse
					if resp, err = r.register(ctx, w, r.job(id, count)); err == nil {
						evalID = resp.EvalID
					}
				case opStop:
					err = r.write(ctx, w, func(c *nomad.Client) error {
						var err error
						evalID, _, err = c.Jobs().Deregister(id, true, (&nomad.WriteOptions{}).WithContext(ctx))
						return err
					})
				}
				st.done(op, id, err == nil)
				if err != nil {
					fail(fmt.Errorf("%s %s: %w", op, id, err))
					continue
				}
				writeLat.add(time.Since(start))
				writes.Add(1)
				lat, ok := r.waitEval(ctx, w, evalID, start, deadline.Add(evalDrainTimeout))
				switch {
				case ok:
					evalLat.add(lat)
				case evalID != "":
					unresolved.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	window := time.Since(r.start)
	r.res.Ops = int(writes.Load())
	r.res.OpsPerSec = float64(r.res.Ops) / window.Seconds()
	st.mu.Lock()
	r.res.OpsByKind = st.ops
	st.mu.Unlock()
	r.res.Jobs = st.liveCount()
	r.res.WriteLatency = latencyOf(writeLat.summary())
	r.res.EvalLatency, r.res.EvalsUnresolved = latencyOf(evalLat.summary()), int(unresolved.Load())
	if n := errs.Load(); n > 0 {
		return fmt.Errorf("%d job writes failed; first: %v", n, firstErr.Load())
	}
	return nil
}

// runIdle lets the nodes heartbeat for the duration.
func (r *runner) runIdle(ctx context.Context) error {
	sc := r.cfg.Scenario
	r.start = time.Now()
	r.setProgress(func() string {
		return fmt.Sprintf("%s %s/%s | idle%s", sc.Name, time.Since(r.start).Round(time.Second), r.cfg.Duration, r.sourceStatus())
	})
	t := time.NewTimer(r.cfg.Duration)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package evalbroker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// waitForWaiters spins until n Dequeue callers are blocked in b.
func waitForWaiters(t *testing.T, b *Broker, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.waiters)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blocked dequeue callers, want %d", got, n)
		}
		runtime.Gosched()
	}
}

type dequeueResult struct {
	eval  *structs.Evaluation
	token string
	err   error
}

func goDequeue(b *Broker, timeout time.Duration, types ...string) <-chan dequeueResult {
	out := make(chan dequeueResult, 1)
	go func() {
		e, tok, err := b.Dequeue(types, timeout)
		out <- dequeueResult{e, tok, err}
	}()
	return out
}

// recv waits for a blocked Dequeue to return, failing after a deadline
// instead of hanging on a lost wake-up.
func recv(t *testing.T, res <-chan dequeueResult) dequeueResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("blocked Dequeue did not return: lost wake-up")
		return dequeueResult{}
	}
}

func TestBlockedDequeueWakesOnEnqueue(t *testing.T) {
	b, _ := testBroker(t, nil)
	res := goDequeue(b, 0, "batch", "service")
	waitForWaiters(t, b, 1)
	e := mockEval("web", 50, "service")
	b.Enqueue(e)
	r := recv(t, res)
	if r.err != nil || r.eval != e || r.token == "" {
		t.Fatalf("dequeue = %v, %q, %v; want the enqueued eval", r.eval, r.token, r.err)
	}
}

func TestDequeueTimeout(t *testing.T) {
	b, clock := testBroker(t, nil)
	res := goDequeue(b, 5*time.Second, "service")
	waitForWaiters(t, b, 1)
	clock.Advance(5*time.Second - time.Nanosecond)
	select {
	case r := <-res:
		t.Fatalf("returned before the timeout: %+v", r)
	default:
	}
	clock.Advance(time.Nanosecond)
	r := recv(t, res)
	if r.eval != nil || r.token != "" || r.err != nil {
		t.Fatalf("timeout result = %+v, want all zero", r)
	}
	waitForWaiters(t, b, 0)
}

func TestDequeueContextCanceled(t *testing.T) {
	b, _ := testBroker(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := b.DequeueContext(ctx, []string{"service"})
		done <- err
	}()
	waitForWaiters(t, b, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestDequeueRejectsNoTypes(t *testing.T) {
	b, _ := testBroker(t, nil)
	if _, _, err := b.Dequeue(nil, time.Second); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("err = %v, want invalid", err)
	}
}

func TestDisableFlushesAndWakesWaiters(t *testing.T) {
	b, clock := testBroker(t, nil)
	b.Enqueue(mockEval("web", 50, "service"))
	b.Enqueue(mockEval("web", 50, "service")) // pending behind the first
	delayed := mockEval("api", 50, "service")
	delayed.WaitUntil = clock.Now().Add(time.Minute)
	b.Enqueue(delayed)
	mustDequeue(t, b, "service") // unacked, with a nack timer

	var results []<-chan dequeueResult
	for range 3 {
		results = append(results, goDequeue(b, 0, "batch"))
	}
	waitForWaiters(t, b, 3)
	b.SetEnabled(false)
	for i, res := range results {
		r := recv(t, res)
		if r.eval != nil || !errors.Is(r.err, structs.ErrBrokerDisabled) {
			t.Fatalf("waiter %d: %+v, want no eval and broker disabled", i, r)
		}
	}
	if s := b.Stats(); s.TotalReady+s.TotalUnacked+s.TotalPending+s.TotalWaiting+s.TotalCancelable != 0 {
		t.Fatalf("stats after disable = %+v, want all zero", s)
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers still pending after disable", n)
	}
	if _, _, err := b.Dequeue([]string{"service"}, time.Second); !errors.Is(err, structs.ErrBrokerDisabled) {
		t.Fatalf("dequeue while disabled: err = %v", err)
	}
	b.SetEnabled(true)
	clock.Advance(time.Hour)
	mustBeEmpty(t, b, "service")
}

// TestNoLostWakeup: a waiter woken for one queue that takes an eval from
// another must pass the wake-up on, or the first eval is stranded while a
// waiter for it sleeps. Both evals arrive in one batch, so the two-type
// waiter always takes the higher-priority batch eval; the service eval is
// gated behind it (see gate) and its release on the ack must wake the
// service-only waiter.
func TestNoLostWakeup(t *testing.T) {
	for i := range 50 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			b, _ := testBroker(t, nil)
			both := goDequeue(b, 0, "service", "batch")
			waitForWaiters(t, b, 1)
			serviceOnly := goDequeue(b, 0, "service")
			waitForWaiters(t, b, 2)
			svc, bat := mockEval("a", 50, "service"), mockEval("b", 90, "batch")
			b.EnqueueAll(map[*structs.Evaluation]string{svc: "", bat: ""})
			for _, want := range []struct {
				res  <-chan dequeueResult
				eval *structs.Evaluation
			}{{both, bat}, {serviceOnly, svc}} {
				r := recv(t, want.res)
				if r.eval != want.eval || r.err != nil {
					t.Fatalf("dequeue = %+v, want %s", r, want.eval.ID)
				}
				mustAck(t, b, r.eval, r.token)
			}
		})
	}
}

func TestConcurrentDequeueDeliversEachEvalOnce(t *testing.T) {
	const evals, workers = 3000, 16
	b, _ := testBroker(t, nil)
	types := []string{"service", "batch", "system"}
	var (
		seen      sync.Map
		delivered atomic.Int64
		dupes     atomic.Int64
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e, tok, err := b.DequeueContext(ctx, types)
				if err != nil {
					return
				}
				if _, loaded := seen.LoadOrStore(e.ID, true); loaded {
					dupes.Add(1)
				}
				if err := b.Ack(e.ID, tok); err != nil {
					t.Errorf("ack: %v", err)
				}
				if delivered.Add(1) == evals {
					cancel()
				}
			}
		}()
	}
	var producers sync.WaitGroup
	for p := range 4 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for i := p; i < evals; i += 4 {
				b.Enqueue(mockEval(fmt.Sprintf("job-%d", i), i%100, types[i%len(types)]))
			}
		}()
	}
	producers.Wait()
	wg.Wait()
	if got := delivered.Load(); got != evals || dupes.Load() != 0 {
		t.Fatalf("delivered %d (dupes %d), want %d exactly once", got, dupes.Load(), evals)
	}
}

// A local (leader-process) waiter is woken before remote ones that have
// waited longer; among remote waiters the order stays FIFO.
func TestLocalWaiterWokenFirst(t *testing.T) {
	b, _ := testBroker(t, nil)
	remote := goDequeue(b, 0, "batch")
	waitForWaiters(t, b, 1)
	local := make(chan dequeueResult, 1)
	go func() {
		e, tok, err := b.DequeueLocal(context.Background(), []string{"batch"})
		local <- dequeueResult{e, tok, err}
	}()
	waitForWaiters(t, b, 2)

	first := mockEval("web", 50, "batch")
	b.Enqueue(first)
	if r := recv(t, local); r.err != nil || r.eval != first {
		t.Fatalf("local dequeue = %v, %v; want the first eval", r.eval, r.err)
	}
	select {
	case r := <-remote:
		t.Fatalf("remote waiter got %v while a local one waited", r.eval)
	default:
	}
	second := mockEval("api", 50, "batch")
	b.Enqueue(second)
	if r := recv(t, remote); r.err != nil || r.eval != second {
		t.Fatalf("remote dequeue = %v, %v; want the second eval", r.eval, r.err)
	}
}

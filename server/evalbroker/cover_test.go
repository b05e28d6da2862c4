package evalbroker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/structs"
)

func mustCover(t testing.TB, b *Broker, job string) *Hold {
	t.Helper()
	h, ok := b.Cover("default", job)
	if !ok {
		t.Fatalf("Cover(%s) = false, want an evaluation waiting for delivery", job)
	}
	return h
}

func mustNotCover(t testing.TB, b *Broker, job string) {
	t.Helper()
	if _, ok := b.Cover("default", job); ok {
		t.Fatalf("Cover(%s) = true, want false", job)
	}
}

func coverIndex(t testing.TB, b *Broker, e *structs.Evaluation, token string) uint64 {
	t.Helper()
	index, err := b.CoverIndex(context.Background(), e.ID, token)
	if err != nil {
		t.Fatalf("CoverIndex(%s): %v", e.ID, err)
	}
	return index
}

// A node event is absorbed by a ready evaluation of the job, and the
// delivery that takes it waits for the event's index; an evaluation
// already delivered absorbs nothing.
func TestCoverReadyEvaluation(t *testing.T) {
	b, _ := testBroker(t, nil)
	mustNotCover(t, b, "web")
	e := mockEval("web", 50, "system")
	b.Enqueue(e)
	h1 := mustCover(t, b, "web")
	h2 := mustCover(t, b, "web")
	got, token := mustDequeue(t, b, "system")
	mustNotCover(t, b, "web") // delivered: its worker may plan from an older snapshot

	done := make(chan uint64)
	go func() { done <- coverIndex(t, b, got, token) }()
	h1.Done(40)
	select {
	case idx := <-done:
		t.Fatalf("CoverIndex returned %d with a hold still open", idx)
	case <-time.After(20 * time.Millisecond):
	}
	h2.Done(30)
	if idx := <-done; idx != 40 {
		t.Fatalf("CoverIndex = %d, want 40", idx)
	}
	h2.Done(99) // a second Done does nothing
	if idx := coverIndex(t, b, got, token); idx != 40 {
		t.Fatalf("CoverIndex after a repeated Done = %d, want 40", idx)
	}
	mustAck(t, b, got, token)

	// The job's next delivery owes nothing.
	e2 := mockEval("web", 50, "system")
	b.Enqueue(e2)
	got, token = mustDequeue(t, b, "system")
	if idx := coverIndex(t, b, got, token); idx != 0 {
		t.Fatalf("CoverIndex of a later delivery = %d, want 0", idx)
	}
}

// An evaluation waiting behind the job's outstanding one covers; when the
// outstanding one is acked the newest waiter is delivered with the holds,
// whichever waiter the hold was taken against.
func TestCoverWaiterBehindOutstanding(t *testing.T) {
	b, _ := testBroker(t, nil)
	b.Enqueue(mockEval("web", 50, "service"))
	first, token := mustDequeue(t, b, "service")
	mustNotCover(t, b, "web")
	older := mockEval("web", 50, "service")
	older.ModifyIndex = 10
	b.Enqueue(older)
	h := mustCover(t, b, "web")
	h.Done(77)
	newer := mockEval("web", 50, "service")
	newer.ModifyIndex = 20
	b.Enqueue(newer)
	mustAck(t, b, first, token)
	got, token := mustDequeue(t, b, "service")
	if got.ID != newer.ID {
		t.Fatalf("delivered %s, want the newest waiter", got.ID)
	}
	if idx := coverIndex(t, b, got, token); idx != 77 {
		t.Fatalf("CoverIndex = %d, want 77", idx)
	}
	if c := b.Cancelable(0); len(c) != 1 || c[0].ID != older.ID {
		t.Fatalf("cancelable = %v, want the older waiter", c)
	}
}

// A nack hands the delivery's holds to the job's next delivery: the same
// evaluation delivered again.
func TestCoverNackHandsHoldsBack(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) { c.CoverDelay = time.Second })
	e := mockEval("web", 50, "service")
	b.Enqueue(e)
	h := mustCover(t, b, "web")
	got, token := mustDequeue(t, b, "service")
	mustNack(t, b, got, token)
	// Held for the nack delay (1 s), within CoverDelay: still covers.
	h2 := mustCover(t, b, "web")
	h.Done(5)
	h2.Done(6)
	clock.Advance(DefaultInitialNackDelay)
	got, token = mustDequeue(t, b, "service")
	if idx := coverIndex(t, b, got, token); idx != 6 {
		t.Fatalf("CoverIndex after a nack = %d, want 6", idx)
	}
}

// A hold still open when its delivery is nacked follows the evaluation;
// its Done is seen by the next delivery.
func TestCoverOpenHoldAcrossNack(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) { c.InitialNackDelay = 0 })
	b.Enqueue(mockEval("web", 50, "service"))
	h := mustCover(t, b, "web")
	got, token := mustDequeue(t, b, "service")
	mustNack(t, b, got, token)
	clock.Advance(time.Millisecond)
	got, token = mustDequeue(t, b, "service")
	done := make(chan uint64)
	go func() { done <- coverIndex(t, b, got, token) }()
	h.Done(12)
	if idx := <-done; idx != 12 {
		t.Fatalf("CoverIndex = %d, want 12", idx)
	}
}

// Only evaluations due within CoverDelay cover; the failed queue never
// does, and its delivery leaves the holds to the job's next one.
func TestCoverDelayedAndFailed(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) {
		c.CoverDelay = time.Second
		c.DeliveryLimit = 1
	})
	later := mockEval("later", 50, "service")
	later.WaitUntil = clock.Now().Add(time.Minute)
	b.Enqueue(later)
	mustNotCover(t, b, "later")
	soon := mockEval("soon", 50, "service")
	soon.WaitUntil = clock.Now().Add(500 * time.Millisecond)
	b.Enqueue(soon)
	h := mustCover(t, b, "soon")
	h.Done(3)
	clock.Advance(time.Second)
	got, token := mustDequeue(t, b, "service")
	mustNack(t, b, got, token) // the delivery limit: to the failed queue
	mustNotCover(t, b, "soon")
	failed, ftoken := mustDequeue(t, b, FailedQueue)
	if _, err := b.CoverIndex(doneCtx, failed.ID, ftoken); err != nil {
		t.Fatalf("CoverIndex of a failed-queue delivery: %v", err)
	}
	follow := mockEval("soon", 50, "service")
	b.Enqueue(follow)
	mustAck(t, b, failed, ftoken)
	got, token = mustDequeue(t, b, "service")
	if idx := coverIndex(t, b, got, token); idx != 3 {
		t.Fatalf("CoverIndex of the follow-up = %d, want 3 (the hold survived the failed queue)", idx)
	}
}

// Disabling the broker refuses covers and releases CoverIndex waiters.
func TestCoverDisabled(t *testing.T) {
	b, _ := testBroker(t, nil)
	b.Enqueue(mockEval("web", 50, "service"))
	mustCover(t, b, "web")
	got, token := mustDequeue(t, b, "service")
	errc := make(chan error)
	go func() {
		_, err := b.CoverIndex(context.Background(), got.ID, token)
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.SetEnabled(false)
	if err := <-errc; !errors.Is(err, structs.ErrBrokerDisabled) {
		t.Fatalf("CoverIndex after disable: %v, want broker disabled", err)
	}
	mustNotCover(t, b, "web")
	if _, ok := b.Cover("default", ""); ok {
		t.Fatal("an evaluation without a job covers")
	}
}

// coverableCount recomputes what Broker.coverable must hold.
func coverableCount(b *Broker) map[jobKey]int {
	want := map[jobKey]int{}
	for name, q := range b.ready {
		if name == FailedQueue {
			continue
		}
		for _, it := range *q {
			if it.eval.JobID != "" {
				want[keyOf(it.eval)]++
			}
		}
	}
	for key, w := range b.pending {
		want[key] += len(w)
	}
	for _, it := range b.delayed {
		if it.coverable {
			want[keyOf(it.eval)]++
		}
	}
	return want
}

// stale reports an error for a delivery the broker nacked by its timeout.
func stale(err error) bool {
	return errors.Is(err, &structs.Error{Code: structs.ErrCodeNotFound}) ||
		errors.Is(err, &structs.Error{Code: structs.ErrCodeTokenMismatch})
}

// coverHold is one Cover in the property test.
type coverHold struct {
	h     *Hold
	job   string
	step  int
	index uint64
	done  bool
}

// coverDelivery is one delivery in the property test.
type coverDelivery struct {
	eval   *structs.Evaluation
	token  string
	step   int
	failed bool
}

// TestCoverNeverLosesAnEvent: whatever the interleaving of enqueues,
// deliveries, acks, nacks, delays and covers, every node event a Cover
// absorbed is planned by an acked delivery of its job that began after
// the Cover and waited for the event's index; and the broker's count of
// evaluations waiting for delivery stays exact.
func TestCoverNeverLosesAnEvent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b, clock := testBroker(t, func(c *Config) {
			c.CoverDelay = time.Second
			c.InitialNackDelay = 500 * time.Millisecond
			c.SubsequentNackDelay = 2 * time.Second
			c.DeliveryLimit = 3
		})
		jobs := []string{"a", "b", "c"}
		var (
			index   uint64
			step    int
			holds   []*coverHold
			out     []*coverDelivery
			covered = map[*coverHold]bool{}
		)
		enqueue := func(job string, wait time.Duration) {
			index++
			e := mockEval(job, 50, "service")
			e.CreateIndex, e.ModifyIndex = index, index
			if wait > 0 {
				e.WaitUntil = clock.Now().Add(wait)
			}
			b.Enqueue(e)
		}
		deliver := func(types ...string) bool {
			e, token := tryDequeue(t, b, types...)
			if e == nil {
				return false
			}
			out = append(out, &coverDelivery{eval: e, token: token, step: step, failed: types[0] == FailedQueue})
			return true
		}
		// finish acks d if its holds are done: CoverIndex must cover every
		// hold taken for its job before it was delivered.
		finish := func(i int) bool {
			d := out[i]
			idx, err := b.CoverIndex(doneCtx, d.eval.ID, d.token)
			switch {
			case stale(err):
				out = append(out[:i], out[i+1:]...) // nacked by its timeout
				return true
			case err != nil:
				return false // a worker would still be waiting
			}
			if err := b.Ack(d.eval.ID, d.token); err != nil {
				rt.Fatalf("ack: %v", err)
			}
			out = append(out[:i], out[i+1:]...)
			if d.failed {
				enqueue(d.eval.JobID, 0) // the leader's follow-up
				return true
			}
			for _, h := range holds {
				if h.job == d.eval.JobID && h.step < d.step && h.done && idx >= h.index {
					covered[h] = true
				}
			}
			return true
		}
		check := func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			want := coverableCount(b)
			if fmt.Sprint(want) != fmt.Sprint(b.coverable) {
				rt.Fatalf("coverable = %v, want %v", b.coverable, want)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"enqueue": func(rt *rapid.T) {
				wait := rapid.SampledFrom([]time.Duration{0, 0, 300 * time.Millisecond, 5 * time.Second}).Draw(rt, "wait")
				enqueue(rapid.SampledFrom(jobs).Draw(rt, "job"), wait)
			},
			"dequeue": func(rt *rapid.T) { deliver("service") },
			"dequeue_failed": func(rt *rapid.T) {
				deliver(FailedQueue)
			},
			"ack": func(rt *rapid.T) {
				if len(out) > 0 {
					finish(rapid.IntRange(0, len(out)-1).Draw(rt, "i"))
				}
			},
			"nack": func(rt *rapid.T) {
				if len(out) == 0 {
					return
				}
				i := rapid.IntRange(0, len(out)-1).Draw(rt, "i")
				if err := b.Nack(out[i].eval.ID, out[i].token); err != nil && !stale(err) {
					rt.Fatalf("nack: %v", err)
				}
				out = append(out[:i], out[i+1:]...)
			},
			"cover": func(rt *rapid.T) {
				job := rapid.SampledFrom(jobs).Draw(rt, "job")
				if h, ok := b.Cover("default", job); ok {
					index++
					holds = append(holds, &coverHold{h: h, job: job, step: step, index: index})
				}
			},
			"done": func(rt *rapid.T) {
				for _, h := range holds {
					if !h.done {
						h.done = true
						h.h.Done(h.index)
						return
					}
				}
			},
			"advance": func(rt *rapid.T) {
				clock.Advance(rapid.SampledFrom([]time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}).Draw(rt, "d"))
			},
			"": func(rt *rapid.T) {
				step++
				check()
			},
		})
		// Drain: every hold done, every delay passed, everything delivered
		// and acked.
		for _, h := range holds {
			if !h.done {
				h.done = true
				h.h.Done(h.index)
			}
		}
		for range 100 {
			step++
			clock.Advance(time.Minute)
			for deliver("service") || deliver(FailedQueue) {
			}
			for len(out) > 0 {
				if !finish(0) {
					_, err := b.CoverIndex(doneCtx, out[0].eval.ID, out[0].token)
					rt.Fatalf("delivery %s still waits with every hold done: %v", out[0].eval.ID, err)
				}
			}
			check()
			if s := b.Stats(); s.TotalReady+s.TotalUnacked+s.TotalPending+s.TotalWaiting == 0 {
				break
			}
		}
		for _, h := range holds {
			if !covered[h] {
				rt.Fatalf("hold %d of job %s (step %d) was never planned by a later delivery", h.index, h.job, h.step)
			}
		}
	})
}

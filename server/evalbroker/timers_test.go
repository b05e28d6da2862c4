package evalbroker

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

func TestNackTimeoutFires(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) { c.NackTimeout = 10 * time.Second })
	b.Enqueue(mockEval("web", 50, "service"))
	e, token := mustDequeue(t, b, "service")

	clock.Advance(10*time.Second - time.Nanosecond)
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("nacked before the timeout")
	}
	clock.Advance(time.Nanosecond)
	if _, ok := b.Outstanding(e.ID); ok {
		t.Fatal("still outstanding after the timeout")
	}
	if err := b.Ack(e.ID, token); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("ack after timeout: err = %v, want not found", err)
	}
	if got := b.Stats().TotalWaiting; got != 1 {
		t.Fatalf("TotalWaiting = %d, want 1 (redelivery delay)", got)
	}
	clock.Advance(DefaultInitialNackDelay)
	if again, _ := mustDequeue(t, b, "service"); again != e {
		t.Fatalf("redelivered %s, want %s", again.ID, e.ID)
	}
}

func TestNackTimerControl(t *testing.T) {
	const timeout = 60 * time.Second
	cases := []struct {
		name string
		// steps run after the dequeue; each may advance the clock.
		steps []step
		// outstanding after all steps, and after one more second.
		wantAfter, wantLater bool
	}{
		{
			name: "pause holds the timer indefinitely",
			steps: []step{
				advance(30 * time.Second), pause, advance(time.Hour),
			},
			wantAfter: true, wantLater: true,
		},
		{
			name: "resume restarts the full timeout",
			steps: []step{
				advance(30 * time.Second), pause, advance(time.Hour),
				resume, advance(timeout - time.Second),
			},
			wantAfter: true, wantLater: false,
		},
		{
			name: "outstanding reset restarts the timeout",
			steps: []step{
				advance(50 * time.Second), reset, advance(timeout - time.Second),
			},
			wantAfter: true, wantLater: false,
		},
		{
			name: "reset keeps a paused timer paused",
			steps: []step{
				pause, reset, advance(time.Hour),
			},
			wantAfter: true, wantLater: true,
		},
		{
			name: "resume of a running timer changes nothing",
			steps: []step{
				advance(30 * time.Second), resume, advance(29 * time.Second),
			},
			wantAfter: true, wantLater: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clock := testBroker(t, func(c *Config) { c.NackTimeout = timeout })
			b.Enqueue(mockEval("web", 50, "service"))
			e, tok := mustDequeue(t, b, "service")
			for i, step := range tc.steps {
				if err := step(b, clock, e.ID, tok); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if _, ok := b.Outstanding(e.ID); ok != tc.wantAfter {
				t.Fatalf("outstanding after steps = %v, want %v", ok, tc.wantAfter)
			}
			clock.Advance(time.Second)
			if _, ok := b.Outstanding(e.ID); ok != tc.wantLater {
				t.Fatalf("outstanding one second later = %v, want %v", ok, tc.wantLater)
			}
		})
	}
}

// step is one action on an outstanding delivery in TestNackTimerControl.
type step func(b *Broker, c *fakeClock, id, token string) error

// advance only moves the clock.
func advance(d time.Duration) step {
	return func(_ *Broker, c *fakeClock, _, _ string) error {
		c.Advance(d)
		return nil
	}
}

func pause(b *Broker, _ *fakeClock, id, token string) error  { return b.PauseNackTimeout(id, token) }
func resume(b *Broker, _ *fakeClock, id, token string) error { return b.ResumeNackTimeout(id, token) }
func reset(b *Broker, _ *fakeClock, id, token string) error  { return b.OutstandingReset(id, token) }

func TestRedeliveryDelays(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) { c.DeliveryLimit = 10 })
	b.Enqueue(mockEval("web", 50, "service"))
	delays := []time.Duration{time.Second, 20 * time.Second, 20 * time.Second}
	for i, delay := range delays {
		e, tok := mustDequeue(t, b, "service")
		mustNack(t, b, e, tok)
		clock.Advance(delay - time.Millisecond)
		mustBeEmpty(t, b, "service")
		if got := b.Stats().TotalWaiting; got != 1 {
			t.Fatalf("nack %d: TotalWaiting = %d, want 1", i+1, got)
		}
		clock.Advance(time.Millisecond)
		if got := b.Stats().TotalReady; got != 1 {
			t.Fatalf("nack %d: not ready after %v", i+1, delay)
		}
	}
}

func TestDeliveryLimitMovesToFailedQueue(t *testing.T) {
	b, clock := testBroker(t, func(c *Config) { c.InitialNackDelay = 0; c.SubsequentNackDelay = 0 })
	e := mockEval("web", 50, "service")
	later := mockEval("web", 50, "service") // same job: waits behind e
	later.ModifyIndex = 5
	b.Enqueue(e)
	b.Enqueue(later)
	for i := range DefaultDeliveryLimit {
		got, tok := mustDequeue(t, b, "service")
		if got != e {
			t.Fatalf("delivery %d: got %s, want %s", i+1, got.ID, e.ID)
		}
		mustNack(t, b, got, tok)
	}
	mustBeEmpty(t, b, "service")
	if st := b.Stats().ByScheduler[FailedQueue]; st.Ready != 1 {
		t.Fatalf("failed queue ready = %d, want 1", st.Ready)
	}
	failed, _ := mustDequeue(t, b, FailedQueue)
	if failed != e {
		t.Fatalf("failed queue gave %s, want %s", failed.ID, e.ID)
	}
	clock.Advance(time.Hour) // the nack timer fires: straight back to the failed queue
	mustBeEmpty(t, b, "service")
	if again, _ := mustDequeue(t, b, FailedQueue); again != e {
		t.Fatalf("failed queue gave %s after timeout, want %s", again.ID, e.ID)
	}
}

func TestFailedQueueAckReleasesJob(t *testing.T) {
	b, _ := testBroker(t, func(c *Config) { c.DeliveryLimit = 1 })
	e := mockEval("web", 50, "service")
	later := mockEval("web", 50, "service")
	b.Enqueue(e)
	b.Enqueue(later)
	got, tok := mustDequeue(t, b, "service")
	mustNack(t, b, got, tok)
	failed, ftok := mustDequeue(t, b, FailedQueue)
	mustBeEmpty(t, b, "service")
	mustAck(t, b, failed, ftok)
	if next, _ := mustDequeue(t, b, "service"); next != later {
		t.Fatalf("released %s, want the waiting eval", next.ID)
	}
}

func TestDelayedEvals(t *testing.T) {
	cases := []struct {
		name      string
		waitUntil time.Duration // from now; 0 = unset
		wait      time.Duration
		readyAt   time.Duration // 0 = ready at once
	}{
		{"no wait", 0, 0, 0},
		{"wait until in the future", 30 * time.Second, 0, 30 * time.Second},
		{"wait until in the past", -time.Minute, 0, 0},
		{"wait without wait until", 0, 10 * time.Second, 10 * time.Second},
		{"wait until wins over wait", 5 * time.Second, time.Hour, 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clock := testBroker(t, nil)
			e := mockEval("web", 50, "service")
			e.Wait = tc.wait
			if tc.waitUntil != 0 {
				e.WaitUntil = clock.Now().Add(tc.waitUntil)
			}
			b.Enqueue(e)
			if tc.readyAt > 0 {
				clock.Advance(tc.readyAt - time.Nanosecond)
				mustBeEmpty(t, b, "service")
				if got := b.Stats().TotalWaiting; got != 1 {
					t.Fatalf("TotalWaiting = %d, want 1", got)
				}
				clock.Advance(time.Nanosecond)
			}
			mustDequeue(t, b, "service")
		})
	}
}

func TestDelayedEvalsReleaseInDueOrder(t *testing.T) {
	b, clock := testBroker(t, nil)
	var evals []*structs.Evaluation
	for _, after := range []time.Duration{30, 10, 20} {
		e := mockEval(structs.GenerateUUID(), 50, "service")
		e.WaitUntil = clock.Now().Add(after * time.Second)
		evals = append(evals, e)
		b.Enqueue(e)
	}
	for _, want := range []int{1, 2, 0} {
		clock.Advance(10 * time.Second)
		got, _ := mustDequeue(t, b, "service")
		if got != evals[want] {
			t.Fatalf("released %s, want eval %d", got.ID, want)
		}
		mustBeEmpty(t, b, "service")
	}
	if n := clock.Pending(); n != 3 { // three nack timers, no delay timer
		t.Fatalf("pending timers = %d, want 3", n)
	}
}

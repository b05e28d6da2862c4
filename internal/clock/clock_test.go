package clock

import (
	"context"
	"testing"
	"time"
)

func TestManualFiresInOrder(t *testing.T) {
	c := NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	start := c.Now()
	var got []time.Duration
	rec := func() { got = append(got, c.Now().Sub(start)) }
	c.AfterFunc(3*time.Second, rec)
	c.AfterFunc(time.Second, func() {
		rec()
		c.AfterFunc(time.Second, rec) // scheduled by a firing timer, due at 2s
	})
	stopped := c.AfterFunc(2*time.Second, rec)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop returned true")
	}
	c.Advance(5 * time.Second)
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	}
	if c.Now().Sub(start) != 5*time.Second || c.Pending() != 0 {
		t.Fatalf("now = %v pending = %d after advance", c.Now().Sub(start), c.Pending())
	}
}

func TestRealAfterFunc(t *testing.T) {
	done := make(chan struct{})
	Real{}.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("real timer did not fire")
	}
}

// Sleep and WithDeadline follow the clock they are given, and end early
// with their context.
func TestSleepAndWithDeadline(t *testing.T) {
	c := NewManual(time.Unix(1000, 0))
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), c, time.Second) }()
	if !c.WaitPending(1, 5*time.Second) {
		t.Fatal("Sleep armed no timer")
	}
	c.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, c, time.Hour); err == nil {
		t.Fatal("Sleep ignored its context")
	}

	wctx, stop := WithDeadline(context.Background(), c, c.Now().Add(time.Minute))
	defer stop()
	c.Advance(59 * time.Second)
	if wctx.Err() != nil {
		t.Fatal("cancelled before its deadline")
	}
	c.Advance(time.Second)
	if wctx.Err() == nil {
		t.Fatal("not cancelled at its deadline")
	}
	never, stop2 := WithDeadline(context.Background(), c, time.Time{})
	c.Advance(time.Hour)
	if never.Err() != nil {
		t.Fatal("a zero deadline cancelled the context")
	}
	stop2()
	if never.Err() == nil || c.Pending() != 0 {
		t.Fatalf("cancel left the context live or a timer pending (%d)", c.Pending())
	}
}

// WaitPending wakes on every change of the pending timers, up and down,
// and gives up after its timeout.
func TestWaitPending(t *testing.T) {
	c := NewManual(time.Unix(0, 0))
	if !c.WaitPending(0, time.Second) {
		t.Fatal("no timers: WaitPending(0) false")
	}
	armed := make(chan Timer, 2)
	go func() {
		armed <- c.AfterFunc(time.Second, func() {})
		armed <- c.AfterFunc(2*time.Second, func() {})
	}()
	if !c.WaitPending(2, 5*time.Second) {
		t.Fatalf("%d timers, want 2", c.Pending())
	}
	(<-armed).Stop()
	if !c.WaitPending(1, 5*time.Second) {
		t.Fatalf("%d timers after a Stop, want 1", c.Pending())
	}
	go c.Advance(2 * time.Second)
	if !c.WaitPending(0, 5*time.Second) {
		t.Fatalf("%d timers after they fired, want 0", c.Pending())
	}
	start := time.Now()
	if c.WaitPending(3, 20*time.Millisecond) {
		t.Fatal("WaitPending(3) true with no timers")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("WaitPending returned before its timeout")
	}
}

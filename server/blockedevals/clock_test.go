package blockedevals

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual Clock: timers fire only inside Advance, in due
// order, each seeing Now() equal to its due time, on the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
}

type fakeTimer struct {
	c   *fakeClock
	due time.Time
	seq uint64
	f   func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, due: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.removeLocked(t)
}

func (c *fakeClock) removeLocked(t *fakeTimer) bool {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Pending returns the number of timers not yet fired or stopped.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time forward by d, firing due timers in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for t := c.nextLocked(target); t != nil; t = c.nextLocked(target) {
		c.removeLocked(t)
		if t.due.After(c.now) {
			c.now = t.due
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

// nextLocked returns the earliest timer due at or before target.
func (c *fakeClock) nextLocked(target time.Time) *fakeTimer {
	var best *fakeTimer
	for _, t := range c.timers {
		if t.due.After(target) {
			continue
		}
		if best == nil || t.due.Before(best.due) || (t.due.Equal(best.due) && t.seq < best.seq) {
			best = t
		}
	}
	return best
}

func TestFakeClockFiresInOrder(t *testing.T) {
	c := newFakeClock()
	start := c.Now()
	var got []time.Duration
	rec := func() { got = append(got, c.Now().Sub(start)) }
	c.AfterFunc(3*time.Second, rec)
	c.AfterFunc(time.Second, rec)
	stopped := c.AfterFunc(2*time.Second, rec)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	c.Advance(5 * time.Second)
	if len(got) != 2 || got[0] != time.Second || got[1] != 3*time.Second {
		t.Fatalf("fired at %v, want [1s 3s]", got)
	}
	if c.Now().Sub(start) != 5*time.Second {
		t.Fatalf("now = %v after advance", c.Now().Sub(start))
	}
}

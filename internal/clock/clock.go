// Package clock is Drover's one abstraction of time for components with
// timers (eval broker, blocked evals, heartbeats): production code uses Real,
// tests use a Manual clock they advance by hand, so timer logic is tested
// exactly and without sleeping.
//
// It imports nothing of Drover's.
package clock

import (
	"context"
	"sync"
	"time"
)

// Timer is a pending call scheduled by AfterFunc. Stop cancels it and
// reports whether it was still pending. It is an alias of an unnamed
// interface so *time.Timer satisfies it directly.
type Timer = interface{ Stop() bool }

// Clock is a source of time. AfterFunc must run f on its own goroutine (or,
// for Manual, from the caller of Advance), never inline: callers hold locks
// while scheduling.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Real is the wall clock, backed by package time.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Manual is a clock for tests: timers fire only inside Advance, in due
// order, each seeing Now() equal to its due time, on Advance's goroutine.
// Safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time  // guarded by mu
	seq    uint64     // guarded by mu
	timers []*manualT // guarded by mu
	// changed is closed (and replaced) whenever timers changes; nil until
	// WaitPending needs it. Guarded by mu.
	changed chan struct{}
}

type manualT struct {
	c   *Manual
	due time.Time
	seq uint64
	f   func()
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when Advance passes now+d.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualT{c: c, due: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// notifyLocked wakes the callers of WaitPending.
func (c *Manual) notifyLocked() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// Stop cancels the timer.
func (t *manualT) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.removeLocked(t)
}

func (c *Manual) removeLocked(t *manualT) bool {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notifyLocked()
			return true
		}
	}
	return false
}

// Pending returns the number of timers not yet fired or stopped.
func (c *Manual) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitPending waits until exactly n timers are pending, or until timeout
// passes on the real clock, and reports whether they were: a test starts
// a goroutine that arms a timer on c, waits for it to do so, then
// advances c, with no sleep.
func (c *Manual) WaitPending(n int, timeout time.Duration) bool {
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	for {
		c.mu.Lock()
		if len(c.timers) == n {
			c.mu.Unlock()
			return true
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-expired.C:
			return c.Pending() == n
		}
	}
}

// Advance moves time forward by d, firing due timers in order. Timers that
// fire may schedule new ones; those due within the advance fire too.
func (c *Manual) Advance(d time.Duration) {
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
func (c *Manual) nextLocked(target time.Time) *manualT {
	var best *manualT
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

// Sleep waits d on c, or until ctx ends (its error is returned). A
// negative d returns at once.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d < 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithDeadline returns a context of ctx that c cancels at deadline (never
// when deadline is zero), and its cancel function: leader loops wait on a
// watch set until it fires or their next deadline passes on their clock.
func WithDeadline(ctx context.Context, c Clock, deadline time.Time) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	if deadline.IsZero() {
		return wctx, cancel
	}
	t := c.AfterFunc(deadline.Sub(c.Now()), cancel)
	return wctx, func() { t.Stop(); cancel() }
}

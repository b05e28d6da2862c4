package blockedevals

import "time"

// Timer is a pending call scheduled by Clock.AfterFunc. Stop cancels it and
// reports whether it was still pending. It aliases an unnamed interface so
// that one Clock implementation (such as evalbroker.SystemClock) satisfies
// every package declaring this Clock shape.
type Timer = interface{ Stop() bool }

// Clock is the tracker's only source of time. AfterFunc must run f on its
// own goroutine (or from a test's manual advance), never inline.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// SystemClock is the real clock, backed by package time.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Package backoff is Drover's one retry helper: exponential backoff with a
// base, a cap, doubling, and a reset on success, stopping on context end.
//
// It imports nothing of Drover's, so every package may use it. It never
// sleeps past its context.
package backoff

import (
	"context"
	"time"
)

// Backoff yields growing delays: Base, 2*Base, ... capped at Limit.
// The zero value is not usable; construct with New. Not safe for concurrent use.
type Backoff struct {
	base, limit time.Duration
	next        time.Duration
}

// New returns a backoff starting at base and doubling up to limit.
func New(base, limit time.Duration) *Backoff {
	return &Backoff{base: base, limit: limit, next: base}
}

// Next returns the delay to wait now and doubles the following one.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next *= 2
	if b.next > b.limit {
		b.next = b.limit
	}
	return d
}

// Reset starts again from the base delay, after a success.
func (b *Backoff) Reset() { b.next = b.base }

// Wait sleeps for the next delay. It returns ctx.Err() if the context ends
// first, nil otherwise.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry calls fn until it succeeds, retry(err) is false, the context ends,
// or the total time reaches max (0 means no bound). It returns fn's last error,
// or the context's error if the context ended first.
func Retry(ctx context.Context, b *Backoff, max time.Duration, retry func(error) bool, fn func() error) error {
	var deadline time.Time
	if max > 0 {
		deadline = time.Now().Add(max)
	}
	for {
		err := fn()
		if err == nil || !retry(err) {
			return err
		}
		if !deadline.IsZero() && time.Now().Add(b.next).After(deadline) {
			return err
		}
		if werr := b.Wait(ctx); werr != nil {
			return werr
		}
	}
}

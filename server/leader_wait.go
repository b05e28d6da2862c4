package server

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/backoff"
)

// Requests that need a leader (writes, consistent reads, a worker's
// dequeue) wait while there is none. They poll with a backoff, and they
// also wake the moment this server learns of a leader: right after an
// election the backoff has grown to hundreds of milliseconds, and every
// worker and client request would otherwise sleep that long after the
// cluster could already serve it.

// changeSignal is a broadcast: wait returns a channel that the next
// notify closes.
type changeSignal struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu; nil until someone waits
}

func (c *changeSignal) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changeSignal) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// watchLeaderChanges wakes leader waiters whenever Raft reports a new
// leader (or none) as this server sees it; monitorLeadership and the
// leader loop add this server's own leadership being ready. It runs until
// shutdown.
func (s *Server) watchLeaderChanges() {
	defer s.wg.Done()
	ch := make(chan raft.Observation, 8)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	for {
		select {
		case <-ch:
			s.leaderChange.notify()
		case <-s.shutdownCh:
			return
		}
	}
}

// waitLeaderUntil is waitLeaderChange until deadline or shutdown.
func (s *Server) waitLeaderUntil(deadline time.Time, b *backoff.Backoff, changed <-chan struct{}) error {
	ctx, cancel := context.WithDeadline(s.shutdownCtx, deadline)
	defer cancel()
	return waitLeaderChange(ctx, b, changed)
}

// waitLeaderChange sleeps for b's next delay, or until the known leader
// changes (changed, taken before the caller looked), or ctx ends.
func waitLeaderChange(ctx context.Context, b *backoff.Backoff, changed <-chan struct{}) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

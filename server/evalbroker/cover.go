package evalbroker

import (
	"context"
	"time"

	"github.com/drover-project/drover/structs"
)

// Covering node events with an evaluation that is still to be delivered.
//
// The schedulers ignore Evaluation.NodeID: each looks at every node and
// every allocation of its job in the snapshot it plans from. An
// evaluation of a job that the broker has not delivered yet therefore
// already covers a node change, provided the worker that schedules it
// plans from a snapshot that holds the change. Cover asks for exactly
// that: it succeeds while the job has an evaluation waiting for delivery
// (ready, waiting behind the job's outstanding one, or held for at most
// Config.CoverDelay), and binds the job's next delivery to the Hold it
// returns. That delivery's wait index (CoverIndex) is at least every index
// passed to Hold.Done for it, and CoverIndex waits until each of its holds
// is done. An evaluation already delivered does not cover: its worker may
// be planning from an older snapshot.
//
// The next delivery is whichever evaluation of the job is delivered next
// from its scheduler's queue (not FailedQueue): the one counted, the
// newest waiter that supersedes it, or a nacked one delivered again. A
// nack hands the delivery's holds back to the job's next delivery.

// Hold is one node event absorbed by a job's next delivery. Done must be
// called exactly once (later calls do nothing).
type Hold struct {
	b    *Broker
	set  *coverSet // guarded by b.mu
	done bool      // guarded by b.mu
}

// coverSet is the holds bound to one delivery of a job.
type coverSet struct {
	index uint64             // highest index of the resolved holds
	open  map[*Hold]struct{} // holds not yet done
	wake  chan struct{}      // closed when open empties; nil unless CoverIndex waits
}

// wakeLocked releases every CoverIndex waiting on s.
func (s *coverSet) wakeLocked() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// Cover reports whether an evaluation of the job waits in the broker to be
// delivered (see the comment above); if so, the job's next delivery is
// bound to the returned Hold. Call Hold.Done with the Raft index of the
// node event once it is written (0 if the write failed). Always false
// while disabled and for an empty jobID.
func (b *Broker) Cover(namespace, jobID string) (*Hold, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := jobKey{namespace, jobID}
	if !b.enabled || jobID == "" || b.coverable[key] == 0 {
		return nil, false
	}
	set := b.covers[key]
	if set == nil {
		set = &coverSet{open: map[*Hold]struct{}{}}
		b.covers[key] = set
	}
	h := &Hold{b: b, set: set}
	set.open[h] = struct{}{}
	return h, true
}

// Done resolves the hold with the index at which its node event was
// written; 0 when the write failed.
func (h *Hold) Done(index uint64) {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	set := h.set
	delete(set.open, h)
	set.index = max(set.index, index)
	if len(set.open) == 0 {
		set.wakeLocked()
	}
}

// CoverIndex returns the index the worker of a delivery must reach beyond
// the evaluation's own: the highest index of the node events its holds
// absorbed (0 if none). It waits until every hold of the delivery is
// done, or ctx ends. The delivery must be outstanding under token.
func (b *Broker) CoverIndex(ctx context.Context, evalID, token string) (uint64, error) {
	for {
		b.mu.Lock()
		d, err := b.deliveryLocked(evalID, token)
		if err != nil {
			b.mu.Unlock()
			return 0, err
		}
		set := d.cover
		if set == nil || len(set.open) == 0 {
			var index uint64
			if set != nil {
				index = set.index
			}
			b.mu.Unlock()
			return index, nil
		}
		if set.wake == nil {
			set.wake = make(chan struct{})
		}
		wake := set.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// coverableLocked reports whether an evaluation held until due counts as
// waiting for delivery.
func (b *Broker) coverableLocked(due time.Time) bool {
	return !due.After(b.clock.Now().Add(b.cfg.CoverDelay))
}

// countLocked changes how many of the job's evaluations wait for delivery.
func (b *Broker) countLocked(e *structs.Evaluation, delta int) {
	if e.JobID == "" {
		return
	}
	key := keyOf(e)
	if n := b.coverable[key] + delta; n > 0 {
		b.coverable[key] = n
	} else {
		delete(b.coverable, key)
	}
}

// bindCoverLocked gives a delivery from its scheduler's queue the holds
// its job's next delivery owes.
func (b *Broker) bindCoverLocked(d *delivery) {
	if d.eval.JobID == "" || d.queue == FailedQueue {
		return
	}
	key := keyOf(d.eval)
	if set, ok := b.covers[key]; ok {
		d.cover = set
		delete(b.covers, key)
	}
}

// unbindCoverLocked hands a nacked delivery's holds back to its job's next
// delivery, merged with any taken since.
func (b *Broker) unbindCoverLocked(d *delivery) {
	set := d.cover
	if set == nil {
		return
	}
	d.cover = nil
	set.wakeLocked()
	key := keyOf(d.eval)
	cur, ok := b.covers[key]
	if !ok {
		b.covers[key] = set
		return
	}
	cur.index = max(cur.index, set.index)
	for h := range set.open {
		h.set = cur
		cur.open[h] = struct{}{}
	}
}

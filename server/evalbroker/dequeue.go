package evalbroker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/drover-project/drover/structs"
)

// errDone is returned internally when a Dequeue caller stops waiting.
var errDone = errors.New("dequeue wait ended")

// waiter is a blocked Dequeue caller. It is signalled at most once per
// registration: whoever removes it from Broker.waiters signals it.
type waiter struct {
	types []string
	ch    chan struct{} // capacity 1
	// local marks a caller in the leader's own process. Local waiters are
	// woken before remote ones: a local worker needs no Raft catch-up
	// (its state already holds the evaluation's index) and submits its
	// plan without an RPC, so an idle leader worker finishes a lone
	// evaluation sooner than a follower's worker can start it.
	local bool
}

func (w *waiter) signal() { w.ch <- struct{}{} }

// Dequeue returns the best ready evaluation among the given scheduler types
// and its delivery token, waiting up to timeout (timeout <= 0 waits until
// an evaluation arrives or the broker is disabled). On timeout it returns
// (nil, "", nil). While disabled it returns structs.ErrBrokerDisabled.
// The caller must Ack or Nack the evaluation with the token.
func (b *Broker) Dequeue(schedulers []string, timeout time.Duration) (*structs.Evaluation, string, error) {
	var expired chan struct{}
	if timeout > 0 {
		expired = make(chan struct{})
		t := b.clock.AfterFunc(timeout, func() { close(expired) })
		defer t.Stop()
	}
	eval, token, err := b.dequeue(schedulers, false, expired)
	if errors.Is(err, errDone) {
		return nil, "", nil
	}
	return eval, token, err
}

// DequeueContext is Dequeue bounded by ctx instead of a timeout; when ctx
// ends first it returns (nil, "", ctx.Err()).
func (b *Broker) DequeueContext(ctx context.Context, schedulers []string) (*structs.Evaluation, string, error) {
	eval, token, err := b.dequeue(schedulers, false, ctx.Done())
	if errors.Is(err, errDone) {
		return nil, "", ctx.Err()
	}
	return eval, token, err
}

// DequeueLocal is DequeueContext for a worker in the broker's own process:
// while it waits, it is woken ahead of every remote caller.
func (b *Broker) DequeueLocal(ctx context.Context, schedulers []string) (*structs.Evaluation, string, error) {
	eval, token, err := b.dequeue(schedulers, true, ctx.Done())
	if errors.Is(err, errDone) {
		return nil, "", ctx.Err()
	}
	return eval, token, err
}

// dequeue takes an evaluation or waits for a signal until done closes.
func (b *Broker) dequeue(types []string, local bool, done <-chan struct{}) (*structs.Evaluation, string, error) {
	if len(types) == 0 {
		return nil, "", structs.NewError(structs.ErrCodeInvalid, "dequeue: no scheduler types given")
	}
	signalled := false
	for {
		w, eval, token, err := b.takeOrWait(types, local, signalled)
		if w == nil {
			return eval, token, err
		}
		select {
		case <-w.ch:
			signalled = true
		case <-done:
			b.abandon(w)
			return nil, "", errDone
		}
	}
}

// takeOrWait takes an evaluation, or registers and returns a waiter.
// A caller that was signalled passes the wake-up on for whatever is left
// in its queues, so that no signal is lost to it.
func (b *Broker) takeOrWait(types []string, local, signalled bool) (*waiter, *structs.Evaluation, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return nil, nil, "", structs.ErrBrokerDisabled
	}
	eval, token := b.takeLocked(types)
	if signalled {
		b.passOnLocked(types)
	}
	if eval != nil {
		return nil, eval, token, nil
	}
	w := &waiter{types: types, ch: make(chan struct{}, 1), local: local}
	b.waiters = append(b.waiters, w)
	return w, nil, "", nil
}

// abandon unregisters w; if it had already been signalled, the wake-up
// is passed on to another waiter.
func (b *Broker) abandon(w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.waiters, w); i >= 0 {
		b.waiters = slices.Delete(b.waiters, i, i+1)
		return
	}
	b.passOnLocked(w.types)
}

// wakeLocked signals the longest-waiting local caller interested in
// queue, or else the longest-waiting remote one.
func (b *Broker) wakeLocked(queue string) {
	pick := -1
	for i, w := range b.waiters {
		if !slices.Contains(w.types, queue) {
			continue
		}
		if w.local {
			pick = i
			break
		}
		if pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return
	}
	w := b.waiters[pick]
	b.waiters = slices.Delete(b.waiters, pick, pick+1)
	w.signal()
}

// passOnLocked wakes one waiter for each non-empty queue among types.
func (b *Broker) passOnLocked(types []string) {
	for _, t := range types {
		if q := b.ready[t]; q != nil && q.Len() > 0 {
			b.wakeLocked(t)
		}
	}
}

// takeLocked delivers the best ready evaluation among types, or nil.
func (b *Broker) takeLocked(types []string) (*structs.Evaluation, string) {
	queue := b.pickLocked(types)
	if queue == "" {
		return nil, ""
	}
	eval := b.ready[queue].pop()
	b.evals[eval.ID]++
	d := &delivery{eval: eval, token: structs.GenerateUUID(), queue: queue}
	if queue != FailedQueue {
		b.countLocked(eval, -1)
		b.bindCoverLocked(d)
	}
	b.unack[eval.ID] = d
	b.armNackLocked(d)
	return eval, d.token
}

// pickLocked returns the requested queue whose head has the highest
// priority; ties go to the first in a rotating order (round-robin).
func (b *Broker) pickLocked(types []string) string {
	best, bestPri := "", 0
	start := int(b.rr % uint64(len(types)))
	b.rr++
	for i := range types {
		t := types[(start+i)%len(types)]
		q := b.ready[t]
		if q == nil || q.Len() == 0 {
			continue
		}
		if p := q.peek().Priority; best == "" || p > bestPri {
			best, bestPri = t, p
		}
	}
	return best
}

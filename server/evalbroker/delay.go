package evalbroker

import (
	"container/heap"
	"time"

	"github.com/drover-project/drover/structs"
)

// dueTime returns when eval may first run: WaitUntil if set, else now+Wait.
// later reports whether that is in the future.
func (b *Broker) dueTime(eval *structs.Evaluation) (due time.Time, later bool) {
	now := b.clock.Now()
	due = eval.WaitUntil
	if due.IsZero() && eval.Wait > 0 {
		due = now.Add(eval.Wait)
	}
	return due, due.After(now)
}

// delayLocked holds eval until due, then puts it on queue.
func (b *Broker) delayLocked(eval *structs.Evaluation, due time.Time, queue string) {
	b.seq++
	coverable := queue != FailedQueue && b.coverableLocked(due)
	if coverable {
		b.countLocked(eval, 1)
	}
	heap.Push(&b.delayed, delayedItem{eval: eval, due: due, queue: queue, seq: b.seq, coverable: coverable})
	b.armDelayLocked()
}

// armDelayLocked (re)starts the single delay timer for the earliest item.
// The timer is replaced only when the head changed, so pushing later items
// costs no timer churn.
func (b *Broker) armDelayLocked() {
	if len(b.delayed) == 0 {
		b.stopDelayLocked()
		return
	}
	head := b.delayed[0].due
	if b.delayTimer != nil && head.Equal(b.delayAt) {
		return
	}
	b.stopDelayLocked()
	b.delayAt = head
	gen := b.delayGen
	b.delayTimer = b.clock.AfterFunc(head.Sub(b.clock.Now()), func() { b.releaseDue(gen) })
}

// stopDelayLocked cancels the delay timer; a callback already running sees
// a newer delayGen and does nothing.
func (b *Broker) stopDelayLocked() {
	if b.delayTimer != nil {
		b.delayTimer.Stop()
		b.delayTimer = nil
	}
	b.delayGen++
}

// releaseDue is the delay timer callback: it enqueues every due item.
func (b *Broker) releaseDue(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.delayGen || !b.enabled {
		return
	}
	b.delayTimer = nil
	now := b.clock.Now()
	for len(b.delayed) > 0 && !b.delayed[0].due.After(now) {
		it := heap.Pop(&b.delayed).(delayedItem)
		if it.coverable {
			b.countLocked(it.eval, -1)
		}
		b.enqueueLocked(it.eval, it.queue)
	}
	b.armDelayLocked()
}

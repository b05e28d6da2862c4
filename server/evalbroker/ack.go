package evalbroker

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Outstanding returns the token of evalID's current delivery, if it has one.
func (b *Broker) Outstanding(evalID string) (token string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return d.token, true
}

// Ack completes a delivery: the evaluation leaves the broker, its job's
// newest waiting evaluation is released, and a pending requeue (see
// EnqueueAll) is enqueued.
func (b *Broker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	b.endDeliveryLocked(d)
	if d.cover != nil {
		d.cover.wakeLocked()
	}
	delete(b.evals, evalID)
	if d.eval.JobID != "" {
		b.releaseJobLocked(keyOf(d.eval), evalID)
	}
	if again, ok := b.requeue[token]; ok {
		delete(b.requeue, token)
		b.enqueueNewLocked(again, "")
	}
	b.leftLocked(evalID)
	return nil
}

// Nack gives a delivery back: the evaluation is redelivered after the nack
// delay, or moved to FailedQueue once it has had DeliveryLimit deliveries.
// It keeps its job's slot throughout.
func (b *Broker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	b.nackLocked(d)
	return nil
}

// nackLocked ends d and schedules redelivery or failure.
func (b *Broker) nackLocked(d *delivery) {
	b.endDeliveryLocked(d)
	b.unbindCoverLocked(d)
	delete(b.requeue, d.token)
	n := b.evals[d.eval.ID]
	if n >= b.cfg.DeliveryLimit {
		b.logger.Warn("eval reached delivery limit; moving to failed queue",
			"eval_id", d.eval.ID, "job_id", d.eval.JobID, "namespace", d.eval.Namespace, "deliveries", n)
		b.enqueueLocked(d.eval, FailedQueue)
		return
	}
	delay := b.nackDelay(n)
	if delay <= 0 {
		b.enqueueLocked(d.eval, d.eval.Type)
		return
	}
	b.delayLocked(d.eval, b.clock.Now().Add(delay), d.eval.Type)
}

// nackDelay is the redelivery delay after the n-th delivery was nacked.
func (b *Broker) nackDelay(n int) time.Duration {
	if n <= 1 {
		return b.cfg.InitialNackDelay
	}
	return b.cfg.SubsequentNackDelay
}

// PauseNackTimeout stops the nack timer of a delivery, for as long as its
// plan waits in the plan queue.
func (b *Broker) PauseNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	b.stopNackLocked(d)
	d.paused = true
	return nil
}

// ResumeNackTimeout restarts a paused nack timer with the full timeout.
// Resuming a running timer leaves it alone.
func (b *Broker) ResumeNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	if d.paused {
		d.paused = false
		b.armNackLocked(d)
	}
	return nil
}

// OutstandingReset restarts a running nack timer with the full timeout;
// workers call it while they wait. A paused timer stays paused.
func (b *Broker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	if !d.paused {
		b.armNackLocked(d)
	}
	return nil
}

// deliveryLocked finds the outstanding delivery of evalID under token.
func (b *Broker) deliveryLocked(evalID, token string) (*delivery, error) {
	if !b.enabled {
		return nil, structs.ErrBrokerDisabled
	}
	d, ok := b.unack[evalID]
	if !ok {
		return nil, structs.NewError(structs.ErrCodeNotFound, "evaluation %q is not outstanding", evalID)
	}
	if d.token != token {
		return nil, structs.NewError(structs.ErrCodeTokenMismatch, "token does not match the outstanding delivery of evaluation %q", evalID)
	}
	return d, nil
}

// endDeliveryLocked stops d's timer and forgets it.
func (b *Broker) endDeliveryLocked(d *delivery) {
	b.stopNackLocked(d)
	delete(b.unack, d.eval.ID)
}

// armNackLocked (re)starts d's nack timer with the full timeout.
func (b *Broker) armNackLocked(d *delivery) {
	b.stopNackLocked(d)
	gen, id, token := d.gen, d.eval.ID, d.token
	d.timer = b.clock.AfterFunc(b.cfg.NackTimeout, func() { b.nackExpired(id, token, gen) })
}

// stopNackLocked cancels d's timer; a callback already running sees a newer
// gen and does nothing.
func (b *Broker) stopNackLocked(d *delivery) {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
}

// nackExpired is the nack timer callback.
func (b *Broker) nackExpired(evalID, token string, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.unack[evalID]
	if !b.enabled || !ok || d.token != token || d.gen != gen {
		return
	}
	b.logger.Warn("eval not acked in time; nacking", "eval_id", evalID,
		"job_id", d.eval.JobID, "namespace", d.eval.Namespace, "timeout", b.cfg.NackTimeout)
	b.nackLocked(d)
}

package evalbroker

import (
	"sync"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
)

// jobKey names a job across namespaces.
type jobKey struct{ namespace, id string }

func keyOf(e *structs.Evaluation) jobKey { return jobKey{e.Namespace, e.JobID} }

// delivery is one outstanding (dequeued, unacked) evaluation.
type delivery struct {
	eval   *structs.Evaluation
	token  string
	queue  string // the ready queue it came from
	timer  Timer  // nack timer; nil while paused
	gen    uint64 // bumped whenever timer is replaced; stale callbacks compare it
	paused bool
	cover  *coverSet // node events this delivery must plan after; nil if none
}

// Broker holds pending evaluations for the leader's schedulers. See the
// package documentation for its contract. Create one with New.
type Broker struct {
	cfg     Config
	clock   Clock
	logger  hclog.Logger
	metrics *metrics.Metrics

	mu sync.Mutex
	// Every field below is guarded by mu.
	enabled    bool
	seq        uint64                           // arrival counter, FIFO tie-break
	rr         uint64                           // round-robin offset across types
	evals      map[string]int                   // every eval held -> deliveries so far
	jobEvals   map[jobKey]string                // the one outstanding eval ID per job
	pending    map[jobKey][]*structs.Evaluation // waiting behind jobEvals, arrival order
	cancelable []*structs.Evaluation            // superseded, for the leader to cancel
	ready      map[string]*readyQueue           // by scheduler type (and FailedQueue)
	unack      map[string]*delivery             // by eval ID
	requeue    map[string]*structs.Evaluation   // token -> eval to enqueue on that ack
	delayed    delayQueue                       // WaitUntil / nack redelivery holds
	delayTimer Timer                            // fires at delayAt; nil if none
	delayAt    time.Time                        // due time delayTimer was set for
	delayGen   uint64                           // invalidates stale delayTimer callbacks
	waiters    []*waiter                        // blocked Dequeue callers, FIFO
	gates      map[string][]*gate               // eval ID -> gates whose open level holds it
	coverable  map[jobKey]int                   // the job's evals waiting for delivery (see Cover)
	covers     map[jobKey]*coverSet             // holds owed by the job's next delivery
}

// New returns a disabled broker. It fails only on an invalid config.
func New(cfg Config) (*Broker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:     cfg,
		clock:   cfg.Clock,
		logger:  cfg.Logger.Named("eval_broker"),
		metrics: cfg.Metrics,
	}
	b.resetLocked()
	return b, nil
}

// resetLocked empties every queue and map.
func (b *Broker) resetLocked() {
	b.evals = map[string]int{}
	b.jobEvals = map[jobKey]string{}
	b.pending = map[jobKey][]*structs.Evaluation{}
	b.cancelable = nil
	b.ready = map[string]*readyQueue{}
	b.unack = map[string]*delivery{}
	b.requeue = map[string]*structs.Evaluation{}
	b.delayed = nil
	b.gates = map[string][]*gate{}
	b.coverable = map[jobKey]int{}
	b.covers = map[jobKey]*coverSet{}
}

// Enabled reports whether the broker accepts evaluations.
func (b *Broker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetEnabled turns the broker on (leadership gained) or off (lost).
// Disabling drops every evaluation, stops every timer and wakes blocked
// Dequeue callers, which return structs.ErrBrokerDisabled.
func (b *Broker) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled != enabled {
		b.logger.Debug("eval broker state changed", "enabled", enabled)
	}
	b.enabled = enabled
	if !enabled {
		b.flushLocked()
	}
}

// flushLocked stops every timer, empties the broker and wakes all waiters.
func (b *Broker) flushLocked() {
	for _, d := range b.unack {
		b.stopNackLocked(d)
		if d.cover != nil {
			d.cover.wakeLocked()
		}
	}
	b.stopDelayLocked()
	b.resetLocked()
	for _, w := range b.waiters {
		w.signal()
	}
	b.waiters = nil
}

// Enqueue adds a pending evaluation. Duplicates of an evaluation the broker
// already holds are ignored. No-op while disabled.
func (b *Broker) Enqueue(eval *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueNewLocked(eval, "")
}

// EnqueueAll adds evaluations, each with an optional delivery token (""
// for none). An evaluation outstanding under the given token is enqueued
// again when that delivery is acked; see the package documentation.
// A batch of several priorities is handed out one priority level at a
// time, highest first (see gate). It satisfies blockedevals.Enqueuer.
func (b *Broker) EnqueueAll(evals map[*structs.Evaluation]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	b.enqueueBatchLocked(evals)
}

// enqueueNewLocked admits an evaluation from outside the broker.
func (b *Broker) enqueueNewLocked(eval *structs.Evaluation, token string) {
	if !b.enabled {
		return
	}
	if _, held := b.evals[eval.ID]; held {
		b.requeueLocked(eval, token)
		return
	}
	b.evals[eval.ID] = 0
	if due, later := b.dueTime(eval); later {
		b.delayLocked(eval, due, eval.Type)
		return
	}
	b.enqueueLocked(eval, eval.Type)
}

// requeueLocked records a re-enqueue of a held evaluation: honoured only if
// it is outstanding under token, when that delivery is acked.
func (b *Broker) requeueLocked(eval *structs.Evaluation, token string) {
	if token == "" {
		return
	}
	if d, ok := b.unack[eval.ID]; ok && d.token == token {
		b.requeue[token] = eval
	}
}

// enqueueLocked puts eval on queue, or parks it behind its job's
// outstanding evaluation.
func (b *Broker) enqueueLocked(eval *structs.Evaluation, queue string) {
	if eval.JobID != "" {
		key := keyOf(eval)
		if cur, ok := b.jobEvals[key]; !ok {
			b.jobEvals[key] = eval.ID
		} else if cur != eval.ID {
			b.pending[key] = append(b.pending[key], eval)
			b.countLocked(eval, 1)
			return
		}
	}
	if queue != FailedQueue {
		b.countLocked(eval, 1)
	}
	q := b.ready[queue]
	if q == nil {
		q = &readyQueue{}
		b.ready[queue] = q
	}
	b.seq++
	q.push(eval, b.seq)
	b.wakeLocked(queue)
}

// releaseJobLocked frees key's slot held by evalID and releases the newest
// waiting evaluation; older waiters become cancelable.
func (b *Broker) releaseJobLocked(key jobKey, evalID string) {
	if b.jobEvals[key] != evalID {
		return
	}
	delete(b.jobEvals, key)
	waiting := b.pending[key]
	if len(waiting) == 0 {
		return
	}
	delete(b.pending, key)
	b.countLocked(waiting[0], -len(waiting))
	newest := newestIndex(waiting)
	for i, e := range waiting {
		if i != newest {
			delete(b.evals, e.ID)
			b.cancelable = append(b.cancelable, e)
		}
	}
	b.enqueueLocked(waiting[newest], waiting[newest].Type)
	for i, e := range waiting {
		if i != newest {
			b.leftLocked(e.ID)
		}
	}
}

// newestIndex returns the position of the newest evaluation: highest
// ModifyIndex, then CreateIndex, then latest arrival.
func newestIndex(evals []*structs.Evaluation) int {
	best := 0
	for i, e := range evals[1:] {
		b := evals[best]
		if e.ModifyIndex > b.ModifyIndex ||
			(e.ModifyIndex == b.ModifyIndex && e.CreateIndex >= b.CreateIndex) {
			best = i + 1
		}
	}
	return best
}

// Cancelable removes and returns up to n superseded evaluations (all of
// them if n <= 0), oldest first. The leader marks them canceled via Raft.
func (b *Broker) Cancelable(n int) []*structs.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= 0 || n > len(b.cancelable) {
		n = len(b.cancelable)
	}
	out := make([]*structs.Evaluation, n)
	copy(out, b.cancelable)
	b.cancelable = append(b.cancelable[:0:0], b.cancelable[n:]...)
	return out
}

package blockedevals

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

// tracked is a blocked evaluation with the token it was reblocked under.
type tracked struct {
	eval  *structs.Evaluation
	token string
}

// mark records a capacity change: the highest Raft index seen and when.
type mark struct {
	index uint64
	at    time.Time
}

// BlockedEvals tracks blocked evaluations. See the package documentation
// for its contract. Create one with New.
type BlockedEvals struct {
	cfg      Config
	clock    Clock
	logger   hclog.Logger
	enqueuer Enqueuer
	metrics  *metrics.Metrics

	mu sync.Mutex
	// Every field below is guarded by mu.
	enabled        bool
	byID           map[string]tracked
	byNode         map[string]map[string]struct{} // node ID -> IDs of evals tied to it
	jobs           map[jobKey]map[string]string   // job -> node ID ("" if none) -> eval ID
	classMarks     map[string]mark                // last capacity change per computed class
	nodeMarks      map[string]mark                // last capacity change per node
	pendingClasses map[string]mark                // changes not yet applied (coalescing)
	pendingNodes   map[string]mark
	flushTimer     Timer  // applies pending changes; nil if none are pending
	flushGen       uint64 // invalidates stale flushTimer callbacks
	lastPrune      time.Time
	duplicates     []*structs.Evaluation
	dupSignal      chan struct{} // closed (and replaced) when duplicates arrive
}

// New returns a disabled tracker. It fails only on an invalid config.
func New(cfg Config) (*BlockedEvals, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &BlockedEvals{
		cfg:      cfg,
		clock:    cfg.Clock,
		logger:   cfg.Logger.Named("blocked_evals"),
		enqueuer: cfg.Enqueuer,
		metrics:  cfg.Metrics,
	}
	b.resetLocked()
	return b, nil
}

// resetLocked empties every map and wakes GetDuplicates callers.
func (b *BlockedEvals) resetLocked() {
	b.byID = map[string]tracked{}
	b.byNode = map[string]map[string]struct{}{}
	b.jobs = map[jobKey]map[string]string{}
	b.classMarks = map[string]mark{}
	b.nodeMarks = map[string]mark{}
	b.pendingClasses = map[string]mark{}
	b.pendingNodes = map[string]mark{}
	b.duplicates = nil
	if b.dupSignal != nil {
		close(b.dupSignal)
	}
	b.dupSignal = make(chan struct{})
}

// Enabled reports whether the tracker accepts evaluations.
func (b *BlockedEvals) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetEnabled turns the tracker on (leadership gained) or off (lost).
// Disabling drops every evaluation, duplicate and recorded capacity change
// and stops the coalescing timer.
func (b *BlockedEvals) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled != enabled {
		b.logger.Debug("blocked evals state changed", "enabled", enabled)
	}
	b.enabled = enabled
	if !enabled {
		b.stopFlushLocked()
		b.resetLocked()
	}
}

// Block tracks a blocked evaluation until capacity that could help it
// appears. If such capacity appeared after the evaluation's snapshot, it
// is released at once instead.
func (b *BlockedEvals) Block(eval *structs.Evaluation) { b.block(eval, "") }

// Reblock is Block for an evaluation still outstanding in the broker under
// token (a worker reblocking the evaluation it holds). The token travels
// with the evaluation when it is released.
func (b *BlockedEvals) Reblock(eval *structs.Evaluation, token string) { b.block(eval, token) }

func (b *BlockedEvals) block(eval *structs.Evaluation, token string) {
	b.mu.Lock()
	batch := b.admitLocked(tracked{eval: eval, token: token})
	b.mu.Unlock()
	b.release(batch)
}

// admitLocked tracks t, or returns it in a batch to release at once.
func (b *BlockedEvals) admitLocked(t tracked) map[*structs.Evaluation]string {
	if !b.enabled || !b.replaceLocked(t) {
		return nil
	}
	if b.missedLocked(t.eval) {
		return map[*structs.Evaluation]string{pendingCopy(t.eval): t.token}
	}
	b.trackLocked(t)
	return nil
}

// replaceLocked applies the one-per-job rule to an incoming evaluation,
// recording the loser as a duplicate. It reports whether t should be kept.
func (b *BlockedEvals) replaceLocked(t tracked) bool {
	oldID, ok := b.jobs[keyOf(t.eval)][t.eval.NodeID]
	if !ok {
		return true
	}
	old := b.byID[oldID]
	switch {
	case oldID == t.eval.ID: // the same evaluation again: replace it
		b.removeLocked(oldID)
		return true
	case latestIndex(old.eval) > latestIndex(t.eval):
		b.addDuplicateLocked(t.eval)
		return false
	default:
		b.removeLocked(oldID)
		b.addDuplicateLocked(old.eval)
		return true
	}
}

// latestIndex orders evaluations of one job: the later one wins.
func latestIndex(e *structs.Evaluation) uint64 { return max(e.CreateIndex, e.SnapshotIndex) }

// trackLocked records t in every index.
func (b *BlockedEvals) trackLocked(t tracked) {
	id, node, key := t.eval.ID, t.eval.NodeID, keyOf(t.eval)
	b.byID[id] = t
	if b.jobs[key] == nil {
		b.jobs[key] = map[string]string{}
	}
	b.jobs[key][node] = id
	if node != "" {
		if b.byNode[node] == nil {
			b.byNode[node] = map[string]struct{}{}
		}
		b.byNode[node][id] = struct{}{}
	}
}

// removeLocked forgets a tracked evaluation.
func (b *BlockedEvals) removeLocked(id string) {
	t, ok := b.byID[id]
	if !ok {
		return
	}
	delete(b.byID, id)
	node, key := t.eval.NodeID, keyOf(t.eval)
	if delete(b.jobs[key], node); len(b.jobs[key]) == 0 {
		delete(b.jobs, key)
	}
	if node != "" {
		if delete(b.byNode[node], id); len(b.byNode[node]) == 0 {
			delete(b.byNode, node)
		}
	}
}

// Untrack drops every blocked evaluation of a job; the leader calls it when
// an evaluation of that job completes with everything placed.
func (b *BlockedEvals) Untrack(namespace, jobID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.jobs[jobKey{namespace, jobID}]))
	for _, id := range b.jobs[jobKey{namespace, jobID}] {
		ids = append(ids, id)
	}
	for _, id := range ids {
		b.removeLocked(id)
	}
}

// pendingCopy is the form in which an evaluation is released.
func pendingCopy(e *structs.Evaluation) *structs.Evaluation {
	c := e.Copy()
	c.Status = structs.EvalStatusPending
	return c
}

// release hands a batch to the Enqueuer. Never call it with mu held.
func (b *BlockedEvals) release(batch map[*structs.Evaluation]string) {
	if len(batch) == 0 {
		return
	}
	b.logger.Debug("releasing blocked evals", "count", len(batch))
	b.enqueuer.EnqueueAll(batch)
}

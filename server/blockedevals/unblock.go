package blockedevals

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Unblock records that capacity of a computed node class changed at Raft
// index (a node registered, became eligible, or freed resources). Matching
// evaluations are released after the coalescing window.
func (b *BlockedEvals) Unblock(computedClass string, index uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recordLocked(b.classMarks, b.pendingClasses, computedClass, index)
}

// UnblockNode records that capacity on one node changed at Raft index;
// evaluations tied to that node are released after the coalescing window.
func (b *BlockedEvals) UnblockNode(nodeID string, index uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recordLocked(b.nodeMarks, b.pendingNodes, nodeID, index)
}

// recordLocked notes a capacity change and arms the coalescing timer.
func (b *BlockedEvals) recordLocked(marks, pending map[string]mark, key string, index uint64) {
	if !b.enabled {
		return
	}
	now := b.clock.Now()
	b.pruneLocked(now)
	raise(marks, key, index, now)
	raise(pending, key, index, now)
	if b.flushTimer == nil {
		gen := b.flushGen
		b.flushTimer = b.clock.AfterFunc(b.cfg.CoalesceWindow, func() { b.flush(gen) })
	}
}

// raise keeps the highest index seen for key, stamped with now.
func raise(m map[string]mark, key string, index uint64, now time.Time) {
	m[key] = mark{index: max(index, m[key].index), at: now}
}

// stopFlushLocked cancels the coalescing timer; a callback already running
// sees a newer flushGen and does nothing.
func (b *BlockedEvals) stopFlushLocked() {
	if b.flushTimer != nil {
		b.flushTimer.Stop()
		b.flushTimer = nil
	}
	b.flushGen++
}

// flush is the coalescing timer callback: it applies every pending change.
func (b *BlockedEvals) flush(gen uint64) {
	b.mu.Lock()
	if gen != b.flushGen || !b.enabled {
		b.mu.Unlock()
		return
	}
	b.flushTimer = nil
	b.flushGen++
	batch := b.takeLocked(b.matchPendingLocked())
	clear(b.pendingClasses)
	clear(b.pendingNodes)
	b.mu.Unlock()
	b.release(batch)
}

// matchPendingLocked returns the IDs of evaluations the pending changes
// release.
func (b *BlockedEvals) matchPendingLocked() []string {
	var ids []string
	for node, m := range b.pendingNodes {
		for id := range b.byNode[node] {
			if m.index > b.byID[id].eval.SnapshotIndex {
				ids = append(ids, id)
			}
		}
	}
	if len(b.pendingClasses) == 0 {
		return ids
	}
	for id, t := range b.byID {
		if t.eval.NodeID == "" && classChangeHelps(t.eval, b.pendingClasses) {
			ids = append(ids, id)
		}
	}
	return ids
}

// classChangeHelps reports whether any class change newer than the
// evaluation's snapshot could help it: the class is eligible or unknown to
// it, or the evaluation escaped class tracking.
func classChangeHelps(e *structs.Evaluation, changes map[string]mark) bool {
	for class, m := range changes {
		if m.index <= e.SnapshotIndex {
			continue
		}
		if e.EscapedComputedClass {
			return true
		}
		if eligible, known := e.ClassEligibility[class]; !known || eligible {
			return true
		}
	}
	return false
}

// missedLocked reports whether a capacity change already recorded is newer
// than e's snapshot and could help it.
func (b *BlockedEvals) missedLocked(e *structs.Evaluation) bool {
	if e.NodeID != "" {
		m, ok := b.nodeMarks[e.NodeID]
		return ok && m.index > e.SnapshotIndex
	}
	return classChangeHelps(e, b.classMarks)
}

// UnblockFailed releases every evaluation blocked because a scheduler ran
// out of plan attempts (TriggeredBy max-plan-attempts); the leader calls it
// periodically.
func (b *BlockedEvals) UnblockFailed() {
	b.mu.Lock()
	var ids []string
	if b.enabled {
		for id, t := range b.byID {
			if t.eval.TriggeredBy == structs.EvalTriggerMaxPlans {
				ids = append(ids, id)
			}
		}
	}
	batch := b.takeLocked(ids)
	b.mu.Unlock()
	b.release(batch)
}

// takeLocked removes the given evaluations and returns their pending
// copies with tokens.
func (b *BlockedEvals) takeLocked(ids []string) map[*structs.Evaluation]string {
	if len(ids) == 0 {
		return nil
	}
	batch := make(map[*structs.Evaluation]string, len(ids))
	for _, id := range ids {
		t := b.byID[id]
		batch[pendingCopy(t.eval)] = t.token
		b.removeLocked(id)
	}
	return batch
}

// pruneLocked forgets capacity changes older than UnblockIndexTTL, at most
// once per quarter TTL.
func (b *BlockedEvals) pruneLocked(now time.Time) {
	ttl := b.cfg.UnblockIndexTTL
	if now.Sub(b.lastPrune) < ttl/4 {
		return
	}
	b.lastPrune = now
	cutoff := now.Add(-ttl)
	for _, marks := range []map[string]mark{b.classMarks, b.nodeMarks} {
		for k, m := range marks {
			if m.at.Before(cutoff) {
				delete(marks, k)
			}
		}
	}
}

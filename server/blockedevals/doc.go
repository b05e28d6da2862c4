// Package blockedevals tracks the leader's blocked evaluations: those a
// scheduler could not fully place for lack of capacity. It releases them to
// the eval broker when capacity that could help appears, and only then, so
// that a burst of node updates does not turn into an evaluation storm.
//
// # Contract
//
//   - A tracker starts disabled. The leader calls SetEnabled(true) after it
//     gains leadership and then calls Block for every blocked evaluation in
//     state. SetEnabled(false) drops everything and stops the coalescing
//     timer. Every other method is a no-op while disabled.
//   - At most one blocked evaluation is tracked per job (per job and node for
//     node-tied evaluations, those with a NodeID, as system jobs create).
//     Blocking a newer one (by max(CreateIndex, SnapshotIndex)) replaces the
//     older, and the loser, older or not, is handed out by GetDuplicates so
//     the leader can cancel it through Raft. Untrack drops a job's evaluations
//     without reporting them.
//   - Unblock(class, index) releases every tracked evaluation (not tied to a
//     node) whose SnapshotIndex is below index and for which class is
//     eligible, not in ClassEligibility (never seen), or that escaped
//     computed-class tracking. Evaluations for which class is known
//     ineligible stay blocked. UnblockNode(nodeID, index) does the same for
//     evaluations tied to nodeID. UnblockFailed releases evaluations created
//     after a scheduler exhausted its plan attempts.
//   - Unblock and UnblockNode are coalesced: they record the capacity change
//     and return at once; after Config.CoalesceWindow every change recorded
//     meanwhile is applied together and the released evaluations are handed
//     to the Enqueuer in one EnqueueAll call (the eval broker hands such a
//     batch out one priority level at a time, so the highest priority gets
//     the capacity first). Each evaluation is released at most once however
//     many changes match it.
//   - No missed unblock: the tracker remembers, per class and per node, the
//     index of the last capacity change. Block (or Reblock) of an evaluation
//     whose SnapshotIndex is older than a matching change releases it at
//     once, synchronously, instead of tracking it: the scheduler planned
//     without that capacity.
//   - Released evaluations are copies with Status pending, passed to the
//     Enqueuer with the token given to Reblock ("" for Block), so the broker
//     can re-enqueue an evaluation still outstanding under that token.
//
// Evaluations passed in are shared, never modified. Evaluations returned by
// GetDuplicates are the ones passed in: Copy before changing them.
//
// # Concurrency
//
// Every exported method is safe for concurrent use. All state is guarded by
// BlockedEvals.mu; methods with the Locked suffix require it held. The
// Enqueuer is always called without mu held, from the caller's goroutine
// (Block, Reblock, UnblockFailed) or the clock's (coalesced unblocks), so it
// may call back into the tracker. A Clock's AfterFunc must never run its
// function inline.
//
// # What it must never do
//
// No I/O: no Raft, no RPC, no state store and no real clock other than the
// injected Clock. It never writes an evaluation's status anywhere; the
// leader cancels duplicates through Raft.
package blockedevals

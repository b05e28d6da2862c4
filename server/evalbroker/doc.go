// Package evalbroker is the leader's queue of pending evaluations: it hands
// each evaluation to exactly one scheduler worker at a time, takes it back
// when the worker acks or nacks it, and redelivers it when the worker fails
// or goes silent.
//
// # Contract
//
//   - A Broker starts disabled. The leader calls SetEnabled(true) after it
//     gains leadership and then re-enqueues every pending evaluation from
//     state (Enqueue / EnqueueAll). SetEnabled(false) on leadership loss
//     drops everything, stops every timer and wakes every blocked Dequeue,
//     which returns structs.ErrBrokerDisabled. Enqueue while disabled is a
//     silent no-op.
//   - Ready evaluations wait in one queue per scheduler type ("service",
//     "batch", "system", "_core", ...), highest Priority first, then lowest
//     CreateIndex, then arrival order. Dequeue takes the best head among the
//     requested types; equal priorities across types are served round-robin.
//     Blocked callers are woken longest-waiting first, except that callers
//     in the leader's own process (DequeueLocal) go before remote ones: an
//     idle leader worker needs no Raft catch-up and no plan RPC.
//   - EnqueueAll takes a batch (the blocked evaluations one capacity change
//     released) and hands it out one priority level at a time, across
//     scheduler types: a lower level is enqueued only once every
//     evaluation of the level above has left the broker (acked, or
//     superseded). A worker acks after its plan is committed, so a
//     lower-priority evaluation is scheduled only after the higher ones
//     took what they could, and the plan applier refuses it that capacity.
//     A batch of one priority is enqueued at once.
//   - At most one evaluation per job (namespace + job ID) is outstanding
//     (ready, unacked, waiting for redelivery or in the failed queue). Later
//     ones wait. When the outstanding one is acked, only the newest waiter
//     (highest ModifyIndex, then CreateIndex) is released; the older waiters
//     are superseded and handed out by Cancelable so the leader can mark them
//     canceled through Raft. Evaluations with an empty JobID are not limited.
//   - Each delivery has a unique token. Ack and Nack with a wrong token fail
//     with a structs.ErrTokenMismatch-coded error; for an evaluation that is
//     not outstanding they fail with a structs.ErrNotFound-coded error; while
//     disabled, with structs.ErrBrokerDisabled.
//   - A delivery not acked within Config.NackTimeout is nacked by the broker.
//     PauseNackTimeout / ResumeNackTimeout stop and restart that clock while
//     the evaluation's plan waits in the plan queue; OutstandingReset
//     restarts it.
//   - A nacked evaluation is redelivered after InitialNackDelay (first nack)
//     or SubsequentNackDelay (later nacks). Once it has been delivered
//     DeliveryLimit times, a nack moves it to the FailedQueue ("_failed")
//     instead; the leader dequeues from that queue, marks the evaluation
//     failed with a follow-up evaluation through Raft, and acks it.
//   - Evaluations whose WaitUntil (or, without WaitUntil, Wait) lies in the
//     future are held until then.
//   - Cover lets a node event be absorbed by an evaluation of its job that
//     waits for delivery (ready, waiting behind the job's outstanding one,
//     or held for at most Config.CoverDelay) instead of creating another:
//     the job's next delivery from its scheduler's queue is bound to the
//     returned Hold, and CoverIndex, the extra index its worker must reach,
//     waits until every bound Hold is Done and returns the highest index
//     they were given. A nack hands the holds to the job's next delivery.
//     An evaluation already delivered never covers. See cover.go.
//   - Enqueue with a token (EnqueueAll) of an evaluation that is currently
//     outstanding under that token re-enqueues it once that delivery is
//     acked (used by blocked evals when an evaluation is reblocked while its
//     worker still holds it); a nack drops that request.
//
// # Lifecycle of one evaluation
//
//	Enqueue ─► delayed ──(WaitUntil passes)──┐
//	   │                                     ▼
//	   └───────────────────────────────► job slot free? ──no──► pending (per job)
//	                                         │ yes                  │ on Ack of the
//	                                         ▼                      │ job's eval: newest
//	              ┌────────────────────► ready[Type] ◄──────────────┘ released, older
//	              │                          │ Dequeue                ones Cancelable
//	   (nack delay│passes)                   ▼
//	           delayed ◄──Nack / timeout── unacked ──Ack──► gone (slot freed)
//	                   (deliveries < limit)  │
//	                                         └──Nack / timeout, limit reached──► ready[_failed]
//
// Evaluations are shared, not copied: the broker never modifies one it was
// given, and callers must not modify one they receive from Dequeue (Copy it
// first).
//
// # Concurrency
//
// Every exported method is safe for concurrent use. All state is guarded by
// Broker.mu; methods with the Locked suffix require it held. While holding mu
// the broker calls nothing outside itself but its Clock (AfterFunc, Stop), and
// timer callbacks take mu themselves, so a Clock's AfterFunc must never run
// its function inline.
//
// # What it must never do
//
// The broker performs no I/O: no Raft, no RPC, no state store access and no
// real clock other than the injected Clock. It never changes an
// evaluation's status; the leader does that through Raft.
package evalbroker

// Package planqueue is the leader's queue of plans submitted by scheduler
// workers and waiting for the plan applier. It orders them, hands them to
// the applier one at a time, and carries each plan's result back to the
// worker that submitted it.
//
// # Contract
//
//   - A Queue starts disabled. The leader enables it with SetEnabled(true)
//     when it gains leadership. While disabled, Enqueue fails with
//     structs.ErrPlanQueueDisabled and Dequeue returns that error.
//     SetEnabled(false) fails every plan still queued, and every plan
//     dequeued but not yet answered, with structs.ErrPlanQueueDisabled, and
//     wakes a blocked Dequeue. So Wait always returns once the leader steps
//     down, even if the applier never answers.
//   - Dequeue returns the queued plan with the highest Plan.Priority,
//     first-in first-out within a priority.
//   - Every PendingPlan is answered exactly once: the first Respond wins
//     and later ones are ignored. Wait blocks until then and may be called
//     any number of times from any goroutine.
//
// The queue never copies or modifies a plan; the submitter must not modify
// it after Enqueue, and the applier owns it after Dequeue.
//
// # Concurrency
//
// Every exported method is safe for concurrent use. Queue state is guarded
// by Queue.mu; a PendingPlan's answer is written once, before its done
// channel is closed, and read only after. Respond is never called with mu
// held, so an applier may Respond from any goroutine.
//
// # What it must never do
//
// No I/O: no Raft, no RPC, no state store. It does not check plans; the
// applier does that against the current state.
package planqueue

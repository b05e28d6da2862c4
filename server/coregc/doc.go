// Package coregc is the servers' garbage collector (Nomad's "core"
// scheduler): it finds what the cluster no longer needs to remember and
// hands it to a Writer that deletes it through Raft.
//
// Four kinds of garbage, each with an age threshold (Nomad's defaults in
// DefaultThresholds):
//
//   - jobs (4 h): a dead job (stopped, or a batch job that finished) whose
//     evaluations and allocations are all terminal, and whose latest
//     activity (submit time, evaluation or allocation change) is older
//     than the threshold, is purged together with them;
//   - evaluations (1 h): a terminal evaluation older than the threshold is
//     deleted with its allocations once each of them is collectable
//     (terminal, not running on a client, old enough, and not a failed
//     allocation that its job may still reschedule); collectable
//     allocations of an evaluation that must stay go on their own.
//     Evaluations of a batch job that is not stopped are left to the job
//     collection: the scheduler counts a batch job's finished allocations;
//   - deployments (1 h): a deployment no longer active (successful, failed,
//     cancelled) older than the threshold that no live allocation names is
//     deleted, Nomad's deploymentGC rule; a purged job's deployments go
//     with it, and so does any deployment whose job no longer exists;
//   - nodes (24 h): a node down for longer than the threshold with no live
//     allocation is deregistered.
//
// Ages come from the objects' own times (evaluations', allocations' and
// deployments' ModifyTime, jobs' SubmitTime, nodes' StatusUpdatedAt),
// compared with an injected clock. Zero thresholds (Force, for `drover system gc`) collect
// everything terminal regardless of age.
//
// Find is the whole decision: a pure function of a state snapshot and the
// time. Collector wraps it: Collect runs one collection and writes it in
// bounded batches; Run collects every interval on the leader.
//
// This package must never write state except through its Writer, and
// never collect anything a scheduler still reads to make a decision (live
// allocations, the evaluations and allocations of a running batch job,
// failed allocations awaiting rescheduling).
package coregc

// Package planapply is the leader's plan applier: the single arbiter of
// what the cluster commits.
//
// Workers on every server schedule against their own snapshots, so two
// plans may claim the same capacity. The applier takes plans one at a time
// from the plan queue and checks each node's part against the LATEST state
// (optimistic concurrency): a node's part is refused if the node is gone,
// not ready, or would be overcommitted; new placements are also refused on
// an ineligible or draining node. What fits is committed in one Raft entry;
// the result says what was committed and, if anything was refused, the
// index the worker must refresh to before retrying the rest.
//
// Commits are pipelined: while up to Config.MaxInflight earlier plans are
// still being committed (Raft batches them into shared log writes), the
// next plan is checked against a snapshot plus the placements of every
// commit in flight. Stops in flight are not credited until they are in
// the state, so a check never relies on another commit succeeding, or on
// the order in which the commits land.
//
// A node's check costs the size of the plan's part on it (plus the
// in-flight placements there), not the number of allocations it holds: it
// starts from the node's usage, which the state store keeps (NodeUsage),
// and looks up only the allocations the plan stops or replaces.
//
// The package never writes the state store itself: it commits only through
// the Apply function the server gives it.
package planapply

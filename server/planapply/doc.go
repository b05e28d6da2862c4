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
// Verification of the next plan overlaps the Raft commit of the previous
// one: the next plan is checked against a snapshot that already includes the
// previous result (applied optimistically to the snapshot, which memdb
// allows without touching the real store). At most one commit is in flight.
//
// The package never writes the state store itself: it commits only through
// the Apply function the server gives it.
package planapply

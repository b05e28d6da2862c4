// Package autoscaler is the leader's autoscaler of node pools: for every
// pool with a PoolAutoscaler configuration (structs/autoscale.go) it
// creates instances at a Provider when the queue needs capacity the pool
// lacks, probes them until their node is up, and shuts them down when
// they have been idle long enough:
//
//	blocked evals (capacity) ──> asks ──┐
//	instances + their nodes ────────────┼──> Plan ──> Decision
//	configuration, quota back-off ──────┘              │
//	                     record (Raft) ─> Create ──────┤
//	                     record state changes, events ─┤
//	                     Destroy ─> record gone ───────┤
//	                     node eligibility, drain ──────┘
//
// Plan is the whole decision: a pure function of a PoolView and the
// time, tested without Raft, processes or a clock. Autoscaler.Run is the
// loop around it, started on leadership and stopped on its loss; it waits
// on the state's watch channels and on the plan's next timer from an
// injected clock. Everything it decides from is replicated (the
// configuration, the instances, the back-off) or rebuilt on the leader
// (the blocked evaluations), so a new leader takes over: it first lists
// each pool's instances at the provider and reconciles them with the
// table (Autoscaler.reconcile states the adoption rule).
//
// Providers: Local runs `drover agent -client` processes on this machine;
// CloudSkeleton is the documented outline of a cloud provider.
//
// This package must never write state except through Writer, never
// schedule, and never run on a follower. Jobs of pools without an
// autoscaler cost it nothing: it reads the queue only when some pool has
// a configuration, and never touches the scheduler's path.
package autoscaler

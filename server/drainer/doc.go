// Package drainer is the leader's node drainer: it moves the allocations
// off draining nodes a few at a time and ends each drain when nothing is
// left on its node.
//
// A drain starts when Node.UpdateDrain writes a DrainStrategy (the node is
// then ineligible for new placements). From there the drainer, running on
// the leader only, repeats one pass each time the state it read changes:
//
//	draining nodes ──> live allocations on them
//	    │
//	    ├─ service allocations: per job and task group, at most
//	    │  migrate.max_parallel are unavailable at once. An allocation is
//	    │  available when it runs, is not marked for migration and (when
//	    │  the migrate block's health_check is checks or task_states) its
//	    │  client has set its health, healthy or not (Nomad's rule); a
//	    │  group of count C with A available may mark A-(C-max_parallel)
//	    │  more. So the next batch is marked only once the replacements of
//	    │  the previous one have been healthy for min_healthy_time, or
//	    │  their healthy_deadline has passed.
//	    ├─ batch allocations are left to finish;
//	    ├─ system allocations are marked last, once nothing else is live
//	    │  on the node (never with IgnoreSystemJobs);
//	    └─ at the drain's deadline everything left is marked at once.
//
// Marking sets DesiredTransition.Migrate and writes one node-drain
// evaluation per job in the same Raft entry; the scheduler then stops
// each marked allocation and places its replacement elsewhere. A node
// with no live allocation left (system ones aside with IgnoreSystemJobs)
// has its drain completed: DrainStrategy cleared, the node left
// ineligible, and a "Node drain complete" event.
//
// Plan is the whole decision: a pure function of a state snapshot and the
// time, tested without Raft or a clock. Drainer.Run is the loop around it:
// it blocks on the watch channels of everything Plan read (and on the next
// deadline, from an injected clock), and writes through the small Writer
// interface that the server implements with Raft applies.
//
// This package must never write state except through Writer, never
// schedule (choosing where replacements go is the scheduler's job), and
// never run on a follower: the server starts it as a leader hook.
package drainer

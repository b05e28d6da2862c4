// Package scheduler turns one evaluation into a plan. It is a pure
// function of its inputs: a read-only State snapshot, the evaluation, and
// a clock it is given. It acts only through the Planner interface
// (SubmitPlan, UpdateEval, CreateEval, ReblockEval), so a test can run it
// against a real state store through the Harness in testing.go.
//
// Three schedulers are built in (BuiltinSchedulers): "service" and "batch"
// share the generic scheduler, which reconciles a job's task groups with
// their allocations (reconcile.go: place missing instances, stop extras,
// replace lost, failed and migrating allocations, update in place or
// destructively), then places through the iterator stack (stack.go) and
// submits the plan, retrying on a partial commit. "system" runs one
// allocation per matching node (system_sched.go); "sysbatch" shares it,
// with batch semantics (a node that finished the current version is done). README.md draws the
// pipeline.
//
// Placement cost is linear in the number of placements plus the nodes
// looked at: each node's usage is read once per evaluation and then kept
// current as the plan changes, feasibility verdicts are cached per node,
// and the limit stage bounds how many nodes each placement ranks. Setup
// does not depend on the cluster's size: the nodes come from the state's
// shared NodeView (built once per version of the nodes table, with the
// ready nodes per datacenter), a node gets its per-evaluation record only
// when first touched, and the candidates are shuffled as they are drawn.
// Only the system scheduler walks every node.
//
// Usage:
//
//	sched, err := scheduler.NewScheduler(eval.Type, logger, snapshot, planner, time.Now)
//	if err != nil { ... }
//	err = sched.Process(eval) // records the outcome with planner.UpdateEval
//
// This package must never import Raft, RPC or server code, read the wall
// clock or the global random source (placement randomness comes from a
// seed derived from the evaluation ID, so the same evaluation over the
// same state makes the same choices), or modify an object it read from
// State (it copies what it changes).
package scheduler

// Package deploymentwatcher is the leader's deployment watcher: it moves
// running deployments (structs/deployment.go) on where the scheduler
// cannot, because the step needs the clock or a new job version:
//
//	running deployments ──> their job and allocations
//	    │
//	    ├─ an allocation of the deployment is unhealthy ──> failed
//	    │  ("Failed due to unhealthy allocations")
//	    ├─ a group's progress deadline passed before it completed
//	    │  ──> failed ("Failed due to progress deadline")
//	    │      └─ with auto_revert: the job goes back to its newest
//	    │         stable version, in the same write
//	    └─ every group waiting for promotion auto-promotes and has its
//	       canaries healthy ──> promoted
//
// Each write comes with an evaluation of the job, so the scheduler acts on
// it. The rest of a rollout is elsewhere: the scheduler creates
// deployments, paces replacements and marks a deployment successful (which
// marks its job version stable, in the store); clients report health, and
// each report makes an evaluation (Node.UpdateAlloc).
//
// Plan is the whole decision: a pure function of a state snapshot and the
// time, tested without Raft or a clock. Watcher.Run is the loop around it:
// it blocks on the watch channels of everything Plan read and on the next
// progress deadline (from an injected clock), and writes through Writer.
// Everything it reads is replicated state, so a new leader's watcher takes
// over running deployments where the old one left them.
//
// This package must never write state except through Writer, never
// schedule, and never run on a follower: the server starts it as a leader
// hook.
package deploymentwatcher

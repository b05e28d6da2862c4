// Package worker runs the scheduling loop on every server:
//
//	dequeue an evaluation from the leader's broker
//	  -> wait until local state reaches the evaluation's index
//	  -> take a memdb snapshot
//	  -> run the scheduler for the evaluation's type (a pure function)
//	  -> submit the plan to the leader (retrying while there is no leader)
//	  -> if the leader asks for a refresh, wait for that index and let the
//	     scheduler retry what was not committed
//	  -> write eval updates, creations and reblocks
//	  -> ack (nack on any error)
//
// A worker reaches the leader only through the Leader interface that
// server/ hands it, so it never imports server/. It must never touch Raft
// or the state store's write methods: every write goes through the leader.
// Whether to retry is decided by typed error codes (structs.CodeOf), never
// by error text.
package worker

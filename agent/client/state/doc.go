// Package state persists what a client needs to survive its own restart,
// in one bbolt file (<data dir>/client/state.db): each allocation it runs
// (with its job) and, per task, the task state (events, restarts) and the
// driver handle state (PID and process start time for raw_exec) needed to
// re-attach to a task that kept running.
//
// Values are msgpack-encoded with structs.MsgpackHandle. The package stores
// and loads; it must never decide anything about allocations or tasks.
package state

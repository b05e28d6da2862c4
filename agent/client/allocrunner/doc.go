// Package allocrunner runs one allocation on a client: an AllocRunner per
// allocation builds its directory and starts a task runner per task; each
// task runner takes its task through Received, Task Setup, Started,
// Terminated, Restarting / Not Restarting, Killing and Killed, applying the
// group's restart policy, and saves its state and driver handle after every
// change so that a restarted client can re-attach (Config.Restored).
//
//	ar, _ := allocrunner.New(allocrunner.Config{Alloc: a, Drivers: d, Updater: send, ...})
//	ar.Run()                 // returns at once
//	ar.Update(newer)         // desired stop/evict kills the tasks
//	<-ar.DoneCh()            // every task dead
//	ar.Destroy()             // kill, wait, remove dir and state
//	ar.Shutdown()            // client shutdown: leave tasks running
//
// Each start gives the driver the task's environment (taskenv.go: the
// NOMAD_* variables, NOMAD_META_*, the env block) and a copy of its driver
// config with the ${node.*}, ${attr.*}, ${meta.*} and ${NAME} references
// resolved (interpolate.go); the allocation's job is never modified.
//
// A task with artifact blocks fetches them before its first start, after
// its directory is built and before its templates render (artifacts.go,
// with agent/client/artifact): a failed fetch is a "Failed Artifact
// Download" event and the restart policy applies.
//
// A task with template blocks renders them before its first start
// (templates.go, with agent/client/template) and waits while their data
// is missing; env templates join its environment; a re-rendered template
// restarts or signals the running task, or runs its change script, through
// the task runner (a restart through the run loop's restartCh).
//
// The client status follows Nomad: any failed task fails the allocation
// (and its siblings are killed), else running, else pending, else complete.
// A dead leader task kills its siblings.
//
// This package never calls the servers (templates read services and
// variables through the agent's HTTP API): every change goes to Config.Updater,
// which the client batches. It must never block in the Updater or decide
// anything about placement.
package allocrunner

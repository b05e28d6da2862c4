// Package rawexec is the raw_exec task driver: it runs a command as a plain
// process, unisolated, in its own process group, with the task directory as
// its working directory and its output going to the FIFOs the client drains
// into rotated log files.
//
// Each task has a supervisor: the client's own executable started again
// (/proc/self/exe by default, Config.SupervisorPath), which this package's
// init turns into a supervisor when it sees DROVER_RAW_EXEC_SUPERVISOR=1
// and its argv[0] (so it works in drover and in any test binary linking the
// package). The supervisor runs in a session of its own, so signals to the
// client's process group and the client's death leave it alone; it ignores
// the usual stop signals sent to it. It starts the task as its child in the
// task's own process group, reports the task's PID and start time to the
// client over a pipe, waits for the task, kills whatever is left of the
// task's group with SIGKILL, writes the exit code and signal atomically to
// <alloc dir>/<task>@raw_exec/exit_status.json ('@' is not allowed in task
// names, so no task's directory is ever that one), waits (bounded) until a
// client has read the task's last output from the FIFOs, and exits.
//
//	client ──starts──> supervisor (own session) ──starts──> task (own group)
//	   <── fd 3: {pid, start time}       waits, kills group, writes exit_status.json
//
// The handle state saves the task's PID and start time (/proc/<pid>/stat
// field 22) and, in Data, the supervisor's, with the status file's path.
// Stopping sends the task's kill signal to the task's process group, then
// SIGKILL to the group after the kill timeout; the supervisor is never
// signalled and records the exit the signals cause. A fresh task's result
// is read from the status file once the supervisor (the client's child)
// exits. A client restarted later re-attaches while the supervisor runs
// (same PID and start time: a reused PID is never mistaken for it) and
// reads the status file when it is gone; a task that ended while no client
// ran is reported with its recorded exit at once. A state saved before
// supervisors existed, or a supervisor killed outright, leaves only the
// task's PID to watch: the task is re-attached if its PID still names it,
// and its exit is then unknown (driver.ErrExitUnknown).
//
// A Flavor builds another driver on the same supervisor: it names the
// driver, prepares each task's launch, starts it through its own Launcher
// in the supervisor (RunSupervisor) and cleans up after runs. The exec
// driver is one; raw_exec is the plain launcher. TaskStats reads a running
// task's usage: the flavor's, or the task's process tree in /proc.
//
// The driver is off unless the client enables it (plugin "raw_exec" {
// config { enabled = true } }), as in Nomad. Its own launcher must never
// confine or isolate the task (a Flavor's does), and the driver never
// writes logs itself, and never signals a PID that now names another
// process.
package rawexec

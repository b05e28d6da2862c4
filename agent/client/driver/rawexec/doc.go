// Package rawexec is the raw_exec task driver: it runs a command as a plain
// child process of the client, unisolated, in its own process group, with
// the task directory as its working directory and its output going to the
// FIFOs the client drains into rotated log files.
//
// Stopping sends the task's kill signal to the process group, then SIGKILL
// to the whole group after the kill timeout; when the main process exits on
// its own, whatever is left of its group is killed too. A handle saves the
// PID with the process start time (/proc/<pid>/stat field 22), so a client
// restarted later re-attaches only to the very same process, never to a
// process that reused the PID.
//
// The driver is off unless the client enables it (plugin "raw_exec" {
// config { enabled = true } }), as in Nomad. It must never confine or
// isolate the task (that is a future exec driver's job) and never write
// logs itself.
package rawexec

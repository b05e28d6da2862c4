// Package logs moves a task's stdout and stderr into size-rotated files and
// reads them back.
//
// A task writes to a FIFO (<alloc>/alloc/logs/.<task>.stdout.fifo); a Pump
// in the client copies the FIFO into a Rotator, which writes
// <alloc>/alloc/logs/<task>.stdout.0, .1, ... (as Nomad names them), starting
// a new file when the current one reaches the size limit and deleting the
// oldest beyond the file count. The task opens its end of the FIFO read-write,
// so its writes never fail while the client restarts: output waits in the
// pipe until the next client's Pump drains it. NewReader streams the rotated
// files from an offset, optionally following them as they grow.
//
// This package knows nothing of allocations, drivers or servers; it must
// never start processes.
package logs

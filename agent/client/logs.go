package client

import (
	"io"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/logs"
	"github.com/drover-project/drover/structs"
)

// TaskLogs streams a task's stdout or stderr (logType "stdout" or
// "stderr") across its rotated files. offset >= 0 starts that many bytes
// into the oldest file kept; offset < 0 starts that many bytes before the
// end. With follow, the stream waits for more output and ends (io.EOF)
// once the task is dead and everything was read; without follow it ends at
// the current end. The caller must Close the reader (which also unblocks a
// Read waiting for output).
//
// Errors: structs.ErrCodeInvalid for a bad log type, structs.ErrNotFound
// for an allocation or task this client does not hold.
func (c *Client) TaskLogs(allocID, task, logType string, follow bool, offset int64) (io.ReadCloser, error) {
	if logType != allocdir.Stdout && logType != allocdir.Stderr {
		return nil, structs.NewError(structs.ErrCodeInvalid, "log type must be %q or %q; got %q", allocdir.Stdout, allocdir.Stderr, logType)
	}
	ar := c.runner(allocID)
	if ar == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	if _, ok := ar.TaskDone(task); !ok {
		return nil, structs.NewError(structs.ErrCodeNotFound, "task %q not found in allocation %q", task, allocID)
	}
	done := func() bool {
		d, _ := ar.TaskDone(task)
		return d
	}
	return logs.NewReader(ar.AllocDir().LogDir, allocdir.LogBase(task, logType), offset, follow, done)
}

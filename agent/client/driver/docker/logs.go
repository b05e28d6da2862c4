package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/drover-project/drover/agent/client/logs"
)

// logsSinceFile, in the driver's task directory, holds the timestamp of
// the last log message written to the FIFOs (RFC 3339, nanoseconds).
const logsSinceFile = "logs_since"

// logsSaveEvery is how often the position is saved (when it moved and
// the client drained the FIFOs); a client killed in between has the next
// one write that output again.
const logsSaveEvery = 250 * time.Millisecond

// streamLogs follows the container's output from since and writes it to
// the task's FIFOs until the container stops (the stream ends) or the
// driver is closed. A stream that breaks while the container runs is
// resumed after the last message written.
func (h *handle) streamLogs(since time.Time) {
	defer h.d.wg.Done()
	defer close(h.logsDone)
	stdout, err := openOutput(h.state.Data[dataStdout])
	if err != nil {
		h.d.logger.Warn("opening the task's stdout failed; its output is not collected", "task_id", h.state.TaskID, "error", err)
		return
	}
	defer stdout.Close()
	stderr, err := openOutput(h.state.Data[dataStderr])
	if err != nil {
		h.d.logger.Warn("opening the task's stderr failed; its output is not collected", "task_id", h.state.TaskID, "error", err)
		return
	}
	defer stderr.Close()
	c := &logCopier{stdout: stdout, stderr: stderr, files: []*os.File{stdout, stderr}, last: since, dir: h.state.Data[dataStateDir]}
	defer c.save()
	// A closed driver (the client stops) saves the position while the
	// FIFOs are still open (so a drained pipe counts), and must not wait
	// on a FIFO nobody drains any more: closing the files ends a blocked
	// write.
	stop := context.AfterFunc(h.d.ctx, func() {
		c.save()
		stdout.Close()
		stderr.Close()
	})
	defer stop()
	ctx := h.d.ctx
	saverDone := make(chan struct{})
	defer close(saverDone)
	go c.saveEvery(logsSaveEvery, saverDone)
	for {
		opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
		if last := c.lastWritten(); !last.IsZero() {
			next := last.Add(time.Nanosecond)
			opts.Since = strconv.FormatInt(next.Unix(), 10) + "." + leftPad9(next.Nanosecond())
		}
		rc, err := h.d.client.ContainerLogs(ctx, h.id, opts)
		if err == nil {
			if h.state.Data[dataTTY] == "true" {
				err = c.copyLines(rc)
			} else {
				err = c.copyFrames(rc)
			}
			rc.Close()
		}
		if ctx.Err() != nil {
			return
		}
		ins, ierr := h.d.inspect(h.id)
		if ierr != nil || ins.State == nil || !ins.State.Running {
			return // the stream ended with the container
		}
		if err != nil {
			h.d.logger.Debug("the container's log stream broke; resuming", "container_id", shortID(h.id), "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// openOutput opens a task's output FIFO (a regular file, as tests give,
// is appended to), or /dev/null when path is empty.
func openOutput(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	return logs.OpenWriteEnd(path)
}

// logCopier writes log messages to the FIFOs and remembers the last
// message's timestamp.
type logCopier struct {
	stdout, stderr io.Writer
	files          []*os.File // the FIFOs, checked for undrained output
	dir            string

	mu    sync.Mutex
	last  time.Time // the last message written; guarded by mu
	saved time.Time // the timestamp last saved; guarded by mu
}

func (c *logCopier) lastWritten() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// saveEvery saves the position every period until done closes.
func (c *logCopier) saveEvery(period time.Duration, done <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			c.save()
		}
	}
}

// copyFrames copies a multiplexed stream: frames of an 8-byte header
// (stream, 3 zero bytes, big-endian size) and a payload that starts with
// the message's timestamp and a space.
func (c *logCopier) copyFrames(r io.Reader) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var hdr [8]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[4:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		w := c.stdout
		if hdr[0] == 2 {
			w = c.stderr
		}
		c.write(w, buf)
	}
}

// copyLines copies a TTY stream: lines, each after its timestamp.
func (c *logCopier) copyLines(r io.Reader) error {
	br := bufio.NewReaderSize(r, 32<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.write(c.stdout, line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// write writes one message without its timestamp.
func (c *logCopier) write(w io.Writer, msg []byte) {
	if i := strings.IndexByte(string(msg[:min(len(msg), 64)]), ' '); i > 0 {
		if ts, err := time.Parse(time.RFC3339Nano, string(msg[:i])); err == nil {
			if ts.Before(c.lastWritten()) {
				return // already written before a resume
			}
			msg = msg[i+1:]
			_, _ = w.Write(msg)
			c.mu.Lock()
			c.last = ts
			c.mu.Unlock()
			return
		}
	}
	_, _ = w.Write(msg)
}

// save writes the last timestamp to logsSinceFile (atomically), but only
// while the client has drained the FIFOs: output still in a pipe when the
// client stops is lost with the pipe, so the next client must resume
// before it (a message may then be written twice, never lost).
func (c *logCopier) save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" || c.last.IsZero() || c.last.Equal(c.saved) {
		return
	}
	for _, f := range c.files {
		if !drained(f) {
			return
		}
	}
	c.saved = c.last
	tmp := filepath.Join(c.dir, logsSinceFile+".tmp")
	if err := os.WriteFile(tmp, []byte(c.last.Format(time.RFC3339Nano)), 0o600); err == nil {
		_ = os.Rename(tmp, filepath.Join(c.dir, logsSinceFile))
	}
}

// readLogsSince reads the timestamp an earlier client saved (zero: none).
func readLogsSince(dir string) time.Time {
	if dir == "" {
		return time.Time{}
	}
	b, err := os.ReadFile(filepath.Join(dir, logsSinceFile))
	if err != nil {
		return time.Time{}
	}
	ts, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}
	}
	return ts
}

func leftPad9(n int) string {
	s := strconv.Itoa(n)
	return strings.Repeat("0", 9-len(s)) + s
}

// drained reports whether nothing waits unread in f (a FIFO, or a plain
// file in tests); false when it cannot tell (f closed).
func drained(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	if err := rc.Control(func(fd uintptr) {
		n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		ok = err == nil && n == 0
	}); err != nil {
		return false
	}
	return ok
}

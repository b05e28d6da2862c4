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
	"time"

	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/logs"
)

// logsSinceFile, in the driver's task directory, holds the timestamp of
// the last log message written to the FIFOs (RFC 3339, nanoseconds).
const logsSinceFile = "logs_since"

// logsSaveEvery bounds how often logsSinceFile is rewritten while output
// flows; a client killed in between writes up to that much output again.
const logsSaveEvery = time.Second

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
	// A closed driver must not wait on a FIFO nobody drains any more:
	// closing the files ends a blocked write.
	stop := context.AfterFunc(h.d.ctx, func() {
		stdout.Close()
		stderr.Close()
	})
	defer stop()
	c := &logCopier{stdout: stdout, stderr: stderr, last: since, dir: h.state.Data[dataStateDir]}
	defer c.save()
	ctx := h.d.ctx
	for {
		opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
		if !c.last.IsZero() {
			next := c.last.Add(time.Nanosecond)
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
	last           time.Time
	dir            string
	saved          time.Time // when last was last saved
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
			if ts.Before(c.last) {
				return // already written before a resume
			}
			c.last = ts
			msg = msg[i+1:]
		}
	}
	_, _ = w.Write(msg)
	if time.Since(c.saved) >= logsSaveEvery {
		c.save()
	}
}

// save writes the last timestamp to logsSinceFile (atomically).
func (c *logCopier) save() {
	if c.dir == "" || c.last.IsZero() {
		return
	}
	c.saved = time.Now()
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

package sim

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// Limits of a frameWriter.
const (
	// frameWriterMaxPending bounds the bytes accepted but not yet
	// written; a writer beyond it waits.
	frameWriterMaxPending = 4 << 20
	// frameWriterCloseDrain bounds how long Close waits for pending bytes.
	frameWriterCloseDrain = 250 * time.Millisecond
)

var errWriterClosed = errors.New("sim: connection closed")

// frameWriter gathers a session's frames and writes them from one
// flusher goroutine, as netutil.CoalescingConn does, with one difference
// made for a simulator: the flusher yields once before it takes what is
// pending. The callers the session's reader has just woken (each about to
// send its next request) then add their frames first, and many requests
// share one system call (and one segment for the server to read) at the
// cost of a scheduler round, never a timer. A failed write is sticky.
type frameWriter struct {
	conn net.Conn
	wake chan struct{} // capacity 1: bytes are pending or Close was called
	done chan struct{} // closed when the flusher exits

	mu      sync.Mutex
	space   *sync.Cond // guarded by mu: pending shrank, or err/closed set
	pending []byte     // guarded by mu
	spare   []byte     // guarded by mu: the flusher's last buffer
	err     error      // guarded by mu
	closed  bool       // guarded by mu
}

func newFrameWriter(c net.Conn) *frameWriter {
	w := &frameWriter{conn: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.space = sync.NewCond(&w.mu)
	go w.flushLoop()
	return w
}

// Write queues p; it blocks only while frameWriterMaxPending bytes wait.
func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	for w.err == nil && !w.closed && len(w.pending) > 0 && len(w.pending)+len(p) > frameWriterMaxPending {
		w.space.Wait()
	}
	switch {
	case w.err != nil:
		err := w.err
		w.mu.Unlock()
		return 0, err
	case w.closed:
		w.mu.Unlock()
		return 0, errWriterClosed
	}
	if w.pending == nil {
		w.pending, w.spare = w.spare[:0], nil
	}
	w.pending = append(w.pending, p...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *frameWriter) flushLoop() {
	defer close(w.done)
	for range w.wake {
		for {
			runtime.Gosched() // let the callers just woken add their frames
			w.mu.Lock()
			buf, closed := w.pending, w.closed
			w.pending = nil
			w.space.Broadcast()
			w.mu.Unlock()
			if len(buf) == 0 {
				if closed {
					return
				}
				break
			}
			_, err := w.conn.Write(buf)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = err
			}
			if cap(buf) <= frameWriterMaxPending {
				w.spare = buf[:0]
			}
			w.space.Broadcast()
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// Close stops accepting writes, gives pending bytes a short time to
// leave, and closes the connection.
func (w *frameWriter) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.space.Broadcast()
	w.mu.Unlock()
	if !already {
		select {
		case w.wake <- struct{}{}:
		default:
		}
		select {
		case <-w.done:
		case <-time.After(frameWriterCloseDrain):
		}
	}
	return w.conn.Close()
}

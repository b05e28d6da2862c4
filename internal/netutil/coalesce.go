package netutil

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// Limits of a CoalescingConn.
const (
	// maxPending bounds the bytes accepted but not yet written; a writer
	// beyond it waits (back-pressure instead of unbounded memory).
	maxPending = 4 << 20
	// closeDrain bounds how long Close waits for pending bytes to leave.
	closeDrain = 250 * time.Millisecond
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("netutil: connection closed")

// CoalescingConn is a net.Conn whose writes are gathered and sent by one
// flusher goroutine: a Write copies its bytes into a pending buffer and
// returns; the flusher sends everything pending in one write. While the
// flusher is inside a write, later Writes pile up and leave together, so
// under load many small frames (yamux writes every frame's header and body
// separately) share one system call and one TCP segment; when idle, a
// Write is sent at once, with no timer and no added delay.
//
// A failed write is sticky: every later Write returns that error. Reads
// and the other methods go straight to the wrapped connection.
type CoalescingConn struct {
	net.Conn

	wake  chan struct{} // capacity 1: bytes are pending or Close was called
	done  chan struct{} // closed when the flusher has exited
	yield bool          // see YieldBeforeFlush

	mu sync.Mutex
	// Every field below is guarded by mu.
	space   *sync.Cond // broadcast when pending shrinks or err/closed is set
	pending []byte     // accepted, not yet handed to the flusher
	spare   []byte     // the flusher's last buffer, reused for pending
	err     error      // sticky write error
	closed  bool
}

// Option configures a CoalescingConn.
type Option func(*CoalescingConn)

// YieldBeforeFlush makes the flusher yield the processor once before it
// takes what is pending. Goroutines that were just woken (say, callers
// whose answers the connection's reader has handed out, each about to
// send its next request) then add their bytes first, and more of them
// share one write, at the cost of a scheduler round, never a timer. The
// node simulator's RPC client uses it.
func YieldBeforeFlush() Option { return func(c *CoalescingConn) { c.yield = true } }

// NewCoalescingConn wraps c and starts its flusher. The caller must Close
// the returned connection (not c) to stop it.
func NewCoalescingConn(c net.Conn, opts ...Option) *CoalescingConn {
	cc := &CoalescingConn{Conn: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	for _, o := range opts {
		o(cc)
	}
	cc.space = sync.NewCond(&cc.mu)
	go cc.flushLoop()
	return cc
}

// Write queues p for sending. It blocks only while maxPending bytes are
// already queued.
func (c *CoalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for c.err == nil && !c.closed && len(c.pending) > 0 && len(c.pending)+len(p) > maxPending {
		c.space.Wait()
	}
	switch {
	case c.err != nil:
		err := c.err
		c.mu.Unlock()
		return 0, err
	case c.closed:
		c.mu.Unlock()
		return 0, ErrClosed
	}
	if c.pending == nil {
		c.pending, c.spare = c.spare[:0], nil
	}
	c.pending = append(c.pending, p...)
	c.mu.Unlock()
	c.signal()
	return len(p), nil
}

func (c *CoalescingConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// flushLoop sends whatever is pending until Close, or until a write fails.
func (c *CoalescingConn) flushLoop() {
	defer close(c.done)
	for range c.wake {
		for {
			if c.yield {
				runtime.Gosched()
			}
			c.mu.Lock()
			buf, closed := c.pending, c.closed
			c.pending = nil
			c.space.Broadcast()
			c.mu.Unlock()
			if len(buf) == 0 {
				if closed {
					return
				}
				break
			}
			_, err := c.Conn.Write(buf)
			c.mu.Lock()
			if err != nil && c.err == nil {
				c.err = err
			}
			if cap(buf) <= maxPending {
				c.spare = buf[:0]
			}
			c.space.Broadcast()
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// Close stops accepting writes, gives pending bytes a short time to leave,
// and closes the wrapped connection.
func (c *CoalescingConn) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.space.Broadcast()
	c.mu.Unlock()
	if !already {
		c.signal()
		select {
		case <-c.done:
		case <-time.After(closeDrain):
		}
	}
	return c.Conn.Close()
}

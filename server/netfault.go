package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Network fault injection, for fault tests (server/testcluster's Pause and
// Partition). With Config.NetworkFaults every connection the server
// accepts or dials (RPC, Raft, the pool's forwards) passes through a
// netFault; without it (production) connections are not wrapped at all.
//
//   - Paused: the server behaves as a process stopped with SIGSTOP. Its
//     peers still connect and write (the kernel buffers the bytes), but
//     nothing it reads is handed on and nothing it writes leaves until
//     the pause ends: no answers, no Raft heartbeats, no votes, no Raft
//     log appends (pausedLogStore). Its own goroutines keep running
//     (unlike a stopped process), so a paused leader may notice it lost
//     its followers and step down, unless it is stuck appending a write
//     it received during the pause, as a stopped leader would be.
//   - Partitioned: every connection is closed and new ones fail, in both
//     directions, until healed.

// errPartitioned is the error of I/O on a partitioned server's connections.
var errPartitioned = errors.New("network partitioned (fault injection)")

type faultMode int

const (
	faultNone faultMode = iota
	faultPaused
	faultPartitioned
)

// netFault is the server's fault gate.
type netFault struct {
	mu      sync.Mutex
	mode    faultMode               // guarded by mu
	resumed chan struct{}           // closed when a pause ends; guarded by mu
	conns   map[*faultConn]struct{} // open wrapped connections; guarded by mu
	// on mirrors mode != faultNone, so unfaulted I/O takes no lock.
	on atomic.Bool
}

// wrap returns c behind the gate. Under a partition the connection is
// closed at once and the returned one fails every call.
func (f *netFault) wrap(c net.Conn) net.Conn {
	fc := &faultConn{Conn: c, f: f, closed: make(chan struct{})}
	f.mu.Lock()
	if f.conns == nil {
		f.conns = make(map[*faultConn]struct{})
	}
	f.conns[fc] = struct{}{}
	partitioned := f.mode == faultPartitioned
	f.mu.Unlock()
	if partitioned {
		fc.Close()
	}
	return fc
}

// set changes the fault. Ending a pause releases every blocked Read and
// Write; starting a partition closes every connection.
func (f *netFault) set(mode faultMode) {
	f.mu.Lock()
	prev := f.mode
	f.mode = mode
	f.on.Store(mode != faultNone)
	if mode == faultPaused && prev != faultPaused {
		f.resumed = make(chan struct{})
	}
	if prev == faultPaused && mode != faultPaused {
		close(f.resumed)
	}
	var closing []*faultConn
	if mode == faultPartitioned {
		for c := range f.conns {
			closing = append(closing, c)
		}
	}
	f.mu.Unlock()
	for _, c := range closing {
		c.Close()
	}
}

// gate blocks while the server is paused (until the pause ends or the
// connection closes) and fails under a partition.
func (f *netFault) gate(c *faultConn) error {
	if !f.on.Load() {
		return nil
	}
	f.mu.Lock()
	mode, resumed := f.mode, f.resumed
	f.mu.Unlock()
	switch mode {
	case faultPaused:
		select {
		case <-resumed:
			return f.gate(c)
		case <-c.closed:
			return net.ErrClosed
		}
	case faultPartitioned:
		c.Close()
		return errPartitioned
	}
	return nil
}

// waitResumed blocks while the server is paused.
func (f *netFault) waitResumed() {
	for f.on.Load() {
		f.mu.Lock()
		mode, resumed := f.mode, f.resumed
		f.mu.Unlock()
		if mode != faultPaused {
			return
		}
		<-resumed
	}
}

// pausedLogStore is the Raft log store of a server with network faults:
// while the server is paused, appends wait for the pause to end, as a
// stopped process writes nothing. A paused leader that has an entry to
// append (a write it received) therefore stays in its leader loop, as
// SIGSTOP would keep it: it does not step down when its lease lapses,
// and comes back believing it leads.
type pausedLogStore struct {
	raft.LogStore
	f *netFault
}

func (s pausedLogStore) StoreLog(l *raft.Log) error {
	s.f.waitResumed()
	return s.LogStore.StoreLog(l)
}

func (s pausedLogStore) StoreLogs(ls []*raft.Log) error {
	s.f.waitResumed()
	return s.LogStore.StoreLogs(ls)
}

// faultConn is a connection behind a netFault.
type faultConn struct {
	net.Conn
	f      *netFault
	once   sync.Once
	closed chan struct{}
}

// Read hands on what arrived only while the server is not paused.
func (c *faultConn) Read(b []byte) (int, error) {
	if err := c.f.gate(c); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	if gerr := c.f.gate(c); gerr != nil {
		return 0, gerr
	}
	return n, err
}

// Write sends only while the server is not paused.
func (c *faultConn) Write(b []byte) (int, error) {
	if err := c.f.gate(c); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// Close closes the connection and releases a Read or Write blocked by a
// pause.
func (c *faultConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}

// wrapFunc returns wrap, or nil for a nil gate (no faults configured).
func (f *netFault) wrapFunc() func(net.Conn) net.Conn {
	if f == nil {
		return nil
	}
	return f.wrap
}

// wrapConn puts c behind the fault gate when the server has one.
func (s *Server) wrapConn(c net.Conn) net.Conn {
	if s.netFault == nil {
		return c
	}
	return s.netFault.wrap(c)
}

// errNoNetworkFaults: the fault methods need Config.NetworkFaults.
var errNoNetworkFaults = errors.New("server: network faults need Config.NetworkFaults")

// PauseNetwork makes the server stop answering, as a process stopped with
// SIGSTOP (see netFault). For fault tests only: it needs
// Config.NetworkFaults.
func (s *Server) PauseNetwork() error { return s.setNetworkFault(faultPaused) }

// PartitionNetwork cuts the server off: its connections close and new
// ones fail in both directions. For fault tests only.
func (s *Server) PartitionNetwork() error { return s.setNetworkFault(faultPartitioned) }

// HealNetwork ends a pause or a partition.
func (s *Server) HealNetwork() error { return s.setNetworkFault(faultNone) }

func (s *Server) setNetworkFault(mode faultMode) error {
	if s.netFault == nil {
		return errNoNetworkFaults
	}
	s.netFault.set(mode)
	return nil
}

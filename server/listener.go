package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/internal/netutil"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

// errLayerClosed is returned by raftLayer.Accept after Close.
var errLayerClosed = errors.New("raft stream layer closed")

// listen accepts connections until the listener is closed, and hands each
// to handleConn.
func (s *Server) listen() {
	defer s.wg.Done()
	b := backoff.New(5*time.Millisecond, time.Second)
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			if s.isShutdown() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.logger.Error("accept failed", "error", err)
			if b.Wait(s.shutdownCtx) != nil {
				return
			}
			continue
		}
		b.Reset()
		// Counted before anything is read: an address at its limit gets
		// no goroutine and no buffer.
		release, ip, ok := s.rpcConns.acquire(conn)
		if !ok {
			conn.Close()
			if log, n := s.rpcConns.logRefusal(time.Now()); log {
				s.logger.Warn("too many RPC connections from one address; closing the new one",
					"remote", ip, "limit", s.rpcConns.max, "refused_since_last_line", n)
			}
			continue
		}
		if !s.trackConn(conn) {
			release()
			conn.Close()
			return
		}
		deadline := time.Now().Add(s.config.RPCHandshakeTimeout)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handleConn(conn, deadline, release)
		}()
	}
}

// handleConn reads the handshake (the protocol byte and, for RPC, the
// first yamux frame header) before deadline and dispatches the
// connection; release gives back its place in the per-address count once
// the connection is done.
func (s *Server) handleConn(conn net.Conn, deadline time.Time, release func()) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
	}
	proto, hc, err := readHandshake(conn, deadline)
	if err != nil {
		if !s.isShutdown() && !errors.Is(err, io.EOF) {
			s.logger.Debug("RPC handshake failed; closing the connection", "remote", conn.RemoteAddr(), "error", err)
		}
		s.untrackConn(conn)
		conn.Close()
		release()
		return
	}

	switch proto {
	case pool.ProtocolRPC:
		s.serveMux(hc)
		s.untrackConn(conn)
		release()
	case pool.ProtocolRaft:
		// Raft's transport owns the connection from here; it stays tracked
		// so Shutdown closes it, and counted until the transport closes it.
		if err := s.raftLayer.handoff(&releaseConn{Conn: conn, release: release}); err != nil {
			s.untrackConn(conn)
			conn.Close()
			release()
		}
	default:
		s.logger.Warn("unknown protocol byte", "byte", proto, "remote", conn.RemoteAddr())
		s.untrackConn(conn)
		conn.Close()
		release()
	}
}

// serveMux runs a yamux session; every stream carries msgpack RPC.
func (s *Server) serveMux(conn net.Conn) {
	// Frames that pile up under load leave in one write (see netutil).
	cc := netutil.NewCoalescingConn(conn)
	sess, err := yamux.Server(cc, s.yamuxConfig)
	if err != nil {
		s.logger.Error("yamux session failed", "error", err)
		cc.Close()
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			codec := msgpackrpc.NewCodec(stream, structs.MsgpackHandle)
			codec.SetReadLimit(s.config.RPCMaxMessageBytes)
			s.serveRPC(codec) // returns when the stream closes; closes the codec
		}()
	}
}

// trackConn records an accepted connection so Shutdown can close it. It
// returns false once the server is shutting down.
func (s *Server) trackConn(c net.Conn) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrackConn(c net.Conn) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	delete(s.conns, c)
}

// closeConns closes every tracked connection and refuses new ones.
func (s *Server) closeConns() {
	s.connsMu.Lock()
	conns := s.conns
	s.conns = nil
	s.connsMu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// raftLayer is the raft.StreamLayer over the shared listener: the server's
// accept loop hands it connections that began with pool.ProtocolRaft, and
// its Dial writes that byte first.
type raftLayer struct {
	addr    net.Addr
	connCh  chan net.Conn
	closeCh chan struct{}
	once    sync.Once
	logger  hclog.Logger
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(advertise string, logger hclog.Logger) *raftLayer {
	return &raftLayer{
		addr:    stringAddr(advertise),
		connCh:  make(chan net.Conn),
		closeCh: make(chan struct{}),
		logger:  logger,
	}
}

// handoff gives an accepted Raft connection to the transport.
func (l *raftLayer) handoff(c net.Conn) error {
	select {
	case l.connCh <- c:
		return nil
	case <-l.closeCh:
		return errLayerClosed
	}
}

// Accept implements net.Listener for raft's transport.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.connCh:
		return c, nil
	case <-l.closeCh:
		return nil, errLayerClosed
	}
}

// Close stops Accept. The shared TCP listener is closed by the server.
func (l *raftLayer) Close() error {
	l.once.Do(func() { close(l.closeCh) })
	return nil
}

// Addr is the advertised address, which raft records as this server's
// address in the configuration.
func (l *raftLayer) Addr() net.Addr { return l.addr }

// Dial connects to another server's listener and selects Raft.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if _, err := c.Write([]byte{pool.ProtocolRaft}); err != nil {
		c.Close()
		return nil, fmt.Errorf("write raft protocol byte: %w", err)
	}
	return c, nil
}

// stringAddr is a net.Addr for an advertised host:port.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

package server

import (
	"crypto/tls"
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

// firstByteTimeout bounds how long an accepted connection may take to send
// its protocol byte.
const firstByteTimeout = 10 * time.Second

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
		if !s.trackConn(conn) {
			conn.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handleConn(conn)
		}()
	}
}

// handleConn reads the protocol byte and dispatches the connection.
func (s *Server) handleConn(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
	}
	var buf [1]byte
	conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(conn, buf[:]); err != nil {
		if !s.isShutdown() && !errors.Is(err, io.EOF) {
			s.logger.Debug("failed to read protocol byte", "remote", conn.RemoteAddr(), "error", err)
		}
		s.untrackConn(conn)
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})

	// The TLS stage: the connection's role, and what flows inside TLS.
	raw, proto, role := conn, buf[0], connTrusted
	switch {
	case s.tls.RPC():
		var ok bool
		if conn, proto, role, ok = s.unwrapTLS(conn, proto); !ok {
			s.untrackConn(raw)
			raw.Close()
			return
		}
	case proto == pool.ProtocolTLS:
		s.logger.Warn("refusing a TLS connection: TLS is not enabled on this server's RPC port (tls { rpc = true })",
			"remote", conn.RemoteAddr())
		s.untrackConn(raw)
		raw.Close()
		return
	}

	switch proto {
	case pool.ProtocolRPC:
		s.serveMux(conn, role)
		s.untrackConn(raw)
	case pool.ProtocolRaft:
		if !role.mayRaft() {
			s.logger.Warn("refusing a Raft connection: the peer's certificate is not a server certificate for this region",
				"remote", conn.RemoteAddr(), "role", role)
			s.untrackConn(raw)
			raw.Close()
			return
		}
		// Raft's transport owns the connection from here; it stays tracked
		// so Shutdown closes it.
		if err := s.raftLayer.handoff(conn); err != nil {
			s.untrackConn(raw)
			conn.Close()
		}
	default:
		s.logger.Warn("unknown protocol byte", "byte", proto, "remote", conn.RemoteAddr())
		s.untrackConn(raw)
		raw.Close()
	}
}

// plaintextRefusalWindow is how long a plaintext RPC session to a server
// that requires TLS stays open to be told so (each of its calls is
// answered with errTLSRequired) before it is closed.
const plaintextRefusalWindow = 10 * time.Second

// unwrapTLS is the TLS stage of a connection to a server whose RPC port
// requires TLS. A connection that selected TLS gets its handshake (the
// peer must present a certificate the CA signed), its role from that
// certificate, and the inner protocol byte. A plaintext RPC connection is
// served only to be told that TLS is required, for a short while; a
// plaintext Raft connection is closed. ok=false: close the connection.
func (s *Server) unwrapTLS(conn net.Conn, proto byte) (net.Conn, byte, connRole, bool) {
	if proto != pool.ProtocolTLS {
		s.logger.Warn("refusing a plaintext connection: this server requires TLS on its RPC port (tls { rpc = true })",
			"remote", conn.RemoteAddr(), "protocol_byte", proto)
		if proto != pool.ProtocolRPC {
			return nil, 0, 0, false
		}
		conn.SetDeadline(time.Now().Add(plaintextRefusalWindow))
		return conn, proto, connPlaintext, true
	}
	tc := tls.Server(conn, s.tls.IncomingRPC())
	tc.SetDeadline(time.Now().Add(firstByteTimeout))
	var buf [1]byte
	if err := tc.Handshake(); err != nil {
		if !s.isShutdown() {
			s.logger.Warn("TLS handshake failed", "remote", conn.RemoteAddr(), "error", err)
		}
		return nil, 0, 0, false
	}
	if _, err := io.ReadFull(tc, buf[:]); err != nil {
		return nil, 0, 0, false
	}
	tc.SetDeadline(time.Time{})
	return tc, buf[0], s.connRoleOf(tc.ConnectionState()), true
}

// serveMux runs a yamux session; every stream carries msgpack RPC, whose
// calls are checked against the connection's role.
func (s *Server) serveMux(conn net.Conn, role connRole) {
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
			s.serveRPCAs(codec, role) // returns when the stream closes; closes the codec
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
// its Dial writes that byte first (inside TLS, when the layer has a TLS
// configuration).
type raftLayer struct {
	addr    net.Addr
	tls     *tls.Config // nil: plaintext
	connCh  chan net.Conn
	closeCh chan struct{}
	once    sync.Once
	logger  hclog.Logger
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(advertise string, tlsConf *tls.Config, logger hclog.Logger) *raftLayer {
	return &raftLayer{
		addr:    stringAddr(advertise),
		tls:     tlsConf,
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
	if l.tls != nil {
		tc, err := pool.DialTLS(c, l.tls, timeout)
		if err != nil {
			c.Close()
			return nil, err
		}
		c = tc
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

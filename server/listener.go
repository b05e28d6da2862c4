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
		conn = s.wrapConn(conn)
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

	// The TLS stage: the connection's role, and what flows inside TLS.
	role := connTrusted
	switch {
	case s.tls.RPC():
		var ok bool
		if hc, proto, role, ok = s.unwrapTLS(hc, proto, deadline); !ok {
			s.untrackConn(conn)
			conn.Close()
			release()
			return
		}
	case proto == pool.ProtocolTLS:
		s.logger.Warn("refusing a TLS connection: TLS is not enabled on this server's RPC port (tls { rpc = true })",
			"remote", conn.RemoteAddr())
		s.untrackConn(conn)
		conn.Close()
		release()
		return
	}

	switch proto {
	case pool.ProtocolRPC:
		s.serveMux(hc, role)
		s.untrackConn(conn)
		release()
	case pool.ProtocolRaft:
		if !role.mayRaft() {
			s.logger.Warn("refusing a Raft connection: the peer's certificate is not a server certificate for this region",
				"remote", conn.RemoteAddr(), "role", role)
			s.untrackConn(conn)
			conn.Close()
			release()
			return
		}
		// Raft's transport owns the connection from here; it stays tracked
		// so Shutdown closes it, and counted until the transport closes it.
		if err := s.raftLayer.handoff(&releaseConn{Conn: hc, release: release}); err != nil {
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

// plaintextRefusalWindow is how long a plaintext RPC session to a server
// that requires TLS stays open to be told so (each of its calls is
// answered with errTLSRequired) before it is closed.
const plaintextRefusalWindow = 10 * time.Second

// unwrapTLS is the TLS stage of a connection to a server whose RPC port
// requires TLS, after its first byte (proto) and before deadline. A
// connection that selected TLS gets its handshake (the peer must present
// a certificate the CA signed), its role from that certificate, and the
// handshake inside TLS (readHandshake: the inner protocol byte and, for
// RPC, the first yamux header). A plaintext RPC connection is served only
// to be told that TLS is required, for a short while; a plaintext Raft
// connection is closed. ok=false: close the connection.
func (s *Server) unwrapTLS(conn net.Conn, proto byte, deadline time.Time) (net.Conn, byte, connRole, bool) {
	if proto != pool.ProtocolTLS && s.tls.RPCUpgradeMode() {
		// rpc_upgrade_mode: plaintext is still served, unchecked, while
		// the cluster moves to TLS.
		return conn, proto, connTrusted, true
	}
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
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		if !s.isShutdown() {
			s.logger.Warn("TLS handshake failed", "remote", conn.RemoteAddr(), "error", err)
		}
		return nil, 0, 0, false
	}
	inner, hc, err := readHandshake(tc, deadline)
	if err != nil {
		if !s.isShutdown() && !errors.Is(err, io.EOF) {
			s.logger.Debug("RPC handshake inside TLS failed; closing the connection", "remote", conn.RemoteAddr(), "error", err)
		}
		return nil, 0, 0, false
	}
	tc.SetDeadline(time.Time{})
	return hc, inner, s.connRoleOf(tc.ConnectionState()), true
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
			codec.SetReadLimit(s.config.RPCMaxMessageBytes)
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
	// wrap, if set, puts each dialed connection behind the server's
	// fault gate (netfault.go).
	wrap func(net.Conn) net.Conn
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
	if l.wrap != nil {
		c = l.wrap(c)
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

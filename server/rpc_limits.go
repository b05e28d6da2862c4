package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/drover-project/drover/server/pool"
)

// Limits of the RPC port (docs/security.md, "Bounded inputs"). The port
// takes connections from anyone who can reach it, so what one peer can
// hold is bounded before it has proved anything: how many connections one
// address keeps open, how long a new connection may stay silent, and how
// large one message may be. All are checked per connection or only on
// messages longer than the codec's read buffer, never per small message.
const (
	// DefaultRPCMaxConnsPerClient is Nomad's limits.rpc_max_conns_per_client:
	// the connections one IP address may hold open on the RPC port at once.
	// A client agent uses one per server, a server a handful per peer
	// (Raft's pool and pipeline, forwarding), the node simulator one.
	DefaultRPCMaxConnsPerClient = 100
	// DefaultRPCHandshakeTimeout is Nomad's limits.rpc_handshake_timeout: a
	// new connection must send its protocol byte and, for RPC, its first
	// yamux frame within it. Established connections have no read
	// deadline: clients hold blocking queries for minutes.
	DefaultRPCHandshakeTimeout = 5 * time.Second
	// DefaultRPCMaxMessageBytes bounds one RPC request header or body.
	// The largest requests a server receives are plans forwarded by
	// followers' workers, about 730 bytes a placement (7.3 MB for a group
	// of 10,000, MaxGroupCount), and clients' allocation updates, a few
	// hundred bytes an allocation: 64 MiB leaves a wide margin (a plan of
	// about 90,000 placements at once) while bounding what one stream can
	// make the server hold. Answers the server sends are not bounded.
	DefaultRPCMaxMessageBytes = 64 << 20
)

// rpcBodyLimits lists the methods whose request bodies may be longer
// than the server's message bound, with their own bound. None is: a
// snapshot to restore arrives in chunks (Operator.SnapshotUpload).
var rpcBodyLimits = map[string]int{}

// yamuxHeaderSize is the size of a yamux frame header; its first byte is
// the protocol version, 0.
const yamuxHeaderSize = 12

// errHandshake is a connection that did not start like a Drover one.
var errHandshake = errors.New("rpc handshake failed")

// refusalLogInterval spaces the log lines about refused connections: an
// address hammering the port must not flood the log.
const refusalLogInterval = time.Second

// connLimiter counts the open connections of each remote IP address.
type connLimiter struct {
	max int // 0: no limit

	mu         sync.Mutex
	perIP      map[string]int // guarded by mu
	lastLog    time.Time      // last refusal logged; guarded by mu
	suppressed int            // refusals not logged since; guarded by mu
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, perIP: map[string]int{}}
}

// acquire counts conn against its address. It returns false, counting
// nothing, when the address already holds max connections; otherwise
// release must be called once when conn is done.
func (l *connLimiter) acquire(conn net.Conn) (release func(), ip string, ok bool) {
	ip = remoteIP(conn.RemoteAddr())
	if l.max <= 0 {
		return func() {}, ip, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip] >= l.max {
		l.suppressed++
		return nil, ip, false
	}
	l.perIP[ip]++
	var once sync.Once
	return func() { once.Do(func() { l.release(ip) }) }, ip, true
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// logRefusal reports whether a refusal should be logged now, and how many
// refusals (this one included) the line stands for.
func (l *connLimiter) logRefusal(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastLog) < refusalLogInterval {
		return false, 0
	}
	n := l.suppressed
	l.lastLog, l.suppressed = now, 0
	return true, n
}

// open returns the counted connections of ip.
func (l *connLimiter) open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perIP[ip]
}

func remoteIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// readHandshake reads a new connection's protocol byte and, for RPC, the
// header of its first yamux frame, all before the deadline; it then
// clears the deadline. For RPC the returned connection replays that header
// to yamux.
func readHandshake(conn net.Conn, deadline time.Time) (proto byte, out net.Conn, err error) {
	if err := conn.SetReadDeadline(deadline); err != nil {
		return 0, nil, err
	}
	var buf [1 + yamuxHeaderSize]byte
	if _, err := io.ReadFull(conn, buf[:1]); err != nil {
		return 0, nil, err
	}
	out = conn
	if buf[0] == pool.ProtocolRPC {
		if _, err := io.ReadFull(conn, buf[1:]); err != nil {
			return 0, nil, err
		}
		if buf[1] != 0 {
			return 0, nil, fmt.Errorf("%w: yamux version %d", errHandshake, buf[1])
		}
		out = &replayConn{Conn: conn, pre: buf[1:]}
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		return 0, nil, err
	}
	return buf[0], out, nil
}

// replayConn is a connection whose first reads return pre, bytes already
// read from it.
type replayConn struct {
	net.Conn
	pre []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// releaseConn calls release when the connection is closed (a Raft
// connection, which the transport owns and closes).
type releaseConn struct {
	net.Conn
	release func()
}

func (c *releaseConn) Close() error {
	c.release()
	return c.Conn.Close()
}

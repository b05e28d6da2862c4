package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/structs"
)

// Protocol bytes: the first byte a client writes on a new TCP connection to
// a server tells the server's listener what the connection carries. The
// values are part of the wire format: never renumber one.
const (
	// ProtocolRPC: the connection is a yamux session; each stream carries
	// msgpack net/rpc requests (structs.MsgpackHandle).
	ProtocolRPC byte = 0x01
	// ProtocolRaft: the connection belongs to hashicorp/raft's
	// NetworkTransport.
	ProtocolRaft byte = 0x02
	// ProtocolTLS: a TLS handshake follows, and then, inside TLS, one of
	// the bytes above (Nomad's RpcTLS is the same value).
	ProtocolTLS byte = 0x04
)

// Defaults for Config fields left zero.
const (
	DefaultMaxIdleTime    = 2 * time.Minute
	DefaultMaxIdleStreams = 64
	DefaultDialTimeout    = 10 * time.Second
)

// ErrPoolShutdown is returned by RPC after Shutdown.
var ErrPoolShutdown = structs.ErrShutdown

// NotSentError reports a call that failed before its request was written:
// the connection could not be made or no stream could be opened. Such a
// call may be retried without risk of executing twice.
type NotSentError struct {
	Addr string
	Err  error
}

func (e *NotSentError) Error() string { return "rpc to " + e.Addr + " not sent: " + e.Err.Error() }

// Unwrap returns the underlying network error.
func (e *NotSentError) Unwrap() error { return e.Err }

// Config tunes a Pool. The zero value is usable.
type Config struct {
	Logger hclog.Logger
	// MaxIdleTime: a session with no call in flight for this long is
	// closed by the reaper.
	MaxIdleTime time.Duration
	// MaxIdleStreams bounds the streams kept open per session for reuse.
	MaxIdleStreams int
	// DialTimeout bounds the TCP connect, and the TLS handshake.
	DialTimeout time.Duration
	// WrapConn, if set, wraps each new TCP connection before anything is
	// written on it (fault-injection tests).
	WrapConn func(net.Conn) net.Conn
	// TLS, if set, makes every connection TLS (ProtocolTLS, then the
	// handshake, then ProtocolRPC inside): the agent's tls { rpc = true }.
	TLS *tls.Config
}

// Pool holds one yamux session per remote address. It is safe for
// concurrent use.
type Pool struct {
	cfg    Config
	logger hclog.Logger
	yamux  *yamux.Config

	mu       sync.Mutex
	conns    map[string]*conn      // guarded by mu
	dialing  map[string]*dialState // guarded by mu
	shutdown bool                  // guarded by mu

	shutdownCh chan struct{}
	reaperDone chan struct{}
}

// dialState lets concurrent callers for one address share a single dial.
type dialState struct {
	done chan struct{}
	conn *conn
	err  error
}

// conn is one yamux session to one address.
type conn struct {
	addr    string
	session *yamux.Session

	mu       sync.Mutex
	idle     []*stream // guarded by mu
	inFlight int       // guarded by mu
	lastUsed time.Time // guarded by mu
}

// stream is one yamux stream with its msgpack codec; a stream serves calls
// one at a time and goes back to its conn's idle list between calls.
type stream struct {
	conn  net.Conn
	codec rpc.ClientCodec
}

// New returns a pool and starts its idle reaper. Call Shutdown to stop it.
func New(cfg Config) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxIdleTime <= 0 {
		cfg.MaxIdleTime = DefaultMaxIdleTime
	}
	if cfg.MaxIdleStreams <= 0 {
		cfg.MaxIdleStreams = DefaultMaxIdleStreams
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	logger := cfg.Logger.Named("rpc_pool")
	ycfg := yamux.DefaultConfig()
	ycfg.LogOutput = nil
	ycfg.Logger = logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	p := &Pool{
		cfg:        cfg,
		logger:     logger,
		yamux:      ycfg,
		conns:      make(map[string]*conn),
		dialing:    make(map[string]*dialState),
		shutdownCh: make(chan struct{}),
		reaperDone: make(chan struct{}),
	}
	go p.reap()
	return p
}

// RPC calls method on the server at addr and decodes the answer into reply,
// which it zeroes first (nothing reply held survives a successful call).
// An error returned by the remote endpoint is typed (structs.DecodeRPCError);
// any other error is a transport failure, after which the call may or may
// not have been executed remotely.
func (p *Pool) RPC(addr, method string, args, reply any) error {
	return p.RPCContext(context.Background(), addr, method, args, reply)
}

// RPCContext is RPC that gives up when ctx ends: a call not yet sent
// fails with a *NotSentError, one sent but not answered with an
// *AbandonedError (it may or may not have been executed remotely).
func (p *Pool) RPCContext(ctx context.Context, addr, method string, args, reply any) error {
	c, err := p.acquire(ctx, addr)
	if err != nil {
		return err
	}
	defer c.release()

	st, err := c.getStream()
	if err != nil {
		p.dropIfClosed(c)
		return &NotSentError{Addr: addr, Err: fmt.Errorf("open stream: %w", err)}
	}
	if ctx.Done() != nil {
		// Ending ctx expires the stream's deadline, which fails the
		// write or read in progress; the stream is then discarded.
		stop := context.AfterFunc(ctx, func() { st.conn.SetDeadline(time.Now()) })
		defer stop()
	}
	err = call(st.codec, method, args, reply)
	if err == nil {
		c.putStream(st, p.cfg.MaxIdleStreams)
		return nil
	}
	var serverErr rpc.ServerError
	if errors.As(err, &serverErr) {
		// The exchange completed; the stream is in a clean state.
		c.putStream(st, p.cfg.MaxIdleStreams)
		return structs.DecodeRPCError(string(serverErr))
	}
	// A transport or codec failure leaves the stream in an unknown state.
	st.codec.Close()
	p.dropIfClosed(c)
	var notSent *NotSentError
	if errors.As(err, &notSent) {
		notSent.Addr = addr
		if cause := context.Cause(ctx); cause != nil {
			notSent.Err = cause
		}
		return notSent
	}
	if cause := context.Cause(ctx); cause != nil {
		return &AbandonedError{Addr: addr, Method: method, Cause: cause}
	}
	return fmt.Errorf("rpc %s to %s: %w", method, addr, err)
}

// AbandonedError reports a call given up (its context ended) after its
// request was sent: the remote server may or may not have executed it.
type AbandonedError struct {
	Addr   string
	Method string
	Cause  error // the context's cause
}

func (e *AbandonedError) Error() string {
	return "rpc " + e.Method + " to " + e.Addr + " abandoned after it was sent: " + e.Cause.Error()
}

// Unwrap returns the context's cause.
func (e *AbandonedError) Unwrap() error { return e.Cause }

// callSeq numbers requests; net/rpc servers echo it back.
var callSeq atomic.Uint64

// call runs one request/response exchange on a codec used by one caller at
// a time. A failure to write the request is a *NotSentError: an incomplete
// request cannot be decoded, so the server cannot have executed it. An
// error answered by the endpoint comes back as rpc.ServerError.
func call(codec rpc.ClientCodec, method string, args, reply any) error {
	req := rpc.Request{ServiceMethod: method, Seq: callSeq.Add(1)}
	if err := codec.WriteRequest(&req, args); err != nil {
		return &NotSentError{Err: err}
	}
	var resp rpc.Response
	if err := codec.ReadResponseHeader(&resp); err != nil {
		return err
	}
	if resp.Error != "" {
		// The body is sent (empty) even with an error; discard it so the
		// stream stays usable.
		if err := codec.ReadResponseBody(nil); err != nil {
			return err
		}
		return rpc.ServerError(resp.Error)
	}
	// Decode into a zeroed reply. Decoding merges into what a value holds
	// (map keys survive, pointers are decoded into, fields the encoder
	// omitted as empty keep their value), and a caller that retries after
	// a failed attempt passes the reply that attempt half filled.
	if rv := reflect.ValueOf(reply); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return codec.ReadResponseBody(reply)
}

// Shutdown closes every session and stops the reaper. Calls in flight fail.
// It is idempotent.
func (p *Pool) Shutdown() error {
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return nil
	}
	p.shutdown = true
	conns := p.conns
	p.conns = make(map[string]*conn)
	p.mu.Unlock()

	close(p.shutdownCh)
	<-p.reaperDone
	for _, c := range conns {
		c.session.Close()
	}
	return nil
}

// NumConns reports how many sessions the pool holds (for tests and metrics).
func (p *Pool) NumConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// acquire returns a live session to addr, dialing one if needed, with its
// in-flight count raised; the caller must call release.
func (p *Pool) acquire(ctx context.Context, addr string) (*conn, error) {
	for {
		p.mu.Lock()
		if p.shutdown {
			p.mu.Unlock()
			return nil, ErrPoolShutdown
		}
		if c, ok := p.conns[addr]; ok {
			if !c.session.IsClosed() {
				c.hold()
				p.mu.Unlock()
				return c, nil
			}
			delete(p.conns, addr)
		}
		if d, ok := p.dialing[addr]; ok {
			p.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, &NotSentError{Addr: addr, Err: context.Cause(ctx)}
			}
			if d.err != nil {
				return nil, d.err
			}
			continue // look the new conn up again under the lock
		}
		d := &dialState{done: make(chan struct{})}
		p.dialing[addr] = d
		p.mu.Unlock()

		c, err := p.dial(ctx, addr)

		p.mu.Lock()
		delete(p.dialing, addr)
		d.conn, d.err = c, err
		if err == nil {
			if p.shutdown {
				c.session.Close()
				err = ErrPoolShutdown
				d.err = err
			} else {
				p.conns[addr] = c
				c.hold()
			}
		}
		p.mu.Unlock()
		close(d.done)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (p *Pool) dial(ctx context.Context, addr string) (*conn, error) {
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &NotSentError{Addr: addr, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
		tc.SetNoDelay(true)
	}
	if p.cfg.WrapConn != nil {
		nc = p.cfg.WrapConn(nc)
	}
	if p.cfg.TLS != nil {
		tc, err := DialTLS(nc, p.cfg.TLS, p.cfg.DialTimeout)
		if err != nil {
			nc.Close()
			return nil, &NotSentError{Addr: addr, Err: err}
		}
		nc = tc
	}
	if _, err := nc.Write([]byte{ProtocolRPC}); err != nil {
		nc.Close()
		return nil, &NotSentError{Addr: addr, Err: fmt.Errorf("write protocol byte: %w", err)}
	}
	// Requests are written straight to the connection (no coalescing
	// buffer, unlike the server's side): a stream write that fails because
	// the session died must fail in the caller, so that the request is
	// known not to have been sent (NotSentError) and can be retried.
	sess, err := yamux.Client(nc, p.yamux)
	if err != nil {
		nc.Close()
		return nil, &NotSentError{Addr: addr, Err: fmt.Errorf("yamux: %w", err)}
	}
	return &conn{addr: addr, session: sess, lastUsed: time.Now()}, nil
}

// Probe checks the session to addr, if the pool holds one, with a yamux
// ping: a session whose ping is not answered within timeout is closed
// (calls in flight on it fail, the next call dials again) and Probe
// reports true. A session that answers, or none at all, is left as it is
// (false). A server that is slow to answer a call (waiting for a leader)
// still answers pings; one that is paused or cut off by the network does
// not. It blocks for at most timeout.
func (p *Pool) Probe(addr string, timeout time.Duration) bool {
	p.mu.Lock()
	c, ok := p.conns[addr]
	p.mu.Unlock()
	if !ok || c.session.IsClosed() {
		return false
	}
	answered := make(chan error, 1)
	go func() {
		_, err := c.session.Ping()
		answered <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-answered:
		if err == nil {
			return false
		}
	case <-t.C:
		err = fmt.Errorf("no answer to a ping within %v", timeout)
	}
	p.logger.Debug("closing a session that does not answer", "addr", addr, "error", err)
	c.session.Close() // ends the ping too
	p.dropIfClosed(c)
	return true
}

// dropIfClosed forgets c when its session has died, so the next call dials.
func (p *Pool) dropIfClosed(c *conn) {
	if !c.session.IsClosed() {
		return
	}
	p.mu.Lock()
	if p.conns[c.addr] == c {
		delete(p.conns, c.addr)
	}
	p.mu.Unlock()
}

// reap closes sessions that have been idle longer than MaxIdleTime.
func (p *Pool) reap() {
	defer close(p.reaperDone)
	interval := p.cfg.MaxIdleTime / 2
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-p.shutdownCh:
			return
		case now := <-ticker.C:
			p.reapOnce(now)
		}
	}
}

func (p *Pool) reapOnce(now time.Time) {
	var closing []*conn
	p.mu.Lock()
	for addr, c := range p.conns {
		if c.session.IsClosed() || c.idleSince(now) > p.cfg.MaxIdleTime {
			delete(p.conns, addr)
			closing = append(closing, c)
		}
	}
	p.mu.Unlock()
	for _, c := range closing {
		p.logger.Debug("closing idle session", "addr", c.addr)
		c.session.Close()
	}
}

func (c *conn) hold() {
	c.mu.Lock()
	c.inFlight++
	c.mu.Unlock()
}

func (c *conn) release() {
	c.mu.Lock()
	c.inFlight--
	c.lastUsed = time.Now()
	c.mu.Unlock()
}

// idleSince returns how long the conn has had no call in flight (0 if busy).
func (c *conn) idleSince(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight > 0 {
		return 0
	}
	return now.Sub(c.lastUsed)
}

func (c *conn) getStream() (*stream, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		st := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return st, nil
	}
	c.mu.Unlock()
	nc, err := c.session.Open()
	if err != nil {
		return nil, err
	}
	return &stream{
		conn:  nc,
		codec: msgpackrpc.NewCodec(nc, structs.MsgpackHandle),
	}, nil
}

func (c *conn) putStream(st *stream, max int) {
	c.mu.Lock()
	if len(c.idle) < max {
		c.idle = append(c.idle, st)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	st.codec.Close()
}

// DialTLS selects TLS on a new connection to a server's RPC port
// (ProtocolTLS) and runs the handshake within timeout; the caller then
// writes the inner protocol byte on the returned connection. A failed
// handshake says so, and names the likely cause: a server without TLS
// closes the connection at the TLS byte.
func DialTLS(nc net.Conn, conf *tls.Config, timeout time.Duration) (*tls.Conn, error) {
	if _, err := nc.Write([]byte{ProtocolTLS}); err != nil {
		return nil, fmt.Errorf("write TLS protocol byte: %w", err)
	}
	tc := tls.Client(nc, conf)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, &TLSHandshakeError{Addr: nc.RemoteAddr().String(), Err: err}
	}
	return tc, nil
}

// TLSHandshakeError is a failed TLS handshake with a server: most often a
// server without TLS on its RPC port, or a certificate another CA signed.
type TLSHandshakeError struct {
	Addr string
	Err  error
}

func (e *TLSHandshakeError) Error() string {
	return "TLS handshake with " + e.Addr + " failed (is TLS on at the server, tls { rpc = true }, with the same CA?): " + e.Err.Error()
}

// Unwrap returns the handshake's error.
func (e *TLSHandshakeError) Unwrap() error { return e.Err }

package pool

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/netutil"
	"github.com/drover-project/drover/structs"
)

// Echo is the test endpoint.
type Echo struct{}

type EchoArgs struct{ Msg string }
type EchoReply struct {
	Msg  string
	Tags map[string]string
}

func (Echo) Say(args *EchoArgs, reply *EchoReply) error {
	reply.Msg = args.Msg
	reply.Tags = map[string]string{"msg": args.Msg}
	return nil
}

func (Echo) Fail(args *EchoArgs, reply *EchoReply) error {
	if args.Msg == "validation" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "A", Message: "bad"}, {Field: "B", Message: "worse"}}}
	}
	return structs.NewError(structs.ErrCodeNotFound, "no %s here", args.Msg)
}

func (Echo) Plain(args *EchoArgs, reply *EchoReply) error {
	return errors.New("plain failure")
}

// testServer is a minimal listener speaking the RPC protocol byte.
type testServer struct {
	t    testing.TB
	ln   net.Listener
	mu   sync.Mutex
	conn []net.Conn
	wg   sync.WaitGroup
}

func startServer(t testing.TB, addr string) *testServer {
	return startServerWith(t, addr, false)
}

// startServerWith optionally wraps each accepted connection in a
// netutil.CoalescingConn, as the real server does.
func startServerWith(t testing.TB, addr string, coalesce bool) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	rs := rpc.NewServer()
	if err := rs.RegisterName("Echo", Echo{}); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, ln: ln}
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ts.mu.Lock()
			ts.conn = append(ts.conn, c)
			ts.mu.Unlock()
			go func() {
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != ProtocolRPC {
					c.Close()
					return
				}
				cfg := yamux.DefaultConfig()
				cfg.LogOutput = io.Discard
				var conn net.Conn = c
				if coalesce {
					conn = netutil.NewCoalescingConn(c)
				}
				sess, err := yamux.Server(conn, cfg)
				if err != nil {
					return
				}
				for {
					st, err := sess.Accept()
					if err != nil {
						return
					}
					go rs.ServeCodec(msgpackrpc.NewCodecFromHandle(true, true, st, structs.MsgpackHandle))
				}
			}()
		}
	}()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) addr() string { return ts.ln.Addr().String() }

// stop closes the listener and every connection.
func (ts *testServer) stop() {
	ts.ln.Close()
	ts.mu.Lock()
	for _, c := range ts.conn {
		c.Close()
	}
	ts.conn = nil
	ts.mu.Unlock()
	ts.wg.Wait()
}

func newPool(t testing.TB, cfg Config) *Pool {
	p := New(cfg)
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// TestPoolReplyStartsZeroed: what a reply held before the call (a failed
// attempt's half-decoded answer, say) never survives into the answer.
func TestPoolReplyStartsZeroed(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t, Config{})
	reply := EchoReply{Msg: "stale", Tags: map[string]string{"stale": "yes"}}
	if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "hi"}, &reply); err != nil {
		t.Fatal(err)
	}
	if want := (EchoReply{Msg: "hi", Tags: map[string]string{"msg": "hi"}}); !reflect.DeepEqual(reply, want) {
		t.Fatalf("reply %+v, want %+v", reply, want)
	}
}

func TestPoolCallsAndReusesSession(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t, Config{})

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				var reply EchoReply
				if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "hi"}, &reply); err != nil {
					errs <- err
					return
				}
				if reply.Msg != "hi" {
					errs <- errors.New("wrong reply " + reply.Msg)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := p.NumConns(); n != 1 {
		t.Fatalf("sessions = %d, want 1", n)
	}
}

func TestPoolTypedErrors(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t, Config{})
	tests := []struct {
		name     string
		method   string
		msg      string
		wantCode structs.ErrorCode
		wantIs   error
	}{
		{"coded error", "Echo.Fail", "job", structs.ErrCodeNotFound, structs.ErrNotFound},
		{"validation error", "Echo.Fail", "validation", structs.ErrCodeInvalid, nil},
		{"plain error", "Echo.Plain", "", structs.ErrCodeInternal, nil},
		{"unknown method", "Echo.Nope", "", structs.ErrCodeInternal, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reply EchoReply
			err := p.RPC(ts.addr(), tc.method, &EchoArgs{Msg: tc.msg}, &reply)
			if got := structs.CodeOf(err); got != tc.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.wantCode)
			}
			var se *structs.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *structs.Error", err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
		})
	}
	// The session survives endpoint errors.
	var reply EchoReply
	if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "ok"}, &reply); err != nil {
		t.Fatal(err)
	}
	if n := p.NumConns(); n != 1 {
		t.Fatalf("sessions = %d, want 1", n)
	}
}

func TestPoolDropsBrokenSession(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	addr := ts.addr()
	p := newPool(t, Config{})
	var reply EchoReply
	if err := p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "a"}, &reply); err != nil {
		t.Fatal(err)
	}
	ts.stop()

	// With the server gone the call fails, and the dead session is dropped.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "b"}, &reply)
		if err == nil {
			t.Fatal("call succeeded against a stopped server")
		}
		var notSent *NotSentError
		if errors.As(err, &notSent) && p.NumConns() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session not dropped; last error %v, conns %d", err, p.NumConns())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A server back at the same address is used again.
	startServer(t, addr)
	if err := p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "c"}, &reply); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if reply.Msg != "c" {
		t.Fatalf("reply %q", reply.Msg)
	}
}

func TestPoolReapsIdleSessions(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t, Config{MaxIdleTime: 50 * time.Millisecond})
	var reply EchoReply
	if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "a"}, &reply); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.NumConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle session not reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "b"}, &reply); err != nil {
		t.Fatalf("after reap: %v", err)
	}
}

func TestPoolShutdown(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := New(Config{})
	var reply EchoReply
	if err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "a"}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal("second shutdown:", err)
	}
	err := p.RPC(ts.addr(), "Echo.Say", &EchoArgs{Msg: "b"}, &reply)
	if !errors.Is(err, structs.ErrShutdown) {
		t.Fatalf("err = %v, want ErrShutdown", err)
	}
}

func TestPoolDialFailureIsNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newPool(t, Config{DialTimeout: time.Second})
	var reply EchoReply
	err = p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "a"}, &reply)
	var notSent *NotSentError
	if !errors.As(err, &notSent) {
		t.Fatalf("err = %v (%T), want *NotSentError", err, err)
	}
}

// muteConn discards what is written while mute is set, as a network that
// drops packets silently: nothing fails, nothing arrives, no answer comes.
type muteConn struct {
	net.Conn
	mute *atomic.Bool
}

func (c muteConn) Write(b []byte) (int, error) {
	if c.mute.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// TestPoolProbe: a session that answers its ping is kept; one whose
// packets vanish is closed within the probe's timeout, failing the call
// in flight on it, and the next call dials again.
func TestPoolProbe(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	addr := ts.addr()
	var mute atomic.Bool
	p := newPool(t, Config{WrapConn: func(c net.Conn) net.Conn { return muteConn{Conn: c, mute: &mute} }})
	if p.Probe(addr, time.Second) {
		t.Fatal("probe of no session closed something")
	}
	var reply EchoReply
	if err := p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "a"}, &reply); err != nil {
		t.Fatal(err)
	}
	if p.Probe(addr, time.Second) || p.NumConns() != 1 {
		t.Fatalf("a live session was closed (conns %d)", p.NumConns())
	}

	mute.Store(true)
	inFlight := make(chan error, 1)
	go func() { inFlight <- p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "lost"}, &EchoReply{}) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		p.mu.Lock()
		c := p.conns[addr]
		p.mu.Unlock()
		if c != nil && c.idleSince(time.Now()) == 0 {
			break // the call holds the session
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never started")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if !p.Probe(addr, 200*time.Millisecond) {
		t.Fatal("a session that does not answer was kept")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("probe took %v", d)
	}
	select {
	case err := <-inFlight:
		if err == nil {
			t.Fatal("the call in flight on the dead session succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight on the closed session did not fail")
	}
	if n := p.NumConns(); n != 0 {
		t.Fatalf("conns after the probe = %d", n)
	}

	mute.Store(false)
	if err := p.RPC(addr, "Echo.Say", &EchoArgs{Msg: "b"}, &reply); err != nil || reply.Msg != "b" {
		t.Fatalf("after the probe: %v %q", err, reply.Msg)
	}
}

package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

// EchoArgs and EchoReply are (exported for net/rpc) the test service's messages.
type EchoArgs struct {
	Data  []byte
	Reply int // bytes to answer with; 0: echo Data
}

type EchoReply struct {
	Data []byte
	N    int
}

// testService is served over a real yamux session, as the servers do.
type testService struct {
	release chan struct{} // Block waits for it
	blocked atomic.Int64
}

func (s *testService) Echo(args *EchoArgs, reply *EchoReply) error {
	reply.Data, reply.N = args.Data, len(args.Data)
	if args.Reply > 0 {
		reply.Data = bytes.Repeat([]byte{0xab}, args.Reply)
	}
	return nil
}

func (s *testService) Fail(args *EchoArgs, reply *EchoReply) error {
	return structs.NewError(structs.ErrCodeNotFound, "no such thing")
}

func (s *testService) Block(args *EchoArgs, reply *EchoReply) error {
	s.blocked.Add(1)
	<-s.release
	reply.N = 1
	return nil
}

// muxServer is a listener speaking the servers' RPC protocol.
type muxServer struct {
	ln       net.Listener
	svc      *testService
	conns    atomic.Int64 // accepted connections
	streams  atomic.Int64 // accepted streams
	mu       sync.Mutex
	open     []net.Conn       // guarded by mu
	sessions []*yamux.Session // guarded by mu
	accepted []*yamux.Stream  // guarded by mu
}

func newMuxServer(t testing.TB) *muxServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &muxServer{ln: ln, svc: &testService{release: make(chan struct{})}}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Test", m.svc); err != nil {
		t.Fatal(err)
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.conns.Add(1)
			m.mu.Lock()
			m.open = append(m.open, c)
			m.mu.Unlock()
			go func() {
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != pool.ProtocolRPC {
					c.Close()
					return
				}
				sess, err := yamux.Server(c, cfg)
				if err != nil {
					return
				}
				m.mu.Lock()
				m.sessions = append(m.sessions, sess)
				m.mu.Unlock()
				for {
					st, err := sess.AcceptStream()
					if err != nil {
						return
					}
					m.streams.Add(1)
					m.mu.Lock()
					m.accepted = append(m.accepted, st)
					m.mu.Unlock()
					go srv.ServeCodec(msgpackrpc.NewCodecFromHandle(true, true, st, structs.MsgpackHandle))
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		m.dropConns()
		// yamux (v0.1.2) can shut a session down without closing its
		// streams: a Read on one then spins. Hundreds of such readers
		// (TestMuxConcurrent's) starved the tests after it. A deadline
		// in the past ends every stream's Read.
		m.mu.Lock()
		for _, st := range m.accepted {
			st.SetReadDeadline(time.Now())
		}
		m.mu.Unlock()
		select {
		case <-m.svc.release:
		default:
			close(m.svc.release)
		}
	})
	return m
}

// startBlockedCall starts a Test.Block call through tr and waits until the
// server holds it; the call's result arrives on the returned channel.
func startBlockedCall(t *testing.T, m *muxServer, tr *muxTransport) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var reply EchoReply
		done <- tr.RPC(m.addr(), "Test.Block", &EchoArgs{}, &reply)
	}()
	waitUntil(t, "the call to block", 5*time.Second, func() (bool, string) { return m.svc.blocked.Load() == 1, "" })
	return done
}

// dropConns closes every accepted connection.
func (m *muxServer) dropConns() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.open {
		c.Close()
	}
	m.open = nil
}

func (m *muxServer) addr() string { return m.ln.Addr().String() }

// goAway tells every session's client to open no more streams.
func (m *muxServer) goAway() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		s.GoAway()
	}
}

func TestMuxCalls(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	defer tr.Close()
	cases := []struct {
		name      string
		args      EchoArgs
		wantBytes int
	}{
		{"small", EchoArgs{Data: []byte("hello")}, 5},
		{"empty", EchoArgs{}, 0},
		// Larger than a stream window each way: the request is split
		// within the server's window, the response needs window updates.
		{"request beyond the window", EchoArgs{Data: bytes.Repeat([]byte{1}, 3*yamuxWindow+17)}, 3*yamuxWindow + 17},
		{"response beyond the window", EchoArgs{Reply: 2*yamuxWindow + 5}, 2*yamuxWindow + 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reply EchoReply
			if err := tr.RPC(m.addr(), "Test.Echo", &tc.args, &reply); err != nil {
				t.Fatal(err)
			}
			if len(reply.Data) != tc.wantBytes {
				t.Fatalf("got %d bytes back, want %d", len(reply.Data), tc.wantBytes)
			}
			if tc.args.Reply == 0 && !bytes.Equal(reply.Data, tc.args.Data) {
				t.Fatal("echo differs")
			}
		})
	}
	t.Run("typed endpoint error", func(t *testing.T) {
		var reply EchoReply
		err := tr.RPC(m.addr(), "Test.Fail", &EchoArgs{}, &reply)
		if !errors.Is(err, structs.ErrNotFound) {
			t.Fatalf("err %v, want not found", err)
		}
		// The stream is still good.
		if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{Data: []byte("x")}, &reply); err != nil || string(reply.Data) != "x" {
			t.Fatalf("after an error: %v %q", err, reply.Data)
		}
	})
	t.Run("reply zeroed", func(t *testing.T) {
		reply := EchoReply{N: 99, Data: []byte("stale")}
		if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{}, &reply); err != nil || reply.N != 0 || len(reply.Data) != 0 {
			t.Fatalf("reply %+v, err %v; want zero", reply, err)
		}
	})
	if n := m.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	if n := m.streams.Load(); n != 1 {
		t.Fatalf("%d streams opened for sequential calls, want 1 (reused)", n)
	}
}

// TestMuxConcurrent: more calls in flight than the server's accept
// backlog, all answered, each with its own data.
func TestMuxConcurrent(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	defer tr.Close()
	const callers, calls = 400, 5
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range calls {
				data := bytes.Repeat([]byte{byte(i)}, 1+(i*calls+j)%5000)
				var reply EchoReply
				if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{Data: data}, &reply); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(reply.Data, data) {
					errs <- errors.New("a reply carried another call's data")
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
	if n := m.streams.Load(); n > callers {
		t.Fatalf("%d streams for %d callers", n, callers)
	}
}

// TestMuxAnswersPings: the server's pings are answered while a call is
// in flight, so its keepalive never drops the session. The server pings
// by hand and waits for each answer (up to yamux's write timeout), rather
// than the test sleeping through keepalive intervals and hoping that none
// was late on a loaded machine.
func TestMuxAnswersPings(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	defer tr.Close()
	done := startBlockedCall(t, m, tr)
	m.mu.Lock()
	sess := m.sessions[0]
	m.mu.Unlock()
	for i := range 100 {
		if _, err := sess.Ping(); err != nil {
			t.Fatalf("ping %d: %v", i, err)
		}
	}
	close(m.svc.release)
	if err := <-done; err != nil {
		t.Fatalf("blocked call: %v", err)
	}
	if n := m.conns.Load(); n != 1 {
		t.Fatalf("%d connections: the session was dropped", n)
	}
}

// TestMuxSessionFailure: a call in flight fails when the connection
// drops, and the next call dials again.
func TestMuxSessionFailure(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	defer tr.Close()
	done := startBlockedCall(t, m, tr)
	m.dropConns()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("call on a dropped connection succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call on a dropped connection still blocked")
	}
	var reply EchoReply
	if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{Data: []byte("again")}, &reply); err != nil || string(reply.Data) != "again" {
		t.Fatalf("after a dropped connection: %v %q", err, reply.Data)
	}
	if n := m.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestMuxClose: Close ends calls in flight; later calls fail.
func TestMuxClose(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	done := startBlockedCall(t, m, tr)
	tr.Close()
	if err := <-done; !errors.Is(err, errMuxClosed) {
		t.Fatalf("blocked call ended with %v, want errMuxClosed", err)
	}
	var reply EchoReply
	if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{}, &reply); !errors.Is(err, errMuxClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	if err := newMuxTransport().RPC("127.0.0.1:1", "Test.Echo", &EchoArgs{}, &reply); err == nil {
		t.Fatal("call to a closed port succeeded")
	}
}

// BenchmarkRPCClients compares the simulator's client with server/pool
// on the same yamux RPC server (in this process, so ns/op counts both
// ends): 512 callers in flight, each call a 200-byte request and a 2 KB
// answer, about an allocation fetch, while 2,000 other calls block (as
// the nodes' allocation watches do).
func BenchmarkRPCClients(b *testing.B) {
	m := newMuxServer(b)
	clients := []struct {
		name string
		tr   Transport
		stop func()
	}{
		{"pool", nil, nil},
		{"mux", nil, nil},
	}
	p := pool.New(pool.Config{MaxIdleStreams: 256})
	clients[0].tr, clients[0].stop = p, func() { p.Shutdown() }
	mt := newMuxTransport()
	clients[1].tr, clients[1].stop = mt, mt.Close
	for _, c := range clients {
		var blocked sync.WaitGroup
		for range 2000 {
			blocked.Add(1)
			go func() {
				defer blocked.Done()
				var reply EchoReply
				_ = c.tr.RPC(m.addr(), "Test.Block", &EchoArgs{}, &reply)
			}()
		}
		for m.svc.blocked.Load() < 2000 {
			time.Sleep(10 * time.Millisecond)
		}
		m.svc.blocked.Store(0)
		b.Run(c.name, func(b *testing.B) {
			args := &EchoArgs{Data: make([]byte, 200), Reply: 2048}
			b.SetParallelism(256) // x GOMAXPROCS callers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var reply EchoReply
				for pb.Next() {
					if err := c.tr.RPC(m.addr(), "Test.Echo", args, &reply); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		c.stop() // ends the blocked calls
		blocked.Wait()
	}
}

// TestMuxGoAway: after a GoAway, calls go to a new session; Close still
// ends the old one, which the server left open.
func TestMuxGoAway(t *testing.T) {
	m := newMuxServer(t)
	tr := newMuxTransport()
	var reply EchoReply
	if err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{}, &reply); err != nil {
		t.Fatal(err)
	}
	m.goAway()
	waitUntil(t, "a call on a new session", 5*time.Second, func() (bool, string) {
		err := tr.RPC(m.addr(), "Test.Echo", &EchoArgs{Data: []byte("x")}, &reply)
		return err == nil && m.conns.Load() == 2, fmt.Sprintf("err %v, %d connections", err, m.conns.Load())
	})
	closed := make(chan struct{})
	go func() {
		tr.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on the session the server sent GoAway on")
	}
}

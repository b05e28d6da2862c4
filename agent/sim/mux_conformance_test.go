package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

// libTransport is the reference the simulator's client replaces:
// hashicorp/yamux's client session and net/rpc's client, one stream per
// call. The codec is the servers' (internal/msgpackrpc, held to
// net-rpc-msgpackrpc by its own tests): net-rpc-msgpackrpc's Close races
// with net/rpc's reading goroutine, which the race detector reports.
type libTransport struct {
	mu       sync.Mutex
	sessions map[string]*yamux.Session // guarded by mu
}

func newLibTransport() *libTransport { return &libTransport{sessions: map[string]*yamux.Session{}} }

// session returns the session to addr, dialing one if there is none or
// the last one was closed or (fresh) refuses new streams.
func (l *libTransport) session(addr string, fresh bool) (*yamux.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.sessions[addr]; s != nil && !s.IsClosed() && !fresh {
		return s, nil
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{pool.ProtocolRPC}); err != nil {
		c.Close()
		return nil, err
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	s, err := yamux.Client(c, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	l.sessions[addr] = s
	return s, nil
}

// RPC makes one call on a new stream; an endpoint's error is typed, as
// the simulator's client gives it.
func (l *libTransport) RPC(addr, method string, args, reply any) error {
	s, err := l.session(addr, false)
	if err != nil {
		return err
	}
	st, err := s.OpenStream()
	if errors.Is(err, yamux.ErrRemoteGoAway) {
		// As server/pool does: a new session for new calls.
		if s, err = l.session(addr, true); err == nil {
			st, err = s.OpenStream()
		}
	}
	if err != nil {
		return err
	}
	client := rpc.NewClientWithCodec(msgpackrpc.NewCodec(st, structs.MsgpackHandle))
	defer client.Close()
	err = client.Call(method, args, reply)
	var serverErr rpc.ServerError
	if errors.As(err, &serverErr) {
		return structs.DecodeRPCError(string(serverErr))
	}
	return err
}

func (l *libTransport) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.sessions {
		s.Close()
	}
}

// TestConformanceMuxAgainstYamux holds the simulator's yamux client (mux.go)
// to hashicorp/yamux's client with net/rpc's, on a real yamux server:
// the same calls (small, empty, beyond a stream's window each way,
// typed errors, hundreds concurrent) give the same replies and errors,
// and a call in flight when the server sends GoAway still completes on
// both, while new calls work.
func TestConformanceMuxAgainstYamux(t *testing.T) {
	m := newMuxServer(t)
	mux, lib := newMuxTransport(), newLibTransport()
	defer mux.Close()
	defer lib.Close()
	transports := []struct {
		name string
		tr   Transport
	}{{"mux", mux}, {"yamux", lib}}

	type outcome struct {
		reply EchoReply
		err   string
		code  structs.ErrorCode
	}
	call := func(tr Transport, method string, args *EchoArgs) outcome {
		var reply EchoReply
		err := tr.RPC(m.addr(), method, args, &reply)
		o := outcome{reply: reply}
		if err != nil {
			o.err, o.code = err.Error(), structs.CodeOf(err)
		}
		return o
	}
	same := func(t *testing.T, what string, got, want outcome) {
		t.Helper()
		if got.err != want.err || got.code != want.code || got.reply.N != want.reply.N || !bytes.Equal(got.reply.Data, want.reply.Data) {
			t.Fatalf("%s: mux %q (%s), N %d, %d bytes; yamux %q (%s), N %d, %d bytes", what,
				got.err, got.code, got.reply.N, len(got.reply.Data), want.err, want.code, want.reply.N, len(want.reply.Data))
		}
	}

	t.Run("same answers", func(t *testing.T) {
		for _, tc := range []struct {
			method string
			args   EchoArgs
		}{
			{"Test.Echo", EchoArgs{Data: []byte("hello")}},
			{"Test.Echo", EchoArgs{}},
			{"Test.Echo", EchoArgs{Data: bytes.Repeat([]byte{7}, 4*yamuxWindow+3)}},
			{"Test.Echo", EchoArgs{Reply: 3*yamuxWindow + 11}},
			{"Test.Fail", EchoArgs{}},
			{"Test.Nope", EchoArgs{}},
		} {
			same(t, tc.method, call(mux, tc.method, &tc.args), call(lib, tc.method, &tc.args))
		}
	})

	t.Run("many concurrent streams", func(t *testing.T) {
		for _, tp := range transports {
			var wg sync.WaitGroup
			errs := make(chan error, 200)
			for i := range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					args := &EchoArgs{Data: bytes.Repeat([]byte{byte(i)}, 1+i*997%(16<<10))}
					if i%20 == 0 {
						args = &EchoArgs{Reply: yamuxWindow + i}
					}
					o := call(tp.tr, "Test.Echo", args)
					switch {
					case o.err != "":
						errs <- fmt.Errorf("%s: call %d: %s", tp.name, i, o.err)
					case args.Reply == 0 && !bytes.Equal(o.reply.Data, args.Data):
						errs <- fmt.Errorf("%s: call %d got another call's data", tp.name, i)
					case args.Reply > 0 && len(o.reply.Data) != args.Reply:
						errs <- fmt.Errorf("%s: call %d got %d bytes, want %d", tp.name, i, len(o.reply.Data), args.Reply)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
	})

	t.Run("GoAway with a call in flight", func(t *testing.T) {
		for _, tp := range transports {
			m.svc.blocked.Store(0)
			done := make(chan outcome, 1)
			go func() { done <- call(tp.tr, "Test.Block", &EchoArgs{}) }()
			waitUntil(t, tp.name+"'s call to block", 5*time.Second, func() (bool, string) {
				select {
				case o := <-done:
					t.Fatalf("%s: the call ended with %+v", tp.name, o)
				default:
				}
				return m.svc.blocked.Load() == 1, ""
			})
			m.goAway()
			// New calls go to a new session.
			waitUntil(t, tp.name+"'s call after GoAway", 5*time.Second, func() (bool, string) {
				o := call(tp.tr, "Test.Echo", &EchoArgs{Data: []byte("x")})
				return o.err == "" && string(o.reply.Data) == "x", o.err
			})
			m.svc.release <- struct{}{}
			select {
			case o := <-done:
				if o.err != "" || o.reply.N != 1 {
					t.Fatalf("%s: the call in flight at GoAway ended with %+v", tp.name, o)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the call in flight at GoAway hangs", tp.name)
			}
		}
	})
}

// faultServer accepts connections, reads the protocol byte and the
// client's frames until the first data frame of a request has arrived
// (whole), then runs fault with the connection and that stream's ID.
func faultServer(t *testing.T, fault func(c net.Conn, id uint32)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				var proto [1]byte
				if _, err := io.ReadFull(c, proto[:]); err != nil {
					return
				}
				var h [yamuxHeaderSize]byte
				for {
					if _, err := io.ReadFull(c, h[:]); err != nil {
						return
					}
					id, length := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
					if h[1] == yamuxTypeData && length > 0 {
						if _, err := io.CopyN(io.Discard, c, int64(length)); err != nil {
							return
						}
						fault(c, id)
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func frame(typ uint8, flags uint16, id uint32, payload []byte) []byte {
	b := make([]byte, yamuxHeaderSize, yamuxHeaderSize+len(payload))
	putHeader(b, typ, flags, id, uint32(len(payload)))
	return append(b, payload...)
}

// TestConformanceMuxPeerFaults: a server that fails the way a crashed,
// cut-off or broken peer does (vanishing mid-header or mid-frame,
// answering half a response, resetting the stream, sending frames of
// another version or an unknown type, closing without an answer) makes
// a call fail with an error, never hang and never panic, on the
// simulator's client as on hashicorp/yamux's with net/rpc's; and the
// simulator's client makes its next call on a new session.
func TestConformanceMuxPeerFaults(t *testing.T) {
	// A response cut after its header: an rpc.Response map, then the body
	// missing.
	var resp bytes.Buffer
	resp.Write([]byte{0x83, 0xad})
	resp.WriteString("ServiceMethod")
	resp.Write([]byte{0xa9})
	resp.WriteString("Test.Echo")
	resp.Write([]byte{0xa3, 'S', 'e', 'q', 0x01, 0xa5})
	resp.WriteString("Error")
	resp.Write([]byte{0xa0, 0x82})     // "", then a body map of two entries...
	resp.Write([]byte{0xa4, 'D', 'a'}) // ...whose first key is cut short
	half := resp.Bytes()

	faults := []struct {
		name  string
		fault func(c net.Conn, id uint32)
	}{
		{"closes mid-header", func(c net.Conn, id uint32) {
			c.Write(frame(yamuxTypeWindow, yamuxFlagACK, id, nil)[:5])
			c.Close()
		}},
		{"closes mid-frame", func(c net.Conn, id uint32) {
			c.Write(frame(yamuxTypeWindow, yamuxFlagACK, id, nil))
			// The first 20 bytes of a response that does not fit.
			f := frame(yamuxTypeData, 0, id, append(half, bytes.Repeat([]byte{0xc0}, 200)...))
			c.Write(f[:yamuxHeaderSize+20])
			c.Close()
		}},
		{"a half-written response, then FIN", func(c net.Conn, id uint32) {
			c.Write(frame(yamuxTypeWindow, yamuxFlagACK, id, nil))
			c.Write(frame(yamuxTypeData, 0, id, half))
			c.Write(frame(yamuxTypeWindow, yamuxFlagFIN, id, nil))
			// The connection stays open: only the stream ended.
		}},
		{"a half-written response, then the peer vanishes", func(c net.Conn, id uint32) {
			c.Write(frame(yamuxTypeWindow, yamuxFlagACK, id, nil))
			c.Write(frame(yamuxTypeData, 0, id, half))
			c.Close()
		}},
		{"resets the stream", func(c net.Conn, id uint32) {
			c.Write(frame(yamuxTypeWindow, yamuxFlagRST, id, nil))
		}},
		{"another version", func(c net.Conn, id uint32) {
			f := frame(yamuxTypeWindow, yamuxFlagACK, id, nil)
			f[0] = 1
			c.Write(f)
		}},
		{"an unknown frame type", func(c net.Conn, id uint32) {
			c.Write(frame(9, 0, id, nil))
		}},
		{"closes without an answer", func(c net.Conn, id uint32) {
			c.Close()
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			addr := faultServer(t, f.fault)
			mux, lib := newMuxTransport(), newLibTransport()
			defer mux.Close()
			defer lib.Close()
			for _, tp := range []struct {
				name string
				tr   Transport
			}{{"mux", mux}, {"yamux", lib}} {
				done := make(chan error, 1)
				go func() {
					var reply EchoReply
					done <- tp.tr.RPC(addr, "Test.Echo", &EchoArgs{Data: []byte("hi")}, &reply)
				}()
				select {
				case err := <-done:
					if err == nil {
						t.Fatalf("%s: the call succeeded", tp.name)
					}
					if structs.CodeOf(err) != structs.ErrCodeInternal || errors.As(err, new(*structs.Error)) {
						t.Fatalf("%s: %v reads as the endpoint's answer", tp.name, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the call hangs", tp.name)
				}
			}
			// The simulator's client is not wedged: its next call to a
			// good server works.
			good := newMuxServer(t)
			var reply EchoReply
			if err := mux.RPC(good.addr(), "Test.Echo", &EchoArgs{Data: []byte("ok")}, &reply); err != nil || string(reply.Data) != "ok" {
				t.Fatalf("after the fault: %v %q", err, reply.Data)
			}
		})
	}
}

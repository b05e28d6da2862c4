package server

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

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/structs"
)

// ConfArgs and ConfReply are the conformance endpoint's messages
// (exported: net/rpc serves only exported types).
type ConfArgs struct {
	N     int
	S     string
	Items map[string][]int
	Fail  string // an error code: the endpoint answers a typed error
	Block bool   // wait for the endpoint's release
}

type ConfReply struct {
	N     int
	S     string
	Items map[string][]int
	Calls int64
}

// confEndpoint is served by both servers under test; each has its own.
type confEndpoint struct {
	calls   atomic.Int64
	started chan struct{} // a Block call has started

	mu      sync.Mutex
	release chan struct{} // closed: Block calls return; guarded by mu
}

func newConfEndpoint() *confEndpoint {
	return &confEndpoint{started: make(chan struct{}, 100), release: make(chan struct{})}
}

// gate is what a Block call waits on.
func (e *confEndpoint) gate() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.release
}

// releaseBlocked lets the Block calls in progress return; later ones
// block again.
func (e *confEndpoint) releaseBlocked() {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.release)
	e.release = make(chan struct{})
}

func (e *confEndpoint) Echo(a *ConfArgs, r *ConfReply) error {
	e.calls.Add(1)
	if a.Block {
		gate := e.gate()
		e.started <- struct{}{}
		<-gate
	}
	if a.Fail != "" {
		return structs.NewError(structs.ErrorCode(a.Fail), "echo %d refused", a.N)
	}
	r.N, r.S, r.Items = a.N*2, a.S+"!", a.Items
	r.Calls = 1
	return nil
}

// Plain fails with an untyped error, whose text must pass unchanged.
func (e *confEndpoint) Plain(a *ConfArgs, r *ConfReply) error {
	e.calls.Add(1)
	return fmt.Errorf("plain failure %d", a.N)
}

// confServer is one of the two servers under test, over real TCP: each
// accepted connection is served by serve, and served receives once its
// serve function returned.
type confServer struct {
	name   string
	ep     *confEndpoint
	ln     net.Listener
	served chan struct{}
}

// startConfServers starts Drover's RPC server (serveRPC) and net/rpc's
// Server, each with the same codec (msgpackrpc) and its own endpoint.
func startConfServers(t *testing.T) []*confServer {
	t.Helper()
	drover := &confServer{name: "drover", ep: newConfEndpoint()}
	methods, err := rpcMethods(map[string]any{"Conf": drover.ep})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{remoteMethods: methods, rpcWorkers: &rpcWorkers{}, logger: hclog.NewNullLogger()}
	netrpc := &confServer{name: "net/rpc", ep: newConfEndpoint()}
	rs := rpc.NewServer()
	if err := rs.RegisterName("Conf", netrpc.ep); err != nil {
		t.Fatal(err)
	}
	serve := map[*confServer]func(rpc.ServerCodec){drover: s.serveRPC, netrpc: rs.ServeCodec}
	for _, cs := range []*confServer{drover, netrpc} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cs.ln, cs.served = ln, make(chan struct{}, 100)
		fn := serve[cs]
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					fn(msgpackrpc.NewCodec(c, structs.MsgpackHandle))
					c.Close()
					cs.served <- struct{}{}
				}()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			cs.ep.releaseBlocked()
		})
	}
	t.Cleanup(s.rpcWorkers.stop)
	return []*confServer{drover, netrpc}
}

func (cs *confServer) dial(t *testing.T) *rpc.Client {
	t.Helper()
	c, err := net.Dial("tcp", cs.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := rpc.NewClientWithCodec(msgpackrpc.NewCodec(c, structs.MsgpackHandle))
	t.Cleanup(func() { client.Close() })
	return client
}

// waitServed waits until the server's serve function returned for a
// connection.
func (cs *confServer) waitServed(t *testing.T, what string) {
	t.Helper()
	select {
	case <-cs.served:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the server still serves the connection after %s", cs.name, what)
	}
}

// confOutcome is what a caller sees of a call.
type confOutcome struct {
	reply     ConfReply
	err       string
	serverErr bool // the error is the server's answer (rpc.ServerError)
}

func confCall(client *rpc.Client, method string, args any) confOutcome {
	var reply ConfReply
	err := client.Call(method, args, &reply)
	out := confOutcome{reply: reply}
	if err != nil {
		var se rpc.ServerError
		out.err, out.serverErr = err.Error(), errors.As(err, &se)
	}
	return out
}

// TestConformanceRPCServerAgainstNetRPC holds Drover's RPC server (which
// replaces net/rpc's Server, rpc_serve.go) to net/rpc's, both over the
// same codec and real TCP: every call gets the same reply or the same
// error text, concurrent calls on one connection each get their own
// answer, a blocked call holds up no other, and a client that vanishes
// (mid-request, with a half-written request, with a call in flight, or
// after writing garbage) ends the server's stream without a call being
// made of the partial request, without a hang and without a panic.
//
// Deliberate differences, checked as such: an unknown service or method
// and a body that does not decode are answered with an error on both and
// the stream goes on, but Drover's texts differ ("rpc: can't find method
// X" for both kinds of unknown name; "rpc: decoding the request of X: "
// before the decoder's error). Clients only ever see these as a call's
// failure, never match their text (structs.DecodeRPCError makes them
// internal errors).
func TestConformanceRPCServerAgainstNetRPC(t *testing.T) {
	servers := startConfServers(t)
	drover, netrpc := servers[0], servers[1]
	dc, nc := drover.dial(t), netrpc.dial(t)

	t.Run("same answers", func(t *testing.T) {
		cases := []struct {
			method string
			args   any
		}{
			{"Conf.Echo", &ConfArgs{N: 21, S: "hello"}},
			{"Conf.Echo", &ConfArgs{}},
			{"Conf.Echo", &ConfArgs{N: -5, Items: map[string][]int{"a": {1, 2}, "b": nil, "c": {}}}},
			{"Conf.Echo", &ConfArgs{S: string(bytes.Repeat([]byte("x"), 300<<10))}},
			{"Conf.Echo", &ConfArgs{N: 3, Fail: string(structs.ErrCodeNotFound)}},
			{"Conf.Echo", &ConfArgs{N: 4, Fail: string(structs.ErrCodeInvalid)}},
			{"Conf.Plain", &ConfArgs{N: 5}},
			// The arguments' shape is loose in msgpack: a map with other
			// fields decodes (unknown fields are skipped) on both.
			{"Conf.Echo", map[string]any{"N": 8, "Other": "x"}},
		}
		for i, tc := range cases {
			got, want := confCall(dc, tc.method, tc.args), confCall(nc, tc.method, tc.args)
			if got.err != want.err || got.serverErr != want.serverErr {
				t.Fatalf("case %d (%s): drover error %q (server error %v), net/rpc %q (%v)", i, tc.method, got.err, got.serverErr, want.err, want.serverErr)
			}
			if fmt.Sprint(got.reply) != fmt.Sprint(want.reply) {
				t.Fatalf("case %d (%s): drover reply %+v, net/rpc %+v", i, tc.method, got.reply, want.reply)
			}
			if got.err != "" {
				// A typed error keeps its code across the wire.
				if a, b := structs.DecodeRPCError(got.err), structs.DecodeRPCError(want.err); a.Error() != b.Error() {
					t.Fatalf("case %d: decoded %v, net/rpc %v", i, a, b)
				}
			}
		}
	})

	t.Run("refused names and bodies; the stream goes on", func(t *testing.T) {
		for _, tc := range []struct {
			method string
			args   any
		}{
			{"Conf.Nope", &ConfArgs{}},
			{"Nope.Echo", &ConfArgs{}},
			{"NoDot", &ConfArgs{}},
			{"Conf.Echo", "not the arguments"},
			{"Conf.Echo", []int{1, 2, 3}},
		} {
			for _, c := range []struct {
				name   string
				client *rpc.Client
			}{{"drover", dc}, {"net/rpc", nc}} {
				out := confCall(c.client, tc.method, tc.args)
				if out.err == "" || !out.serverErr {
					t.Fatalf("%s: %s(%v) answered %+v, want a server error", c.name, tc.method, tc.args, out)
				}
				if out := confCall(c.client, "Conf.Echo", &ConfArgs{N: 1}); out.err != "" || out.reply.N != 2 {
					t.Fatalf("%s: after %s the stream answers %+v", c.name, tc.method, out)
				}
			}
		}
	})

	t.Run("concurrent calls on one connection", func(t *testing.T) {
		for _, c := range []struct {
			cs     *confServer
			client *rpc.Client
		}{{drover, dc}, {netrpc, nc}} {
			// A blocked call first: the others pass it.
			blocked := c.client.Go("Conf.Echo", &ConfArgs{N: 100, Block: true}, &ConfReply{}, nil)
			<-c.cs.ep.started
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 20 {
						n := g*1000 + i
						args := &ConfArgs{N: n, S: fmt.Sprint(n)}
						if i%5 == 0 {
							args.Fail = string(structs.ErrCodeConflict)
						}
						out := confCall(c.client, "Conf.Echo", args)
						switch {
						case args.Fail != "" && structs.CodeOf(structs.DecodeRPCError(out.err)) != structs.ErrCodeConflict:
							errs <- fmt.Errorf("%s: call %d answered %+v, want conflict", c.cs.name, n, out)
						case args.Fail == "" && (out.err != "" || out.reply.N != 2*n || out.reply.S != args.S+"!"):
							errs <- fmt.Errorf("%s: call %d answered %+v (another call's answer?)", c.cs.name, n, out)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			select {
			case <-blocked.Done:
				t.Fatalf("%s: the blocked call returned before its release", c.cs.name)
			default:
			}
			c.cs.ep.releaseBlocked()
			if r := <-blocked.Done; r.Error != nil || r.Reply.(*ConfReply).N != 200 {
				t.Fatalf("%s: blocked call %+v, %v", c.cs.name, r.Reply, r.Error)
			}
		}
	})

	// request encodes one request as a client writes it.
	request := func(t *testing.T, method string, args any) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := msgpackrpc.NewCodec(bufConn{&buf}, structs.MsgpackHandle).WriteRequest(&rpc.Request{ServiceMethod: method, Seq: 1}, args); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	full := request(t, "Conf.Echo", &ConfArgs{N: 7, S: string(bytes.Repeat([]byte("y"), 10000))})
	headerLen := len(request(t, "Conf.Echo", nil)) - 1 // nil encodes as one byte

	for _, cs := range servers {
		t.Run(cs.name+": half-written requests, then the client vanishes", func(t *testing.T) {
			for _, cut := range []int{1, headerLen / 2, headerLen, headerLen + 1, headerLen + 3, len(full) / 2, len(full) - 1} {
				before := cs.ep.calls.Load()
				c, err := net.Dial("tcp", cs.ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Write(full[:cut]); err != nil {
					t.Fatal(err)
				}
				c.Close()
				cs.waitServed(t, fmt.Sprintf("a request cut after %d of %d bytes", cut, len(full)))
				if n := cs.ep.calls.Load(); n != before {
					t.Fatalf("a request cut after %d of %d bytes was called", cut, len(full))
				}
			}
		})

		t.Run(cs.name+": a request written a byte at a time", func(t *testing.T) {
			c, err := net.Dial("tcp", cs.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			for i := range full {
				if _, err := c.Write(full[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
			codec := msgpackrpc.NewCodec(c, structs.MsgpackHandle)
			var resp rpc.Response
			var reply ConfReply
			if err := codec.ReadResponseHeader(&resp); err != nil || resp.Seq != 1 || resp.Error != "" {
				t.Fatalf("response header %+v, %v", resp, err)
			}
			if err := codec.ReadResponseBody(&reply); err != nil || reply.N != 14 || len(reply.S) != 10001 {
				t.Fatalf("response N=%d, %d bytes, %v", reply.N, len(reply.S), err)
			}
			codec.Close()
			cs.waitServed(t, "the client closed")
		})

		t.Run(cs.name+": the client vanishes with a call in flight", func(t *testing.T) {
			c, err := net.Dial("tcp", cs.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(request(t, "Conf.Echo", &ConfArgs{Block: true})); err != nil {
				t.Fatal(err)
			}
			<-cs.ep.started
			c.Close()
			// The server answers into a closed connection once the call
			// returns, then ends the stream.
			cs.ep.releaseBlocked()
			cs.waitServed(t, "the client vanished with a call in flight")
		})

		t.Run(cs.name+": garbage ends the stream", func(t *testing.T) {
			for _, junk := range [][]byte{
				{0xc1},                               // the unused msgpack byte
				{0x81, 0xa1, 'x'},                    // a header map cut short, then EOF
				{0x93, 0x01, 0x02, 0x03, 0xff, 0xff}, // an array for a header
				bytes.Repeat([]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, 4), // maps claiming 4G entries
			} {
				c, err := net.Dial("tcp", cs.ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Write(junk); err != nil {
					t.Fatal(err)
				}
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c) // whatever the server answers, until it closes
				c.Close()
				cs.waitServed(t, fmt.Sprintf("garbage % x", junk))
			}
		})
	}
}

// bufConn is a connection that writes into a buffer.
type bufConn struct{ w *bytes.Buffer }

func (c bufConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (c bufConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c bufConn) Close() error                { return nil }

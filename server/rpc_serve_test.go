package server

import (
	"errors"
	"net"
	"net/rpc"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/structs"
)

type echoArgs struct {
	N     int
	Fail  bool
	Block bool
}

type echoReply struct{ N int }

type echoEndpoint struct {
	started chan struct{}
	release chan struct{}
}

func (e *echoEndpoint) Echo(a *echoArgs, r *echoReply) error {
	if a.Fail {
		return structs.NewError(structs.ErrCodeInvalid, "echo %d refused", a.N)
	}
	if a.Block {
		e.started <- struct{}{}
		<-e.release
	}
	r.N = a.N
	return nil
}

func (p *rpcWorkers) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// waitAllIdle waits until every worker is parked (none is serving or on
// its way back) and returns how many there are.
func (p *rpcWorkers) waitAllIdle(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		idle, live := len(p.idle), p.live
		p.mu.Unlock()
		if idle == live {
			return idle
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers idle after 10s", idle, live)
		}
		time.Sleep(time.Millisecond)
	}
}

// serveRPC answers as net/rpc's server does, concurrently per stream, on
// reused workers.
func TestServeRPC(t *testing.T) {
	ep := &echoEndpoint{started: make(chan struct{}), release: make(chan struct{})}
	methods, err := rpcMethods(map[string]any{"Test": ep})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{remoteMethods: methods, rpcWorkers: &rpcWorkers{}, logger: hclog.NewNullLogger()}
	serverSide, clientSide := net.Pipe()
	served := make(chan struct{})
	go func() {
		s.serveRPC(msgpackrpc.NewCodec(serverSide, structs.MsgpackHandle))
		close(served)
	}()
	client := rpc.NewClientWithCodec(msgpackrpc.NewCodec(clientSide, structs.MsgpackHandle))

	echo := func(a echoArgs) (int, error) {
		var r echoReply
		err := client.Call("Test.Echo", &a, &r)
		return r.N, err
	}
	if n, err := echo(echoArgs{N: 7}); err != nil || n != 7 {
		t.Fatalf("echo = %d, %v", n, err)
	}

	// Errors come back as net/rpc's server errors, and the stream goes on.
	var serverErr rpc.ServerError
	err = client.Call("Test.Nope", &echoArgs{}, &echoReply{})
	if !errors.As(err, &serverErr) || !strings.Contains(err.Error(), "can't find method Test.Nope") {
		t.Fatalf("unknown method: %v", err)
	}
	err = client.Call("Test.Echo", "not the arguments", &echoReply{})
	if !errors.As(err, &serverErr) || !strings.Contains(err.Error(), "decoding the request of Test.Echo") {
		t.Fatalf("undecodable arguments: %v", err)
	}
	want := structs.NewError(structs.ErrCodeInvalid, "echo %d refused", 3).Error()
	if _, err := echo(echoArgs{N: 3, Fail: true}); !errors.As(err, &serverErr) || err.Error() != want {
		t.Fatalf("refused: %v, want the endpoint's error text %q", err, want)
	}

	// A call that blocks holds up no other call on the stream.
	blocked := client.Go("Test.Echo", &echoArgs{N: 1, Block: true}, &echoReply{}, nil)
	<-ep.started
	if n, err := echo(echoArgs{N: 2}); err != nil || n != 2 {
		t.Fatalf("echo beside a blocked call = %d, %v", n, err)
	}
	close(ep.release)
	if r := <-blocked.Done; r.Error != nil || r.Reply.(*echoReply).N != 1 {
		t.Fatalf("blocked call = %+v, %v", r.Reply, r.Error)
	}

	// Workers stay for the next calls: once every worker has parked
	// (a reply reaches the caller before its worker is idle again, and a
	// call arriving in between rightly gets a new worker), each
	// sequential call takes an idle worker and leaves it idle again.
	idle := s.rpcWorkers.waitAllIdle(t)
	if idle < 2 {
		t.Fatalf("%d idle workers after two concurrent calls, want at least 2", idle)
	}
	for i := range 20 {
		if got := s.rpcWorkers.waitAllIdle(t); got != idle {
			t.Fatalf("%d workers before call %d, want %d (reused)", got, i, idle)
		}
		if n, err := echo(echoArgs{N: i}); err != nil || n != i {
			t.Fatalf("echo = %d, %v", n, err)
		}
	}

	// Stopped, the pool keeps no worker, and calls are still served.
	s.rpcWorkers.stop()
	if got := s.rpcWorkers.idleCount(); got != 0 {
		t.Fatalf("%d idle workers after stop", got)
	}
	if n, err := echo(echoArgs{N: 9}); err != nil || n != 9 {
		t.Fatalf("echo after stop = %d, %v", n, err)
	}
	if got := s.rpcWorkers.idleCount(); got != 0 {
		t.Fatalf("%d idle workers after a call past stop", got)
	}

	client.Close()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("serveRPC did not return once the client closed")
	}
}

func TestRPCMethodsRejectsOtherShapes(t *testing.T) {
	if _, err := rpcMethods(map[string]any{"Bad": &badEndpoint{}}); err == nil || !strings.Contains(err.Error(), "Bad.Value") {
		t.Fatalf("err = %v, want one naming Bad.Value", err)
	}
	methods, err := rpcMethods(map[string]any{"Test": &echoEndpoint{}})
	if err != nil || len(methods) != 1 || methods["Test.Echo"] == nil {
		t.Fatalf("methods %v, %v", methods, err)
	}
}

type badEndpoint struct{}

func (badEndpoint) Value(a echoArgs, r *echoReply) error { return nil }

package server

import (
	"net"
	"testing"
	"time"

	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/rpctest"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// limitServer starts an in-memory server (it need not lead) with cfg's
// RPC limits.
func limitServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.BindAddr = "127.0.0.1"
	cfg.NumSchedulers = -1
	cfg.RaftTimeoutScale = 0.25
	s, err := NewServer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRPCConnLimitPerAddress: with Nomad's default of 100, the 101st
// connection from one address is closed at once; when one of the 100
// closes, a new one is served.
func TestRPCConnLimitPerAddress(t *testing.T) {
	s := limitServer(t, Config{})
	addr := s.RPCAddr()
	conns := make([]*rpctest.Conn, DefaultRPCMaxConnsPerClient)
	for i := range conns {
		conns[i] = rpctest.Dial(t, addr, nil)
		if err := conns[i].Ping(); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	if n := s.rpcConns.open("127.0.0.1"); n != DefaultRPCMaxConnsPerClient {
		t.Fatalf("%d connections counted, want %d", n, DefaultRPCMaxConnsPerClient)
	}

	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if !rpctest.WaitClosed(extra, 2*time.Second) {
		t.Fatal("connection 101 was not closed")
	}

	conns[0].Sess.Close()
	waitFor(t, "a closed connection to be released", func() bool {
		return s.rpcConns.open("127.0.0.1") == DefaultRPCMaxConnsPerClient-1
	})
	if err := rpctest.Dial(t, addr, nil).Ping(); err != nil {
		t.Fatalf("a new connection after one closed: %v", err)
	}
}

// TestRPCHandshakeTimeout: a connection that sends nothing, or only the
// protocol byte, is closed after the handshake timeout; an established
// session may idle for longer.
func TestRPCHandshakeTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	s := limitServer(t, Config{RPCHandshakeTimeout: timeout})
	addr := s.RPCAddr()

	for name, first := range map[string][]byte{"silent": nil, "protocol byte only": {pool.ProtocolRPC}, "not yamux": {pool.ProtocolRPC, 7}} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if !rpctest.WaitClosed(c, 5*time.Second) {
			t.Fatalf("%s: connection not closed", name)
		}
		if time.Since(start) > 4*time.Second {
			t.Fatalf("%s: closed after %s", name, time.Since(start))
		}
		c.Close()
	}
	waitFor(t, "refused connections to be released", func() bool { return s.rpcConns.open("127.0.0.1") == 0 })

	c := rpctest.Dial(t, addr, nil)
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * timeout)
	if err := c.Ping(); err != nil {
		t.Fatalf("an established session idle past the handshake timeout: %v", err)
	}
}

// TestRPCMessageTooLarge: a request body announcing 768 MiB is refused
// once the limit has arrived: the caller gets a too_large error, the
// stream is closed, the session serves other streams, and the memory
// gathered for the message is released.
func TestRPCMessageTooLarge(t *testing.T) {
	const limit = 16 << 20
	s := limitServer(t, Config{RPCMaxMessageBytes: limit})
	c := rpctest.Dial(t, s.RPCAddr(), nil)
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	base := rpctest.HeapAfterGC()

	if err := c.SendOversized(t); structs.CodeOf(err) != structs.ErrCodeTooLarge {
		t.Fatalf("answer error %v, want code too_large", err)
	}
	if err := c.Ping(); err != nil {
		t.Fatalf("the session after a refused stream: %v", err)
	}
	after := rpctest.HeapAfterGC()
	t.Logf("heap after GC: %.1f MiB before the message, %.1f MiB after it was refused (limit %d MiB)",
		float64(base)/(1<<20), float64(after)/(1<<20), limit>>20)
	if after > base+limit/2 {
		t.Fatalf("heap %d MiB after the refused message, %d MiB before: not released", after>>20, base>>20)
	}
}

// TestLegitimateMessagesFit: the largest requests a server receives in
// normal work are far below DefaultRPCMaxMessageBytes. A plan placing a
// whole group of MaxGroupCount allocations is the largest; the job rides
// once in the plan, not in each allocation.
func TestLegitimateMessagesFit(t *testing.T) {
	job := mock.Job()
	node := mock.Node()
	plan := &structs.Plan{Job: job, NodeAllocation: map[string][]*structs.Allocation{}}
	for range structs.MaxGroupCount {
		a := mock.Alloc(job, node)
		a.Job = nil
		a.NodeID = structs.GenerateUUID()
		plan.NodeAllocation[a.NodeID] = append(plan.NodeAllocation[a.NodeID], a)
	}
	b, err := structs.Encode(0, &structs.PlanRequest{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a plan of %d placements: %d bytes (%d a placement)", structs.MaxGroupCount, len(b), len(b)/structs.MaxGroupCount)
	if len(b)*4 > DefaultRPCMaxMessageBytes {
		t.Fatalf("a plan of %d placements is %d bytes, over a quarter of the %d-byte limit", structs.MaxGroupCount, len(b), DefaultRPCMaxMessageBytes)
	}
}

// TestRefusalLogIsSpaced: refusals are logged at most once per interval,
// each line counting the refusals it stands for.
func TestRefusalLogIsSpaced(t *testing.T) {
	l := newConnLimiter(1)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	refuse := func(n int) {
		for range n {
			if _, _, ok := l.acquire(b); ok {
				t.Fatal("a connection over the limit was accepted")
			}
		}
	}
	if _, _, ok := l.acquire(a); !ok {
		t.Fatal("the first connection was refused")
	}
	now := time.Unix(1700000000, 0)
	refuse(5)
	if log, n := l.logRefusal(now); !log || n != 5 {
		t.Fatalf("first line: %v, %d", log, n)
	}
	refuse(1)
	if log, _ := l.logRefusal(now.Add(refusalLogInterval / 2)); log {
		t.Fatal("logged twice within the interval")
	}
	refuse(1)
	if log, n := l.logRefusal(now.Add(refusalLogInterval)); !log || n != 2 {
		t.Fatalf("after the interval: %v, %d", log, n)
	}
}

package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
)

// silentTransport never answers calls to the servers in silent (until
// the call's context ends) and answers the others at once; it records
// the probes.
type silentTransport struct {
	silent map[string]bool
	mu     sync.Mutex
	probed []string // guarded by mu
}

func (s *silentTransport) RPC(addr, method string, args, reply any) error {
	return s.RPCContext(context.Background(), addr, method, args, reply)
}

func (s *silentTransport) RPCContext(ctx context.Context, addr, method string, args, reply any) error {
	if s.silent[addr] {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	reply.(*structs.NodeUpdateResponse).HeartbeatTTL = time.Second
	return nil
}

func (s *silentTransport) Probe(addr string, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probed = append(s.probed, addr)
	return true
}

func (s *silentTransport) probes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.probed...)
}

// A server that does not answer within the attempt's bound is left for
// the next one at once, its connection is probed, and the client stays
// on the server that answered; a call its caller gives up on blames no
// server.
func TestRPCAttemptTimeout(t *testing.T) {
	tr := &silentTransport{silent: map[string]bool{"a:4647": true}}
	c := &Client{transport: tr, servers: newServerList([]string{"a:4647", "b:4647"}), logger: hclog.NewNullLogger()}

	start := time.Now()
	var resp structs.NodeUpdateResponse
	failed, err := c.rpc(context.Background(), 50*time.Millisecond, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, &resp)
	if err != nil || failed != 1 || resp.HeartbeatTTL != time.Second {
		t.Fatalf("rpc: failed %d, err %v, ttl %v", failed, err, resp.HeartbeatTTL)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the failover took %v", d)
	}
	if cur := c.servers.current(); cur != "b:4647" || c.servers.moved() != 1 {
		t.Fatalf("current %s after %d moves, want b:4647 after 1", cur, c.servers.moved())
	}
	waitFor(t, "the probe of a", time.Second, func() bool { p := tr.probes(); return len(p) == 1 && p[0] == "a:4647" })

	// Every server silent: each is tried once, then the call fails.
	tr.silent["b:4647"] = true
	if failed, err := c.rpc(context.Background(), 20*time.Millisecond, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, &resp); err == nil || failed != 2 {
		t.Fatalf("all silent: failed %d, err %v", failed, err)
	}

	// The caller's context ends first: no server is blamed.
	moves := c.servers.moved()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.rpc(ctx, time.Minute, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, &resp); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled call: %v", err)
	}
	if c.servers.moved() != moves {
		t.Fatal("a call its caller gave up on moved the client off its server")
	}
}

func TestLivenessBounds(t *testing.T) {
	for _, tc := range []struct {
		ttl, heartbeat, register time.Duration
	}{
		{0, minLivenessAttempt, firstRegisterAttempt},
		{400 * time.Millisecond, minLivenessAttempt, time.Second},
		{2 * time.Second, 500 * time.Millisecond, time.Second},
		{10 * time.Second, 2500 * time.Millisecond, 5 * time.Second},
	} {
		if got := heartbeatAttempt(tc.ttl); got != tc.heartbeat {
			t.Errorf("heartbeatAttempt(%v) = %v, want %v", tc.ttl, got, tc.heartbeat)
		}
		if got := registerAttempt(tc.ttl); got != tc.register {
			t.Errorf("registerAttempt(%v) = %v, want %v", tc.ttl, got, tc.register)
		}
	}
	for _, tc := range []struct {
		backoff, ttl, since, want time.Duration
	}{
		{8 * time.Second, 0, time.Second, 8 * time.Second},                           // never registered
		{8 * time.Second, 2 * time.Second, 10 * time.Second, 500 * time.Millisecond}, // recently cut off
		{100 * time.Millisecond, 2 * time.Second, 10 * time.Second, 100 * time.Millisecond},
		{8 * time.Second, 2 * time.Second, time.Minute, 8 * time.Second}, // out of touch for long
	} {
		if got := registerRetry(tc.backoff, tc.ttl, tc.since); got != tc.want {
			t.Errorf("registerRetry(%v, %v, %v) = %v, want %v", tc.backoff, tc.ttl, tc.since, got, tc.want)
		}
	}
}

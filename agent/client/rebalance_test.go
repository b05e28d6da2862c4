package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/clock"
)

// leaderTransport answers Status.Leader with leaders[addr]; a server
// missing from leaders fails the call.
type leaderTransport struct{ leaders map[string]string }

func (l *leaderTransport) RPC(addr, method string, args, reply any) error {
	leader, ok := l.leaders[addr]
	if !ok || method != "Status.Leader" {
		return errors.New("connection refused")
	}
	*reply.(*string) = leader
	return nil
}

// Clients given the same list start on servers picked at random.
func TestServerListStartsAtRandom(t *testing.T) {
	seen := map[string]int{}
	for range 300 {
		l := newServerList([]string{"a", "b", "c"})
		l.startRandom()
		seen[l.current()]++
		if got := l.all(); len(got) != 3 || l.moved() != 0 {
			t.Fatalf("list %v, moves %d", got, l.moved())
		}
	}
	for _, a := range []string{"a", "b", "c"} {
		if seen[a] == 0 {
			t.Fatalf("no client of 300 started on %s: %v", a, seen)
		}
	}
	one := newServerList([]string{"a"})
	one.startRandom()
	if one.current() != "a" || one.candidate() != "" {
		t.Fatalf("one server: current %q candidate %q", one.current(), one.candidate())
	}
}

// A rebalance moves to another server only when it answers with a leader;
// the move is not a failover (moves unchanged), and a failover that
// happened meanwhile is not undone.
func TestRebalance(t *testing.T) {
	tr := &leaderTransport{leaders: map[string]string{"a": "a", "b": "", "c": "a"}}
	c := &Client{transport: tr, servers: newServerList([]string{"a", "b", "c"}), logger: hclog.NewNullLogger()}
	ctx := context.Background()
	moved := map[string]bool{}
	for range 50 {
		c.servers.switchTo(c.servers.current(), "a")
		if to := c.rebalance(ctx); to != "" {
			moved[to] = true
			if c.servers.current() != to {
				t.Fatalf("rebalanced to %s but current is %s", to, c.servers.current())
			}
		} else if c.servers.current() != "a" {
			t.Fatalf("stayed, but current is %s", c.servers.current())
		}
	}
	// b has no leader: never chosen; c has: chosen (50 tries, half each).
	if moved["b"] || !moved["c"] {
		t.Fatalf("moved to %v, want c only", moved)
	}
	if c.servers.moved() != 0 {
		t.Fatalf("rebalancing counted %d failover moves", c.servers.moved())
	}
	// A server that does not answer at all is not chosen.
	delete(tr.leaders, "c")
	c.servers.switchTo(c.servers.current(), "a")
	for range 20 {
		if to := c.rebalance(ctx); to != "" {
			t.Fatalf("moved to %s, which has no leader or does not answer", to)
		}
	}
	// The current server changed by a failover during the call: stay.
	if c.servers.switchTo("b", "c") {
		t.Fatal("switchTo from a server that is not current moved the client")
	}
}

// The loop rebalances on the client's clock, within 1.5 intervals.
func TestRebalanceLoop(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	tr := &leaderTransport{leaders: map[string]string{"a": "a", "b": "a"}}
	c := &Client{
		transport: tr, servers: newServerList([]string{"a", "b"}), logger: hclog.NewNullLogger(),
		cfg: &Config{RebalanceInterval: time.Minute, Clock: clk}, shutdownCh: make(chan struct{}),
	}
	done := make(chan struct{})
	go func() { c.rebalanceLoop(); close(done) }()
	defer func() {
		close(c.shutdownCh)
		<-done
	}()
	for i, want := range []string{"b", "a", "b"} {
		if !clk.WaitPending(1, 5*time.Second) {
			t.Fatalf("round %d: the loop set no timer", i)
		}
		clk.Advance(90 * time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for c.servers.current() != want {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: current %s, want %s", i, c.servers.current(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

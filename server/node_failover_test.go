package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// clientLoop heartbeats node every interval through any running server
// (a client retries another server when one fails), except while paused
// says so.
func clientLoop(ctx context.Context, c *testcluster.Cluster, node *structs.Node, interval time.Duration, paused func() bool) {
	for ctx.Err() == nil {
		if !paused() {
			servers := c.Servers()
			s := servers[rand.IntN(len(servers))]
			var resp structs.NodeUpdateResponse
			_ = s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
				NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady,
			}, &resp)
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// noNodeWentDown returns "" if every node is ready in st and none ever
// missed its heartbeats (no such node event).
func noNodeWentDown(st *state.StateStore, nodes []*structs.Node) string {
	for _, n := range nodes {
		got, err := st.NodeByID(nil, n.ID)
		if err != nil {
			return err.Error()
		}
		if got.Status != structs.NodeStatusReady {
			return fmt.Sprintf("node %s is %s", n.ID, got.Status)
		}
		for _, e := range got.Events {
			if strings.Contains(e.Message, "heartbeat missed") {
				return fmt.Sprintf("node %s: event %q", n.ID, e.Message)
			}
		}
	}
	return ""
}

// startClients registers n nodes and heartbeats them until the test ends.
func startFaultClients(t *testing.T, c *testcluster.Cluster, n int, interval time.Duration, paused func() bool) []*structs.Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var nodes []*structs.Node
	for range n {
		node := mock.Node()
		retryWrite(t, c, func(s *server.Server) error {
			var resp structs.NodeUpdateResponse
			return s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp)
		})
		nodes = append(nodes, node)
		wg.Add(1)
		go func() {
			defer wg.Done()
			clientLoop(ctx, c, node, interval, paused)
		}()
	}
	return nodes
}

// TestNoNodeDownAcrossLeaderKill: the leader dies; the clients keep
// running but find the new leader only after more than their TTL and
// grace. The new leader gives every node the failover TTL: no node goes
// down, and no node-update evaluation is written for them.
func TestNoNodeDownAcrossLeaderKill(t *testing.T) {
	c := pipelineCluster(t, 3, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.HeartbeatGrace = 200 * time.Millisecond
		cfg.FailoverHeartbeatTTL = 10 * time.Second
	}))
	leader := c.WaitForLeader(t, 10*time.Second)
	var mu sync.Mutex
	var silentUntil time.Time
	paused := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Before(silentUntil)
	}
	nodes := startFaultClients(t, c, 5, 100*time.Millisecond, paused)
	job := systemJob("sys")
	submitJob(t, leader, job)
	waitFor(t, 20*time.Second, func() string { return systemPlaced(leader.State(), []*structs.Job{job}, nodes) })
	before := nodeUpdateEvals(t, leader.State())

	mu.Lock()
	silentUntil = time.Now().Add(2 * time.Second) // well past TTL (<600 ms) + grace
	mu.Unlock()
	c.Kill(c.Index(leader))
	next := c.WaitForLeader(t, 10*time.Second)
	// Past the silence, and a few TTLs more with the clients back.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if msg := noNodeWentDown(next.State(), nodes); msg != "" {
			t.Fatalf("after the leader change: %s", msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := nodeUpdateEvals(t, next.State()); got != before {
		t.Errorf("%d node-update evaluations after the leader change, want %d (none new)", got, before)
	}
	waitFor(t, 10*time.Second, func() string { return systemPlaced(next.State(), []*structs.Job{job}, nodes) })
}

// TestPartitionedLeaderMarksNoNodeDown (Nomad #3840): the leader is cut
// off from the other servers and the clients, long enough for its
// heartbeat timers to fire while it still believes it leads (its Raft
// lease has not lapsed), and healed before the followers elect anyone.
// It marks no node down: it appends nothing to its log, so nothing it
// could commit after the heal (were it to win the next election with the
// longest log). Whoever leads
// afterwards gives every node the failover TTL: no node goes down and no
// node-update evaluation is written.
func TestPartitionedLeaderMarksNoNodeDown(t *testing.T) {
	c := pipelineCluster(t, 3, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.RaftTimeoutScale = 2 // lease 1 s, follower timeout 2 s
		cfg.HeartbeatMinTTL = 200 * time.Millisecond
		cfg.HeartbeatGrace = 100 * time.Millisecond
		cfg.FailoverHeartbeatTTL = 10 * time.Second
	}))
	leader := c.WaitForLeader(t, 20*time.Second)
	nodes := startFaultClients(t, c, 5, 50*time.Millisecond, func() bool { return false })
	job := systemJob("sys")
	submitJob(t, leader, job)
	waitFor(t, 20*time.Second, func() string { return systemPlaced(leader.State(), []*structs.Job{job}, nodes) })
	before := nodeUpdateEvals(t, leader.State())

	li := c.Index(leader)
	c.Partition(t, li)
	last := leader.Raft().LastIndex()
	time.Sleep(1400 * time.Millisecond) // timers (<= 500 ms) fire; the lease (1 s) lapses
	// Nothing was appended to the cut-off leader's log: no node-down
	// entry that a later term could commit.
	if got := leader.Raft().LastIndex(); got != last {
		t.Errorf("the partitioned leader appended entries %d..%d", last+1, got)
	}
	c.Resume(t, li)
	next := c.WaitForLeader(t, 20*time.Second)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if msg := noNodeWentDown(next.State(), nodes); msg != "" {
			t.Fatalf("after the partition (leader now %s): %s", next.NodeID(), msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range c.Servers() {
		if got := nodeUpdateEvals(t, s.State()); got != before {
			t.Errorf("server %s: %d node-update evaluations, want %d (none new)", s.NodeID(), got, before)
		}
	}
}

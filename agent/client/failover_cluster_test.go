package client

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// longJob is a count=1 service job whose mock task runs for an hour.
func longJob(id string) *structs.Job {
	return &structs.Job{ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{
			Name: "t", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
			Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
}

// runningOn reports whether job has a running allocation on node, as s
// sees it.
func runningOn(s *server.Server, jobID, nodeID string) bool {
	allocs, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		return false
	}
	for _, a := range allocs {
		if a.NodeID == nodeID && a.ClientStatus == structs.AllocClientStatusRunning && !a.TerminalStatus() {
			return true
		}
	}
	return false
}

// TestClientLeavesCutOffServer: the server a client talks to stops
// answering while the other two and the leader carry on (it is paused:
// cut off from its peers, and the client's packets to it go unanswered,
// as a follower behind a partition). The client moves to another server
// within its heartbeat TTL: its node is never marked down, its allocation
// is not replaced, and a job registered afterwards reaches it (its
// allocation watch moved too).
func TestClientLeavesCutOffServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cluster := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = time.Second
		cfg.HeartbeatGrace = time.Second
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	cut := -1
	var addrs []string
	for i, s := range cluster.Servers() {
		if s != leader && cut < 0 {
			cut = i
			addrs = append([]string{s.RPCAddr()}, addrs...) // the client starts there
			continue
		}
		addrs = append(addrs, s.RPCAddr())
	}
	cutAddr := addrs[0]
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: addrs, NodeName: "cut-off-server", MockEnabled: true, FixedServerOrder: true,
		NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: 2 * time.Second,
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	nodeStatus := func() string {
		n, err := leader.State().NodeByID(nil, c.NodeID())
		if err != nil || n == nil {
			return ""
		}
		return n.Status
	}
	waitFor(t, "node ready", 10*time.Second, func() bool { return nodeStatus() == structs.NodeStatusReady })
	if cur := c.servers.current(); cur != cutAddr {
		t.Fatalf("client uses %s, want %s", cur, cutAddr)
	}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: longJob("before")}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job before running", 10*time.Second, func() bool { return runningOn(leader, "before", c.NodeID()) })

	cluster.Pause(t, cut)
	t.Cleanup(func() {
		if s := cluster.Server(cut); s != nil {
			s.HealNetwork()
		}
	})
	cutAt := time.Now()
	// Three times TTL plus grace, sampled every 20 ms: the node never
	// leaves ready.
	var left time.Duration
	for time.Since(cutAt) < 6*time.Second {
		if st := nodeStatus(); st != structs.NodeStatusReady {
			t.Fatalf("node %s %v after its server was cut off", st, time.Since(cutAt))
		}
		if left == 0 && c.servers.current() != cutAddr {
			left = time.Since(cutAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.servers.current() == cutAddr {
		t.Fatalf("client still uses the cut-off server %s", cutAddr)
	}
	t.Logf("the client left the cut-off server %v after the cut", left)
	allocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, "before")
	if len(allocs) != 1 || allocs[0].TerminalStatus() {
		t.Fatalf("job before: allocations %v, want its one allocation kept", allocs)
	}

	regAt := time.Now()
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: longJob("after")}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job after running on the client", 5*time.Second, func() bool { return runningOn(leader, "after", c.NodeID()) })
	t.Logf("a job registered during the cut ran on the client %v after its registration", time.Since(regAt).Round(time.Millisecond))
	cluster.Resume(t, cut)
}

// blackHole cuts a client's connections the way a network partition
// does: while cut, what the client writes is dropped and nothing comes
// back, with no error on either side. A connection that saw the cut stays
// dead after the heal (its server gave up on it meanwhile and its reset
// has not arrived); connections made after the heal work.
type blackHole struct {
	cut atomic.Bool
}

func (h *blackHole) wrap(c net.Conn) net.Conn {
	return &holeConn{Conn: c, h: h, closed: make(chan struct{})}
}

type holeConn struct {
	net.Conn
	h      *blackHole
	dead   atomic.Bool
	closed chan struct{}
	once   sync.Once
}

func (c *holeConn) isDead() bool {
	if c.h.cut.Load() {
		c.dead.Store(true)
	}
	return c.dead.Load()
}

func (c *holeConn) Write(b []byte) (int, error) {
	if c.isDead() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *holeConn) Read(b []byte) (int, error) {
	for {
		if c.isDead() {
			<-c.closed
			return 0, net.ErrClosed
		}
		n, err := c.Conn.Read(b)
		if err != nil || !c.isDead() {
			return n, err
		}
	}
}

func (c *holeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestClientWatchResumesAfterHeal: a client cut off by a partition past
// its TTL and grace (Nomad's default settings: it keeps running its copy)
// has its allocation replaced elsewhere. Once the partition heals, its
// allocation watch resumes within about two seconds and it stops its
// copy, although the connection its watch was waiting on died in the
// partition and never fails by itself.
func TestClientWatchResumesAfterHeal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cluster := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = time.Second
		cfg.HeartbeatGrace = time.Second
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	startClient := func(name string, tr Transport) *Client {
		c, err := New(&Config{
			DataDir: t.TempDir(), Servers: []string{leader.RPCAddr()}, NodeName: name, MockEnabled: true,
			NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: 30 * time.Second,
			RetryBase: 20 * time.Millisecond, RetryLimit: time.Second, Transport: tr,
		})
		if err != nil {
			t.Fatal(err)
		}
		cleanupKill(t, c)
		waitFor(t, name+" ready", 10*time.Second, func() bool {
			n, err := leader.State().NodeByID(nil, c.NodeID())
			return err == nil && n.Status == structs.NodeStatusReady
		})
		return c
	}
	hole := &blackHole{}
	p := pool.New(pool.Config{WrapConn: hole.wrap})
	t.Cleanup(func() { p.Shutdown() })
	a := startClient("a", p)
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: longJob("heal")}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running on a", 10*time.Second, func() bool { return runningOn(leader, "heal", a.NodeID()) })
	orig, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, "heal")
	origID := orig[0].ID
	b := startClient("b", nil)
	// Let a's watch settle into a blocking query on its connection.
	time.Sleep(500 * time.Millisecond)

	hole.cut.Store(true)
	waitFor(t, "the replacement running on b", 20*time.Second, func() bool { return runningOn(leader, "heal", b.NodeID()) })
	aRuns := func() bool {
		for _, x := range a.Allocs() {
			if x.ID == origID && !x.ClientTerminalStatus() {
				return true
			}
		}
		return false
	}
	if !aRuns() {
		t.Fatal("a stopped its copy while cut off (no client-side stop was asked for)")
	}
	// Longer than a heartbeat retry, so the heal finds the client between
	// attempts as it would be.
	time.Sleep(2 * time.Second)

	hole.cut.Store(false)
	healAt := time.Now()
	waitFor(t, "a to stop its copy", 30*time.Second, func() bool { return !aRuns() })
	stopped := time.Since(healAt)
	t.Logf("a stopped its copy %v after the heal", stopped.Round(time.Millisecond))
	if stopped > 3*time.Second {
		t.Errorf("a stopped its copy %v after the heal, want within about 2s", stopped)
	}
	waitFor(t, "a ready again", 10*time.Second, func() bool {
		n, err := leader.State().NodeByID(nil, a.NodeID())
		return err == nil && n.Status == structs.NodeStatusReady
	})
	live := 0
	allocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, "heal")
	for _, x := range allocs {
		if !x.TerminalStatus() {
			live++
		}
	}
	if live != 1 || !slices.ContainsFunc(allocs, func(x *structs.Allocation) bool { return x.ID == origID && x.ClientTerminalStatus() }) {
		t.Fatalf("after the heal: %d live allocations, want 1 and the original finished", live)
	}
}

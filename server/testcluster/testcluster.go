// Package testcluster runs an in-process cluster of Drover servers over
// real loopback TCP, each with its own temporary data directory, for
// integration tests and benchmarks.
//
//	c := testcluster.NewTestCluster(t, 3)
//	leader := c.WaitForLeader(t, 5*time.Second)
//	c.Kill(0)
//	c.Restart(0)
//	c.Pause(t, 1) // or Partition; Resume ends either
//
// Servers are started with short Raft timeouts and announce intervals so a
// cluster elects a leader in about a second. The package must never be
// imported by production code.
package testcluster

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/server"
)

// Option changes the configuration of every server in the cluster (it is
// applied on each start and restart, after the cluster's defaults).
type Option func(i int, cfg *server.Config)

// WithConfig applies fn to every server's configuration.
func WithConfig(fn func(cfg *server.Config)) Option {
	return func(_ int, cfg *server.Config) { fn(cfg) }
}

// Cluster is a set of in-process servers. Index i always names the same
// server (same data dir, node ID and address) across Kill and Restart.
type Cluster struct {
	opts []Option

	mu         sync.Mutex
	servers    []*server.Server // nil while killed; guarded by mu
	configs    []*server.Config // last config used; guarded by mu
	bootstraps atomic.Int64
}

// NewTestCluster starts n servers expecting each other (BootstrapExpect n)
// and registers their shutdown with t.Cleanup.
func NewTestCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{
		opts:    opts,
		servers: make([]*server.Server, n),
		configs: make([]*server.Config, n),
	}
	t.Cleanup(c.Shutdown)
	logger := testLogger()
	for i := 0; i < n; i++ {
		cfg := &server.Config{
			Name:             "s" + strconv.Itoa(i),
			DataDir:          t.TempDir(),
			BindAddr:         "127.0.0.1",
			RPCPort:          0,
			BootstrapExpect:  n,
			RetryInterval:    50 * time.Millisecond,
			RaftTimeoutScale: 0.25,
			NetworkFaults:    true,
			Logger:           logger,
		}
		// Each server joins the ones started before it; announces spread
		// the rest.
		for k := 0; k < i; k++ {
			cfg.RetryJoin = append(cfg.RetryJoin, c.servers[k].RPCAddr())
		}
		for _, opt := range opts {
			opt(i, cfg)
		}
		c.wrapBootstrap(cfg)
		srv, err := server.NewServer(cfg)
		if err != nil {
			t.Fatalf("start server %d: %v", i, err)
		}
		cfg.RPCPort = portOf(t, srv.RPCAddr())
		c.servers[i], c.configs[i] = srv, cfg
	}
	return c
}

// testLogger logs to stderr at DROVER_TEST_LOG_LEVEL (e.g. debug) when set,
// and nowhere otherwise.
func testLogger() hclog.Logger {
	level := os.Getenv("DROVER_TEST_LOG_LEVEL")
	if level == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Level: hclog.LevelFromString(level), Output: os.Stderr})
}

func (c *Cluster) wrapBootstrap(cfg *server.Config) {
	prev := cfg.OnBootstrap
	cfg.OnBootstrap = func() {
		c.bootstraps.Add(1)
		if prev != nil {
			prev()
		}
	}
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := splitHostPort(addr)
	if err != nil {
		t.Fatalf("bad server address %q: %v", addr, err)
	}
	return p
}

// Servers returns the running servers (killed ones are left out).
func (c *Cluster) Servers() []*server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server.Server
	for _, s := range c.servers {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Server returns server i, or nil while it is killed.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Index returns the index of s in the cluster, or -1.
func (c *Cluster) Index(s *server.Server) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.servers {
		if x == s {
			return i
		}
	}
	return -1
}

// BootstrapCount is how many times any server of the cluster called
// raft.BootstrapCluster.
func (c *Cluster) BootstrapCount() int64 { return c.bootstraps.Load() }

// WaitForLeader waits until exactly one running server is the leader and
// every running server reports its address, and returns it.
func (c *Cluster) WaitForLeader(t testing.TB, timeout time.Duration) *server.Server {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if l := c.leader(); l != nil {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader within %v: %s", timeout, c.describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader returns the agreed leader or nil.
func (c *Cluster) leader() *server.Server {
	servers := c.Servers()
	var leader *server.Server
	for _, s := range servers {
		if s.IsLeader() {
			if leader != nil {
				return nil
			}
			leader = s
		}
	}
	if leader == nil {
		return nil
	}
	for _, s := range servers {
		if s.Leader() != leader.RPCAddr() {
			return nil
		}
	}
	return leader
}

func (c *Cluster) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ""
	for i, s := range c.servers {
		if s == nil {
			out += fmt.Sprintf("[%d killed] ", i)
			continue
		}
		out += fmt.Sprintf("[%d %s leader=%v sees=%q] ", i, s.RPCAddr(), s.IsLeader(), s.Leader())
	}
	return out
}

// Kill shuts server i down without leaving the cluster, as a crash would
// (its data directory stays).
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
	}
}

// Restart starts server i again from its data directory, at the same
// address and with the same node ID. It kills the server first if it runs.
func (c *Cluster) Restart(t testing.TB, i int) *server.Server {
	t.Helper()
	c.Kill(i)
	c.mu.Lock()
	prev := *c.configs[i]
	var join []string
	for k, cfg := range c.configs {
		if k != i {
			join = append(join, "127.0.0.1:"+strconv.Itoa(cfg.RPCPort))
		}
	}
	c.mu.Unlock()
	cfg := prev
	cfg.RetryJoin = join
	cfg.OnBootstrap = nil
	for _, opt := range c.opts {
		opt(i, &cfg)
	}
	c.wrapBootstrap(&cfg)

	var (
		srv *server.Server
		err error
	)
	// The old listener's port is free once Shutdown returns, but give the
	// kernel a moment if it is not.
	for attempt := 0; attempt < 50; attempt++ {
		srv, err = server.NewServer(&cfg)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("restart server %d: %v", i, err)
	}
	c.mu.Lock()
	c.servers[i], c.configs[i] = srv, &cfg
	c.mu.Unlock()
	return srv
}

// Pause makes server i stop answering, as a process stopped with SIGSTOP:
// its peers still connect and send, but nothing it reads is handled and
// nothing it writes leaves (no answers, no Raft heartbeats or votes)
// until Resume; nor are Raft log appends made. Unlike a stopped process
// its goroutines run on, so a paused leader may step down on its own once
// its lease lapses, unless it is appending a write it received (then it
// comes back believing it leads, as after SIGCONT).
func (c *Cluster) Pause(t testing.TB, i int) {
	t.Helper()
	c.fault(t, i, (*server.Server).PauseNetwork)
}

// Partition cuts server i off from every other server and client: its
// connections close, and new ones fail in both directions, until Resume.
func (c *Cluster) Partition(t testing.TB, i int) {
	t.Helper()
	c.fault(t, i, (*server.Server).PartitionNetwork)
}

// Resume ends a Pause or Partition of server i.
func (c *Cluster) Resume(t testing.TB, i int) {
	t.Helper()
	c.fault(t, i, (*server.Server).HealNetwork)
}

func (c *Cluster) fault(t testing.TB, i int, fn func(*server.Server) error) {
	t.Helper()
	s := c.Server(i)
	if s == nil {
		t.Fatalf("server %d is killed", i)
	}
	if err := fn(s); err != nil {
		t.Fatalf("server %d: %v", i, err)
	}
}

// Wipe kills server i, deletes its data directory (Raft log, snapshots and
// node ID) and starts it again at the same address: it comes back as a new
// server with a new ID and no state, as after a disk loss.
func (c *Cluster) Wipe(t testing.TB, i int) *server.Server {
	t.Helper()
	c.Kill(i)
	c.mu.Lock()
	dir := c.configs[i].DataDir
	c.configs[i].NodeID = ""
	c.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("wipe %s: %v", dir, err)
	}
	return c.Restart(t, i)
}

// Shutdown stops every running server. It is registered with t.Cleanup.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	servers := c.servers
	c.servers = make([]*server.Server, len(servers))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Shutdown()
		}()
	}
	wg.Wait()
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, port, err
}

// DataDir returns server i's data directory.
func (c *Cluster) DataDir(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.configs[i].DataDir
}

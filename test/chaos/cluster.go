package chaos

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Agent is one drover agent process in its namespace.
type Agent struct {
	Name    string // s1..s3, c1..c2
	Server  bool
	Addr    string // its address on the bridge
	DataDir string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// HTTP is the agent's HTTP address.
func (a *Agent) HTTP() string { return "http://" + a.Addr + ":4646" }

// RPC is the agent's RPC address (Raft's too).
func (a *Agent) RPC() string { return a.Addr + ":4647" }

// Cluster is one run's agents.
type Cluster struct {
	Net     *Net
	Dir     string
	Bin     string
	Servers []*Agent
	Clients []*Agent
}

// serverHCL keeps heartbeats short so a client cut off is noticed within
// seconds (TTL 2 s plus 2 s of grace), as in the e2e tests.
const serverHCL = `server {
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "2s"
}
`

const clientHCL = `plugin "raw_exec" {
  config {
    enabled = true
  }
}
plugin "mock_driver" {
  config {
    enabled = true
  }
}
`

// StartCluster makes the namespaces of 3 servers and nClients clients and
// starts their agents. The servers named in tmpfsServers get a tmpfs of
// tmpfsBytes as their data directory (the disk-full scenario).
func StartCluster(n *Net, bin, dir string, nClients int, tmpfsServers []string, tmpfsBytes int) (*Cluster, error) {
	c := &Cluster{Net: n, Dir: dir, Bin: bin}
	for _, f := range []struct{ name, body string }{{"server.hcl", serverHCL}, {"client.hcl", clientHCL}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o644); err != nil {
			return nil, err
		}
	}
	var join []string
	for i := 1; i <= 3; i++ {
		join = append(join, "-retry-join", n.Addr(fmt.Sprintf("s%d", i))+":4647")
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("s%d", i)
		if err := n.AddNode(name); err != nil {
			return nil, err
		}
		a := &Agent{Name: name, Server: true, Addr: n.Addr(name), DataDir: filepath.Join(dir, n.Prefix+"-"+name)}
		if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
			return nil, err
		}
		if slices.Contains(tmpfsServers, name) && tmpfsBytes > 0 {
			if err := run("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", tmpfsBytes), "tmpfs", a.DataDir); err != nil {
				return nil, err
			}
		}
		a.args = append([]string{"agent", "-server", "-bootstrap-expect", "3", "-node", name,
			"-data-dir", a.DataDir, "-bind", a.Addr, "-config", filepath.Join(dir, "server.hcl")}, join...)
		c.Servers = append(c.Servers, a)
	}
	var servers []string
	for _, s := range c.Servers {
		servers = append(servers, s.RPC())
	}
	for i := 1; i <= nClients; i++ {
		name := fmt.Sprintf("c%d", i)
		if err := n.AddNode(name); err != nil {
			return nil, err
		}
		a := &Agent{Name: name, Addr: n.Addr(name), DataDir: filepath.Join(dir, n.Prefix+"-"+name)}
		a.args = []string{"agent", "-client", "-node", name, "-data-dir", a.DataDir, "-bind", a.Addr,
			"-servers", strings.Join(servers, ","), "-config", filepath.Join(dir, "client.hcl")}
		c.Clients = append(c.Clients, a)
	}
	for _, a := range c.All() {
		a.logPath = filepath.Join(dir, a.Name+".log")
		if err := a.Start(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// All is every agent, servers first.
func (c *Cluster) All() []*Agent { return append(append([]*Agent{}, c.Servers...), c.Clients...) }

// Start starts the agent's process in its namespace (again after Kill).
func (a *Agent) Start(c *Cluster) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		return fmt.Errorf("%s is running", a.Name)
	}
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== chaos: start %s at %s\n", a.Name, time.Now().UTC().Format(time.RFC3339Nano))
	// ip netns exec execs the agent, so the PID is the agent's own.
	cmd := exec.Command("ip", append([]string{"netns", "exec", c.Net.NS(a.Name), c.Bin}, a.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	a.cmd, a.done, a.paused = cmd, done, false
	return nil
}

// Signal sends sig to the agent process (not its tasks: a client's tasks
// outlive it, as Nomad's do).
func (a *Agent) Signal(sig syscall.Signal) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return fmt.Errorf("%s is not running", a.Name)
	}
	switch sig {
	case syscall.SIGSTOP:
		a.paused = true
	case syscall.SIGCONT:
		a.paused = false
	}
	return a.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to end.
func (a *Agent) Kill() {
	a.stop(syscall.SIGKILL)
}

// Stop ends the agent with SIGINT (SIGKILL after 10 s).
func (a *Agent) Stop() {
	a.stop(syscall.SIGINT)
}

func (a *Agent) stop(sig syscall.Signal) {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.cmd = nil
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// Running says whether the agent's process is up (paused counts).
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cmd != nil
}

// Close ends every agent; the namespaces' own cleanup kills what is left.
func (c *Cluster) Close() {
	for _, a := range c.All() {
		a.Kill()
	}
}

// probe is the checkers' HTTP client: short, so a paused server answers
// nothing quickly.
var probe = &http.Client{Timeout: 2 * time.Second}

// transport is shared by every API client of the suite: the agents
// refuse more than 100 connections from one address, and every request
// of the driver comes from the bridge's.
var transport = &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}

// APIClient is a Nomad API client for agent a with the given timeout.
func APIClient(a *Agent, timeout time.Duration) *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = a.HTTP()
	cfg.HttpClient = &http.Client{Timeout: timeout, Transport: transport}
	cl, err := api.NewClient(cfg)
	if err != nil {
		panic(err) // only on a malformed address, which we build
	}
	return cl
}

// Leader asks every running, unpaused server for the leader and returns
// the leader's agent when they all agree (nil otherwise).
func (c *Cluster) Leader() *Agent {
	var seen string
	n := 0
	for _, s := range c.Servers {
		s.mu.Lock()
		up := s.cmd != nil && !s.paused
		s.mu.Unlock()
		if !up {
			continue
		}
		l, err := APIClient(s, 2*time.Second).Status().Leader()
		if err != nil || l == "" || (seen != "" && l != seen) {
			return nil
		}
		seen = l
		n++
	}
	for _, s := range c.Servers {
		if n > 0 && s.RPC() == seen {
			return s
		}
	}
	return nil
}

// WaitLeader waits until the running servers agree on a leader other
// than not (nil for any).
func (c *Cluster) WaitLeader(timeout time.Duration, not *Agent) (*Agent, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.Leader(); l != nil && l != not {
			return l, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("no agreed leader within %s", timeout)
}

// WaitClients waits until n client nodes are ready.
func (c *Cluster) WaitClients(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.Leader(); l != nil {
			nodes, _, err := APIClient(l, 2*time.Second).Nodes().List(nil)
			ready := 0
			for _, nd := range nodes {
				if nd.Status == "ready" {
					ready++
				}
			}
			if err == nil && ready == len(c.Clients) {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%d clients not ready within %s", len(c.Clients), timeout)
}

// Follower returns a running server other than the leader.
func (c *Cluster) Follower(leader *Agent) *Agent {
	for _, s := range c.Servers {
		if s != leader {
			return s
		}
	}
	return nil
}

// WaitLeaderAmong waits until the servers other than out agree on a
// leader among themselves (out is partitioned or paused).
func (c *Cluster) WaitLeaderAmong(timeout time.Duration, out *Agent) (*Agent, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var seen string
		ok := true
		for _, s := range c.Servers {
			if s == out || !s.Running() {
				continue
			}
			l, err := APIClient(s, time.Second).Status().Leader()
			if err != nil || l == "" || (seen != "" && l != seen) || l == out.RPC() {
				ok = false
				break
			}
			seen = l
		}
		if ok && seen != "" {
			for _, s := range c.Servers {
				if s.RPC() == seen {
					return s, nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("no new leader within %s", timeout)
}

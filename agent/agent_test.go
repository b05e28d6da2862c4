package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// testLogger is silent unless DROVER_TEST_LOG is set.
func testLogger() hclog.Logger {
	if os.Getenv("DROVER_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: os.Stderr})
}

// startDevAgent runs a -dev agent on free ports with fast Raft timeouts
// and waits until it has a leader. enable_debug is off: its profiling
// rates would tax the benchmarks that use this.
func startDevAgent(t testing.TB) *Agent {
	t.Helper()
	cfg := DevConfig()
	cfg.EnableDebug = false
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "dev1"
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	waitForLeader(t, api.NewClient(a.HTTPURL()))
	return a
}

func waitForLeader(t testing.TB, c *api.Client) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		leader, err := c.Leader(context.Background())
		if err == nil && leader != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader: %q, %v", leader, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testJob(id string) *structs.Job {
	return &structs.Job{
		ID: id, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}},
		}},
	}
}

func jobsIndex(t *testing.T, a *Agent) uint64 {
	t.Helper()
	idx, err := a.Server().State().Index(state.TableJobs)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestAgentJobLifecycle(t *testing.T) {
	a := startDevAgent(t)
	ctx := context.Background()
	c := api.NewClient(a.HTTPURL())

	if a.HTTPAddr() == "" || strings.HasSuffix(a.HTTPAddr(), ":0") || strings.HasSuffix(a.RPCAddr(), ":0") {
		t.Fatalf("bound addresses not exposed: http %q rpc %q", a.HTTPAddr(), a.RPCAddr())
	}

	reg, wm, err := c.RegisterJob(ctx, testJob("web"), nil, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if reg.EvalID == "" || reg.JobModifyIndex == 0 || wm.LastIndex == 0 {
		t.Fatalf("register response %+v meta %+v", reg, wm)
	}

	job, qm, err := c.Job(ctx, "web", nil)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if job.ID != "web" || job.Namespace != "default" || job.Priority != structs.DefaultPriority ||
		job.JobModifyIndex != reg.JobModifyIndex || qm.LastIndex < reg.JobModifyIndex || !qm.KnownLeader {
		t.Fatalf("job %+v meta %+v", job, qm)
	}
	ev, _, err := c.Eval(ctx, reg.EvalID, nil)
	if err != nil || ev.JobID != "web" {
		t.Fatalf("eval %+v: %v", ev, err)
	}

	// Check-and-set against a stale index is refused.
	_, _, err = c.RegisterJob(ctx, testJob("web"), &api.RegisterOptions{EnforceIndex: true, ModifyIndex: reg.JobModifyIndex + 100}, nil)
	var se *api.StatusError
	if !errors.As(err, &se) || (se.Code != http.StatusConflict && se.Code != http.StatusBadRequest) {
		t.Fatalf("stale check-and-set: %v", err)
	}

	jobs, _, err := c.Jobs(ctx, &api.QueryOptions{Prefix: "w"})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "web" {
		t.Fatalf("list: %+v, %v", jobs, err)
	}

	// A blocking query returns when the job changes.
	changed := make(chan error, 1)
	go func() {
		_, qm, err := c.Job(ctx, "web", &api.QueryOptions{WaitIndex: job.ModifyIndex, WaitTime: 10 * time.Second})
		if err == nil && qm.LastIndex <= job.ModifyIndex {
			err = errors.New("blocking query returned without a change")
		}
		changed <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the query block; correctness does not depend on it
	upd := testJob("web")
	upd.Priority = 70
	if _, _, err := c.RegisterJob(ctx, upd, nil, nil); err != nil {
		t.Fatalf("update: %v", err)
	}
	select {
	case err := <-changed:
		if err != nil {
			t.Fatalf("blocking query: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not return after the update")
	}

	dereg, _, err := c.DeregisterJob(ctx, "web", false, nil)
	if err != nil || dereg.EvalID == "" {
		t.Fatalf("stop: %+v, %v", dereg, err)
	}
	job, _, err = c.Job(ctx, "web", nil)
	if err != nil || !job.Stop {
		t.Fatalf("after stop: %+v, %v", job, err)
	}
	if _, _, err := c.DeregisterJob(ctx, "web", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if _, _, err := c.Job(ctx, "web", nil); !api.IsNotFound(err) {
		t.Fatalf("after purge: %v", err)
	}
}

// Bad input is answered by the agent or the server's validation; none of
// it reaches Raft.
func TestAgentBadInputWritesNothing(t *testing.T) {
	a := startDevAgent(t)
	ctx := context.Background()
	before := jobsIndex(t, a)

	bodies := []struct {
		body string
		code int
	}{
		{`{"Job": {`, 400},
		{`{"Job": "x"}`, 400},
		{`{}`, 400},
		{`{"Job": {"ID": "x", "Meta": {"k": "` + strings.Repeat("a", MaxRequestBodyBytes) + `"}}}`, 413},
		{`{"Job": {"ID": "bad id!", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t"}]}]}}`, 400},
		{`{"Job": {"ID": "x", "Priority": 500, "TaskGroups": []}}`, 400},
	}
	for _, b := range bodies {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, a.HTTPURL()+"/v1/jobs", strings.NewReader(b.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != b.code {
			t.Errorf("body %.40q: status %d (%s); want %d", b.body, resp.StatusCode, msg, b.code)
		}
	}
	// The validation error lists every field problem, one per line.
	_, _, err := api.NewClient(a.HTTPURL()).RegisterJob(ctx, &structs.Job{ID: "x", Priority: 500}, nil, nil)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Body, "Priority: ") || !strings.Contains(se.Body, "\nTaskGroups: ") {
		t.Fatalf("validation error: %v", err)
	}
	if after := jobsIndex(t, a); after != before {
		t.Fatalf("jobs table index moved from %d to %d: bad input reached Raft", before, after)
	}
	jobs, err := a.Server().State().Jobs(nil)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("jobs stored: %v, %v", jobs, err)
	}
}

func TestAgentStatusAndAgentEndpoints(t *testing.T) {
	a := startDevAgent(t)
	ctx := context.Background()
	c := api.NewClient(a.HTTPURL())

	leader, err := c.Leader(ctx)
	if err != nil || leader != a.RPCAddr() {
		t.Fatalf("leader = %q, %v; want %q", leader, err, a.RPCAddr())
	}
	peers, err := c.Peers(ctx)
	if err != nil || len(peers) != 1 || peers[0] != a.RPCAddr() {
		t.Fatalf("peers = %v, %v", peers, err)
	}
	rc, err := c.RaftConfiguration(ctx, nil)
	if err != nil || len(rc.Servers) != 1 || !rc.Servers[0].Leader || !rc.Servers[0].Voter {
		t.Fatalf("raft configuration = %+v, %v", rc, err)
	}
	h, err := c.AgentHealth(ctx)
	if err != nil || !h.Server.Ok {
		t.Fatalf("health = %+v, %v", h, err)
	}
	self, err := c.AgentSelf(ctx)
	if err != nil || self.Config["Region"] != "global" || self.Member.Name != "dev1.global" {
		t.Fatalf("self = %+v, %v", self, err)
	}
	// The dev agent's own client may have registered by now.
	nodes, _, err := c.Nodes(ctx, nil)
	if err != nil || len(nodes) > 1 || (len(nodes) == 1 && nodes[0].Name != "dev1") {
		t.Fatalf("nodes = %v, %v", nodes, err)
	}
	if _, _, err := c.Node(ctx, "nope", nil); !api.IsNotFound(err) {
		t.Fatalf("missing node: %v", err)
	}
	if _, _, err := c.Eval(ctx, structs.GenerateUUID(), nil); !api.IsNotFound(err) {
		t.Fatalf("missing eval: %v", err)
	}
}

func TestAgentDevDataDirRemoved(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports = Ports{}
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	dir := a.devDataDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("dev data dir missing while running: %v", err)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dev data dir %s not removed: %v", dir, err)
	}
}

func TestAgentStartErrors(t *testing.T) {
	// The HTTP port is taken: NewAgent fails (and stops the server it
	// had started).
	blocker := startDevAgent(t)
	cfg := DevConfig()
	cfg.Ports = Ports{HTTP: portOf(t, blocker.HTTPAddr()), RPC: 0}
	if _, err := NewAgent(cfg, testLogger()); err == nil || !strings.Contains(err.Error(), "HTTP API") {
		t.Fatalf("NewAgent with a busy port: %v", err)
	}

	client := DefaultConfig()
	client.Client.Enabled = true
	if _, err := NewAgent(client, testLogger()); err == nil || !strings.Contains(err.Error(), "needs servers") {
		t.Fatalf("client-only agent without servers: %v", err)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNomadClientAgainstAgent(t *testing.T) {
	a := startDevAgent(t)
	exerciseNomadClient(t, a.HTTPURL())
}

// Three agents form a cluster through retry_join; any agent's HTTP API
// serves writes and reads (followers forward to the leader).
func TestAgentThreeServerCluster(t *testing.T) {
	var agents []*Agent
	for i := 0; i < 3; i++ {
		cfg := DefaultConfig()
		cfg.NodeName = "s" + strconv.Itoa(i)
		cfg.DataDir = t.TempDir()
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = Ports{}
		cfg.Server.Enabled = true
		cfg.Server.BootstrapExpect = 3
		for _, prev := range agents {
			cfg.Server.RetryJoin = append(cfg.Server.RetryJoin, prev.RPCAddr())
		}
		cfg.serverConfigHook = func(sc *server.Config) {
			sc.RaftTimeoutScale = 0.25
			sc.RetryInterval = 50 * time.Millisecond
		}
		a, err := NewAgent(cfg, testLogger())
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		agents = append(agents, a)
	}
	ctx := context.Background()
	var leader string
	deadline := time.Now().Add(20 * time.Second)
	for {
		peers, err := api.NewClient(agents[2].HTTPURL()).Peers(ctx)
		leader, _ = api.NewClient(agents[2].HTTPURL()).Leader(ctx)
		if err == nil && len(peers) == 3 && leader != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster did not form: peers %v leader %q err %v", peers, leader, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var followers []*Agent
	for _, a := range agents {
		if a.RPCAddr() != leader {
			followers = append(followers, a)
		}
	}
	if len(followers) != 2 {
		t.Fatalf("followers = %d (leader %s)", len(followers), leader)
	}

	w, r := api.NewClient(followers[0].HTTPURL()), api.NewClient(followers[1].HTTPURL())
	reg, _, err := w.RegisterJob(ctx, testJob("web"), nil, nil)
	if err != nil {
		t.Fatalf("register through a follower: %v", err)
	}
	job, _, err := r.Job(ctx, "web", nil)
	if err != nil || job.JobModifyIndex != reg.JobModifyIndex {
		t.Fatalf("read through the other follower: %+v, %v", job, err)
	}
	// A stale read is answered locally; block until the follower has the job.
	_, qm, err := r.Jobs(ctx, &api.QueryOptions{AllowStale: true})
	if err != nil {
		t.Fatal(err)
	}
	if qm.LastIndex < reg.JobModifyIndex {
		_, qm, err = r.Jobs(ctx, &api.QueryOptions{AllowStale: true, WaitIndex: reg.JobModifyIndex - 1, WaitTime: 5 * time.Second})
		if err != nil || qm.LastIndex < reg.JobModifyIndex {
			t.Fatalf("stale read never caught up: %+v, %v", qm, err)
		}
	}
	rc, err := r.RaftConfiguration(ctx, nil)
	if err != nil || len(rc.Servers) != 3 {
		t.Fatalf("raft configuration: %+v, %v", rc, err)
	}
}

package agent

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// startDevClientAgent runs a -dev agent (server and client in one process)
// with fast Raft timeouts and a quick client.
func startDevClientAgent(t *testing.T) *Agent {
	t.Helper()
	cfg := DevConfig()
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "dev-client"
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return a
}

func pollUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rawExecJob(id, jobType, script string) *structs.Job {
	return &structs.Job{ID: id, Type: jobType, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}}}}}
}

// TestDevAgentRunsRawExecBatchJob: a job registered with the dev agent's
// server is placed on its own client, runs as a real process, and ends
// complete on the servers with its output in the task's log.
func TestDevAgentRunsRawExecBatchJob(t *testing.T) {
	a := startDevClientAgent(t)
	c := a.Client()
	if c == nil {
		t.Fatal("dev agent has no client")
	}
	alloc := runBatchOnDevAgent(t, a, "hello", "echo hi from $NOMAD_TASK_NAME; exit 0")
	if alloc.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s", alloc.ClientStatus)
	}
	if alloc.NodeID != c.NodeID() {
		t.Fatalf("placed on %s, want %s", alloc.NodeID, c.NodeID())
	}
	ts := alloc.TaskStates.MustMap()["t"]
	if ts == nil || ts.State != structs.TaskStateDead || ts.Failed {
		t.Fatalf("task state %+v", ts)
	}
	var types []string
	for _, e := range ts.Events {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, ","); got != "Received,Task Setup,Started,Terminated" {
		t.Fatalf("events %s", got)
	}
	r, err := c.TaskLogs(alloc.ID, "t", "stdout", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := io.ReadAll(r)
	if string(out) != "hi from t\n" {
		t.Fatalf("stdout %q", out)
	}
}

// TestDevAgentStopsServiceJob: stopping a job kills its task on the client
// and the allocation ends complete.
func TestDevAgentStopsServiceJob(t *testing.T) {
	a := startDevClientAgent(t)
	srv := a.Server()
	job := rawExecJob("svc", structs.JobTypeService, "exec sleep 1000")
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	allocOf := func() *structs.Allocation {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "svc")
		if err != nil || len(allocs) != 1 {
			return nil
		}
		return allocs[0]
	}
	pollUntil(t, "running", 20*time.Second, func() bool {
		a := allocOf()
		return a != nil && a.ClientStatus == structs.AllocClientStatusRunning
	})
	var dereg structs.JobDeregisterResponse
	if err := srv.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "svc"}, &dereg); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	pollUntil(t, "complete after stop", 20*time.Second, func() bool {
		a := allocOf()
		return a != nil && a.ClientStatus == structs.AllocClientStatusComplete
	})
	ts := allocOf().TaskStates.MustMap()["t"]
	if last := ts.Events[len(ts.Events)-1]; last.Type != structs.TaskKilled {
		t.Fatalf("last event %s", last.Type)
	}
}

// TestClientOnlyAgentOverTCP: a client-only agent joins a server agent
// over the network (msgpack RPC through the pool), runs a job placed on
// it, and answers HTTP API requests by forwarding them to the servers.
func TestClientOnlyAgentOverTCP(t *testing.T) {
	scfg := DevConfig()
	scfg.Client.Enabled = false
	scfg.Ports = Ports{}
	scfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	sa, err := NewAgent(scfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Shutdown() })

	ccfg := DefaultConfig()
	ccfg.Client.Enabled = true
	ccfg.Client.Servers = []string{sa.RPCAddr()}
	ccfg.DataDir = t.TempDir()
	ccfg.BindAddr = "127.0.0.1"
	ccfg.NodeName = "remote-client"
	ccfg.Ports = Ports{}
	ccfg.Plugins[PluginRawExec] = &PluginConfig{Enabled: true}
	ccfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
		cc.DestroyOnShutdown = true
	}
	ca, err := NewAgent(ccfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ca.Shutdown() })
	if ca.Server() != nil || ca.RPCAddr() != "" {
		t.Fatal("client-only agent runs a server")
	}

	srv := sa.Server()
	job := rawExecJob("remote", structs.JobTypeBatch, "echo remote; exit 4")
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register: %v", err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation failed on the servers", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "remote")
		if err != nil {
			return false
		}
		for _, a := range allocs { // a reschedule may add another later
			if a.ClientStatus == structs.AllocClientStatusFailed {
				alloc = a
				return true
			}
		}
		return false
	})
	if alloc.NodeID != ca.Client().NodeID() {
		t.Fatalf("placed on %s", alloc.NodeID)
	}
	var exit *structs.TaskEvent
	for _, e := range alloc.TaskStates.MustMap()["t"].Events {
		if e.Type == structs.TaskTerminated {
			exit = e
		}
	}
	if exit == nil || exit.ExitCode != 4 {
		t.Fatalf("terminated event %+v", exit)
	}

	// The client-only agent's HTTP API forwards to the servers.
	leader := (&clientAPIServer{c: ca.Client()}).Leader()
	if leader != srv.RPCAddr() {
		t.Fatalf("leader through the client = %q, want %q", leader, srv.RPCAddr())
	}
}

// runBatchOnDevAgent waits for the dev agent's own node to be ready,
// registers a one-task raw_exec batch job running script, and returns its
// allocation once the servers see it terminal.
func runBatchOnDevAgent(t *testing.T, a *Agent, id, script string) *structs.Allocation {
	t.Helper()
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: c.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	job := rawExecJob(id, structs.JobTypeBatch, script)
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation finished on the servers", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, id)
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientTerminalStatus()
	})
	return alloc
}

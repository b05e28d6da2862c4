package client

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// TestRealClusterFailover runs a client against a real three-server
// cluster over TCP (the RPC pool), kills the server the client is using,
// and checks the client carries on: its node stays ready and a job
// registered afterwards runs on it.
func TestRealClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cluster := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = time.Second
		cfg.HeartbeatGrace = time.Second
		cfg.FailoverHeartbeatTTL = 2 * time.Second
	}))
	cluster.WaitForLeader(t, 10*time.Second)
	var addrs []string
	for _, s := range cluster.Servers() {
		addrs = append(addrs, s.RPCAddr())
	}
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: addrs, NodeName: "cluster-client", MockEnabled: true,
		NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: 2 * time.Second,
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)

	nodeStatus := func() string {
		for _, s := range cluster.Servers() {
			if s == nil {
				continue
			}
			var resp structs.SingleNodeResponse
			if err := s.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: c.NodeID()}, &resp); err == nil && resp.Node != nil {
				return resp.Node.Status
			}
		}
		return ""
	}
	waitFor(t, "node ready", 10*time.Second, func() bool { return nodeStatus() == structs.NodeStatusReady })

	// Kill the server the client talks to (it may be the leader).
	used := c.servers.current()
	for i, s := range cluster.Servers() {
		if s != nil && s.RPCAddr() == used {
			cluster.Kill(i)
		}
	}
	leader := cluster.WaitForLeader(t, 10*time.Second)
	// Longer than TTL plus grace: a client that stopped heartbeating would
	// be marked down by now.
	time.Sleep(3 * time.Second)
	if st := nodeStatus(); st != structs.NodeStatusReady {
		t.Fatalf("node status after failover = %q", st)
	}
	if c.servers.current() == used {
		t.Fatalf("client still uses the killed server %s", used)
	}

	job := &structs.Job{ID: "after-failover", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{
			Name: "t", Driver: "mock_driver", Config: map[string]any{"run_for": "10ms"}}}}}}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register: %v", err)
	}
	waitFor(t, "job complete", 15*time.Second, func() bool {
		allocs, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusComplete
	})
}

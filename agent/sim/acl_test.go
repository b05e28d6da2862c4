package sim

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// The simulator plays client agents of a cluster with ACLs on: its nodes
// authenticate with their node secrets, register, heartbeat and watch
// without errors, and a placed allocation's update is accepted.
func TestSimWithACLs(t *testing.T) {
	c := testcluster.NewTestCluster(t, 1, func(_ int, cfg *server.Config) {
		cfg.ACLEnabled = true
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.RaftNoSync = true
	})
	leader := c.WaitForLeader(t, 10*time.Second)
	var boot structs.ACLTokenUpsertResponse
	if err := leader.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatal(err)
	}
	mgmt := boot.Tokens[0].SecretID

	s := startRegistered(t, &Config{
		Servers: []string{leader.RPCAddr()}, Nodes: 5, IDPrefix: "acl", Sessions: 1,
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})

	job := batchJob("acl-job", 5, map[string]any{"run_for": "1h"})
	var reg structs.JobRegisterResponse
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &reg); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "allocations running and heartbeats, with ACLs on", 15*time.Second, func() (bool, string) {
		st := s.Stats()
		running := clientStatuses(t, leader, "acl-job")[structs.AllocClientStatusRunning]
		return st.Heartbeats > 5 && running == 5 && st.HeartbeatsFailed == 0 && st.UpdatesFailed == 0 && st.RegisterFailed == 0, st.String()
	})
}

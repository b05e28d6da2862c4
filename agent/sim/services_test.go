package sim

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// Simulated nodes register the native services of the allocations they
// run, with their node secrets, as client agents do; the servers drop
// them when the allocations finish.
func TestSimRegistersServices(t *testing.T) {
	c := testcluster.NewTestCluster(t, 1, func(_ int, cfg *server.Config) {
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.RaftNoSync = true
	})
	leader := c.WaitForLeader(t, 10*time.Second)
	s := startRegistered(t, &Config{
		Servers: []string{leader.RPCAddr()}, Nodes: 3, IDPrefix: "svc", Sessions: 1,
		UpdateInterval: 50 * time.Millisecond,
		RetryBase:      20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	job := batchJob("svcjob", 6, map[string]any{"run_for": "1h"})
	job.TaskGroups[0].Services = []*structs.Service{{Name: "api", Provider: "nomad"}}
	var reg structs.JobRegisterResponse
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "six registrations of service api", 15*time.Second, func() (bool, string) {
		regs, err := leader.State().ServiceRegistrationsByName(nil, structs.DefaultNamespace, "api")
		st := s.Stats()
		return err == nil && len(regs) == 6 && st.ServicesRegistered == 6 && st.ServicesFailed == 0, st.String()
	})
	var dereg structs.JobDeregisterResponse
	if err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "svcjob"}, &dereg); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the registrations gone with the stopped allocations", 15*time.Second, func() (bool, string) {
		regs, err := leader.State().ServiceRegistrationsByName(nil, structs.DefaultNamespace, "api")
		return err == nil && len(regs) == 0, s.Stats().String()
	})
}

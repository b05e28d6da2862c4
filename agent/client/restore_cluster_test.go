package client

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// runningOnClient lists the IDs of a job's allocations whose tasks run on
// the client now, sorted.
func runningOnClient(c *Client, jobID string) []string {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	var ids []string
	for id, ar := range c.runners {
		a := ar.Alloc()
		if a.JobID == jobID && a.ClientStatus == structs.AllocClientStatusRunning {
			if done, _ := ar.IsTerminal(); !done {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// runningOnServers lists the IDs of a job's allocations the leader's state
// wants running and the client reports running, sorted; "" as the second
// result once no evaluation is pending or blocked.
func runningOnServers(t *testing.T, s *server.Server, jobID string) ([]string, string) {
	t.Helper()
	st := s.State()
	allocs, err := st.AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range allocs {
		if !a.TerminalStatus() && a.ClientStatus == structs.AllocClientStatusRunning {
			ids = append(ids, a.ID)
		}
	}
	sort.Strings(ids)
	evals, err := st.Evals(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending {
			return ids, fmt.Sprintf("eval %s of %s (%s) pending", e.ID, e.JobID, e.TriggeredBy)
		}
	}
	return ids, ""
}

// longServiceJob is a service job of count mock tasks that run for an hour.
func longServiceJob(id string, count int) *structs.Job {
	return &structs.Job{ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count, Tasks: []*structs.Task{{
			Name: "t", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
			Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
}

// TestRealClusterSnapshotRestoreConverges: three servers over TCP and a
// real client running mock tasks. A job purged after a snapshot comes back
// with the restore, and the client runs its full count again (the restored
// allocations say running, but the client had stopped them: it reports
// that, and the servers replace them); a job registered after a snapshot
// is gone with the restore, and the client stops its tasks.
func TestRealClusterSnapshotRestoreConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cluster := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = 10 * time.Second
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	var addrs []string
	for _, s := range cluster.Servers() {
		addrs = append(addrs, s.RPCAddr())
	}
	// MaxQueryTime far beyond the test: the client must hear of a restore
	// at once, not when its watch times out.
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: addrs, NodeName: "restore-client", MockEnabled: true,
		NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: 5 * time.Minute,
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	waitFor(t, "node registered", 10*time.Second, func() bool {
		n, err := leader.State().NodeByID(nil, c.NodeID())
		return err == nil && n.Status == structs.NodeStatusReady
	})

	rpc := func(method string, args, reply any) {
		t.Helper()
		if err := cluster.WaitForLeader(t, 10*time.Second).RPC(method, args, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	save := func() []byte {
		t.Helper()
		var saved structs.SnapshotSaveResponse
		rpc("Operator.SnapshotSave", &structs.GenericRequest{}, &saved)
		return saved.Archive
	}
	restore := func(archive []byte) {
		t.Helper()
		if _, err := server.RestoreSnapshot(cluster.WaitForLeader(t, 10*time.Second).RPC, bytes.NewReader(archive), structs.WriteRequest{}); err != nil {
			t.Fatalf("restoring: %v", err)
		}
	}
	// converged waits until job runs exactly want allocations on the
	// client, the same ones the servers list as running, and no
	// evaluation is pending; it returns their IDs.
	converged := func(what, jobID string, want int) []string {
		t.Helper()
		var onClient, onServers []string
		var why string
		deadline := time.Now().Add(20 * time.Second)
		for {
			onClient = runningOnClient(c, jobID)
			onServers, why = runningOnServers(t, cluster.WaitForLeader(t, 10*time.Second), jobID)
			if why == "" && len(onClient) == want && fmt.Sprint(onClient) == fmt.Sprint(onServers) {
				return onClient
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: job %s runs %v on the client, servers list %v running (%s); want %d",
					what, jobID, onClient, onServers, why, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	rpc("Job.Register", &structs.JobRegisterRequest{Job: longServiceJob("web", 2)}, &structs.JobRegisterResponse{})
	before := converged("registered", "web", 2)

	// Save, purge, restore: the job runs its two allocations again.
	archive := save()
	rpc("Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", Purge: true}, &structs.JobDeregisterResponse{})
	converged("purged", "web", 0)
	restore(archive)
	after := converged("restored after the purge", "web", 2)
	if fmt.Sprint(after) == fmt.Sprint(before) {
		t.Fatalf("the restored allocations %v run again: the client had stopped them and must have reported it", after)
	}
	if got := runningOnClient(c, "web"); len(got) != 2 {
		t.Fatalf("client runs %v", got)
	}

	// Save, register another job, restore: its tasks stop on the client.
	archive = save()
	rpc("Job.Register", &structs.JobRegisterRequest{Job: longServiceJob("extra", 1)}, &structs.JobRegisterResponse{})
	converged("extra registered", "extra", 1)
	restore(archive)
	converged("restored before extra", "extra", 0)
	if got := converged("web after the second restore", "web", 2); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("web's allocations changed from %v to %v across a restore that kept them", after, got)
	}
	if _, err := cluster.WaitForLeader(t, 10*time.Second).State().JobByID(nil, structs.DefaultNamespace, "extra"); err == nil {
		t.Fatal("job extra still in state after the restore")
	}
}

package client

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// TestReadinessGateHoldsWork runs a client whose readiness command fails
// until a file exists, against a real server over TCP: the node stays
// initializing (heartbeating past its TTL and grace, never marked down)
// with the failure as its reason and a node event, a job registered
// meanwhile is blocked and placed nowhere, and a system job places nothing
// there; once the file exists the node becomes ready and both jobs run
// there as real processes (raw_exec).
func TestReadinessGateHoldsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and real processes")
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("needs /bin/sleep")
	}
	cluster := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = time.Second
		cfg.HeartbeatGrace = time.Second
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	flag := filepath.Join(t.TempDir(), "ready")
	c, err := New(&Config{
		DataDir: t.TempDir(), Servers: []string{leader.RPCAddr()}, NodeName: "gated", RawExecEnabled: true,
		NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: time.Second,
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
		Readiness: &ReadinessConfig{Command: "/bin/sh",
			Args:     []string{"-c", "test -f " + flag + " || { echo 'waiting for " + flag + "' >&2; exit 1; }"},
			Interval: 500 * time.Millisecond, Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	node := func() *structs.Node {
		n, err := leader.State().NodeByID(nil, c.NodeID())
		if err != nil {
			return nil
		}
		return n
	}
	wantMsg := "exit status 1: waiting for " + flag
	waitFor(t, "the failure reported", 10*time.Second, func() bool {
		n := node()
		return n != nil && n.Readiness != nil && n.Readiness.Message == wantMsg
	})

	marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	job := &structs.Job{ID: "gated", Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{marker}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
	sysMarker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	sysJob := &structs.Job{ID: "gated-system", Type: structs.JobTypeSystem, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{sysMarker}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
	for _, j := range []*structs.Job{job, sysJob} {
		if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &structs.JobRegisterResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a blocked evaluation", 10*time.Second, func() bool {
		evals, err := leader.State().EvalsByJob(nil, structs.DefaultNamespace, job.ID)
		for _, e := range evals {
			if err == nil && e.Status == structs.EvalStatusBlocked {
				return true
			}
		}
		return false
	})
	// Longer than the TTL plus grace: a node that heartbeats while
	// initializing stays initializing, and gets no work.
	time.Sleep(3 * time.Second)
	n := node()
	if n.Status != structs.NodeStatusInit || n.StatusDescription != wantMsg || n.Readiness.Passed || !n.Readiness.Command {
		t.Fatalf("node %q %q readiness %+v", n.Status, n.StatusDescription, n.Readiness)
	}
	var event bool
	for _, e := range n.Events {
		event = event || e.Message == "Node readiness check failed: "+wantMsg
	}
	if !event {
		t.Fatalf("no readiness event among %d events", len(n.Events))
	}
	if allocs, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID); err != nil || len(allocs) != 0 {
		t.Fatalf("allocations on an initializing node: %d, %v", len(allocs), err)
	}
	if allocs, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, sysJob.ID); err != nil || len(allocs) != 0 {
		t.Fatalf("system allocations on an initializing node: %d, %v", len(allocs), err)
	}
	if p := append(procsWithArgs("/bin/sleep", marker), procsWithArgs("/bin/sleep", sysMarker)...); len(p) != 0 {
		t.Fatalf("the jobs run on an initializing node: %v", p)
	}

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	waitFor(t, "node ready", 10*time.Second, func() bool {
		n := node()
		return n != nil && n.Status == structs.NodeStatusReady && n.Readiness.Passed && n.StatusDescription == ""
	})
	t.Logf("node ready %s after the file appeared", time.Since(created).Round(time.Millisecond))
	// The node's change to ready evaluates every system job (and the
	// blocked service job is unblocked by the new capacity).
	waitFor(t, "the jobs' processes", 15*time.Second, func() bool {
		return len(procsWithArgs("/bin/sleep", marker)) == 1 && len(procsWithArgs("/bin/sleep", sysMarker)) == 1
	})
	t.Logf("both processes running %s after the file appeared", time.Since(created).Round(time.Millisecond))
	allocs, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
	if err != nil || len(allocs) != 1 || allocs[0].NodeID != c.NodeID() {
		t.Fatalf("allocations %d on %v, %v", len(allocs), allocs, err)
	}
	sys, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, sysJob.ID)
	if err != nil || len(sys) != 1 || sys[0].NodeID != c.NodeID() {
		t.Fatalf("system job allocations %d, %v", len(sys), err)
	}
}

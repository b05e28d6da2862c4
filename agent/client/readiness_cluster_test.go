package client

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestReadinessGateOnRestart: a client restarted on its data directory
// with a readiness command that fails registers its node initializing
// again; the allocations it re-attached to keep running (same processes,
// not lost, not replaced) past the TTL and grace; once the command passes
// the node is ready with the same allocations and nothing new.
func TestReadinessGateOnRestart(t *testing.T) {
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
	dataDir := t.TempDir()
	flag := filepath.Join(t.TempDir(), "ready")
	start := func(readiness *ReadinessConfig) *Client {
		c, err := New(&Config{
			DataDir: dataDir, Servers: []string{leader.RPCAddr()}, NodeName: "restarted", RawExecEnabled: true,
			NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: time.Second,
			RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond, Readiness: readiness,
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	status := func(id string) string {
		n, err := leader.State().NodeByID(nil, id)
		if err != nil {
			return ""
		}
		return n.Status
	}
	first := start(nil)
	waitFor(t, "node ready", 10*time.Second, func() bool { return status(first.NodeID()) == structs.NodeStatusReady })
	marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	sysMarker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	for _, j := range []struct{ id, typ, marker string }{{"svc", structs.JobTypeService, marker}, {"sys", structs.JobTypeSystem, sysMarker}} {
		job := &structs.Job{ID: j.id, Type: j.typ, Datacenters: []string{"dc1"},
			TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
				Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
					Config:    map[string]any{"command": "/bin/sleep", "args": []any{j.marker}},
					Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
		if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	var pids []int
	waitFor(t, "both processes", 15*time.Second, func() bool {
		pids = append(procsWithArgs("/bin/sleep", marker), procsWithArgs("/bin/sleep", sysMarker)...)
		return len(pids) == 2
	})
	live := func() []string {
		var ids []string
		for _, job := range []string{"svc", "sys"} {
			allocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job)
			for _, a := range allocs {
				if !a.TerminalStatus() {
					ids = append(ids, a.ID+"/"+a.ClientStatus)
				}
			}
		}
		return ids
	}
	waitFor(t, "both allocations running", 10*time.Second, func() bool {
		ids := live()
		return len(ids) == 2 && strings.HasSuffix(ids[0], "/running") && strings.HasSuffix(ids[1], "/running")
	})
	before := live()

	// Restart: tasks keep running; the new client re-attaches to them.
	if err := first.Shutdown(); err != nil {
		t.Fatal(err)
	}
	c := start(&ReadinessConfig{Command: "/bin/test", Args: []string{"-f", flag}, Interval: 500 * time.Millisecond, Timeout: 5 * time.Second})
	cleanupKill(t, c)
	waitFor(t, "node initializing", 10*time.Second, func() bool { return status(c.NodeID()) == structs.NodeStatusInit })
	time.Sleep(3 * time.Second) // past TTL and grace
	if st := status(c.NodeID()); st != structs.NodeStatusInit {
		t.Fatalf("restarted node %q, want initializing", st)
	}
	if got := live(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("allocations changed while initializing: %v -> %v", before, got)
	}
	now := append(procsWithArgs("/bin/sleep", marker), procsWithArgs("/bin/sleep", sysMarker)...)
	if fmt.Sprint(now) != fmt.Sprint(pids) {
		t.Fatalf("processes changed while initializing: %v -> %v", pids, now)
	}

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node ready", 10*time.Second, func() bool { return status(c.NodeID()) == structs.NodeStatusReady })
	// The evaluations of the change to ready keep what runs.
	waitFor(t, "evaluations done", 10*time.Second, func() bool {
		for _, job := range []string{"svc", "sys"} {
			evals, _ := leader.State().EvalsByJob(nil, structs.DefaultNamespace, job)
			for _, e := range evals {
				if !e.TerminalStatus() {
					return false
				}
			}
		}
		return true
	})
	if got := live(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("allocations changed after ready: %v -> %v", before, got)
	}
	now = append(procsWithArgs("/bin/sleep", marker), procsWithArgs("/bin/sleep", sysMarker)...)
	if fmt.Sprint(now) != fmt.Sprint(pids) {
		t.Fatalf("processes changed after ready: %v -> %v", pids, now)
	}
}

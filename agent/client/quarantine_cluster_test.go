package client

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/quarantine"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// TestQuarantineFlakyNode runs real processes (raw_exec) against a real
// server. Client a's allocation directory root is made a file, so no
// allocation can be set up there (a disk fault of the node, whatever the
// job): each allocation placed on a fails with a node fault of kind setup
// and its task event says so. Past the threshold (3) the server
// quarantines a (ineligible, with a quarantine event); the job's
// allocations then run on client b. With the fault removed, a passes its
// re-probe after the cool-down, is eligible again with a "Quarantine
// lifted" event, and runs new work.
func TestQuarantineFlakyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and real processes")
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("needs /bin/sleep")
	}
	const cooldown = 2 * time.Second
	cluster := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.NodeQuarantine = server.NodeQuarantineConfig{Threshold: 3, Cooldown: cooldown}
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	st := leader.State
	startClient := func(name string) *Client {
		c, err := New(&Config{
			DataDir: t.TempDir(), Servers: []string{leader.RPCAddr()}, NodeName: name, RawExecEnabled: true,
			NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: time.Second,
			RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		cleanupKill(t, c)
		waitFor(t, name+" ready", 10*time.Second, func() bool {
			n, err := st().NodeByID(nil, c.NodeID())
			return err == nil && n.Status == structs.NodeStatusReady
		})
		return c
	}
	a := startClient("a")

	// The fault: a's allocation root is a file.
	if err := os.RemoveAll(a.allocRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.allocRoot, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	job := &structs.Job{ID: "flaky", Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 3,
			RestartPolicy:    &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail},
			ReschedulePolicy: &structs.ReschedulePolicy{Unlimited: true, Delay: 100 * time.Millisecond, DelayFunction: structs.DelayFunctionConstant},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{marker}},
				Resources: &structs.Resources{CPU: 50, MemoryMB: 16}}}}}}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a quarantined", 20*time.Second, func() bool {
		q, err := st().NodeQuarantineByID(nil, a.NodeID())
		return err == nil && q.Quarantined
	})
	node, err := st().NodeByID(nil, a.NodeID())
	if err != nil {
		t.Fatal(err)
	}
	if node.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("quarantined node is %s", node.SchedulingEligibility)
	}
	if ev := lastNodeEvent(node, quarantine.EventSubsystem); ev == nil || !strings.Contains(ev.Message, "setup: ") || ev.Details[quarantine.DetailQuarantine] != "true" {
		t.Fatalf("quarantine event %+v", ev)
	}
	q, _ := st().NodeQuarantineByID(nil, a.NodeID())
	for _, f := range q.Faults {
		if f.Kind != structs.NodeFaultSetup || f.AllocID == "" {
			t.Fatalf("fault %+v, want setup faults of allocations", f)
		}
	}

	// The job's allocations go to b.
	b := startClient("b")
	defer func() {
		if t.Failed() {
			allocs, _ := st().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
			for _, x := range allocs {
				t.Logf("alloc %s node %s desired %s client %s %q", x.ID[:8], x.NodeID[:8], x.DesiredStatus, x.ClientStatus, x.ClientDescription)
			}
			evals, _ := st().EvalsByJob(nil, structs.DefaultNamespace, job.ID)
			for _, e := range evals {
				t.Logf("eval %s %s %s %s wait %v", e.ID[:8], e.TriggeredBy, e.Status, e.StatusDescription, e.WaitUntil)
			}
			t.Logf("a=%s b=%s", a.NodeID()[:8], b.NodeID()[:8])
		}
	}()
	waitFor(t, "the job running on b", 30*time.Second, func() bool {
		allocs, err := st().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
		if err != nil {
			return false
		}
		running := 0
		for _, x := range allocs {
			if x.ClientStatus == structs.AllocClientStatusRunning {
				if x.NodeID != b.NodeID() {
					t.Fatalf("allocation %s running on %s, not b", x.ID, x.NodeID)
				}
				running++
			}
		}
		return running == 3 && len(procsWithArgs("/bin/sleep", marker)) == 3
	})

	// The fault removed, a passes its re-probe after the cool-down.
	if err := os.Remove(a.allocRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(a.allocRoot, 0o711); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a back in service", 3*cooldown+5*time.Second, func() bool {
		n, err := st().NodeByID(nil, a.NodeID())
		return err == nil && n.SchedulingEligibility == structs.NodeSchedulingEligible
	})
	node, _ = st().NodeByID(nil, a.NodeID())
	if ev := lastNodeEvent(node, quarantine.EventSubsystem); ev == nil || ev.Message != quarantine.EventLifted {
		t.Fatalf("lift event %+v", ev)
	}
	if _, err := st().NodeQuarantineByID(nil, a.NodeID()); err == nil {
		t.Fatal("quarantine row kept after the lift")
	}

	// New work runs on a.
	after := &structs.Job{ID: "after", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		Constraints: []*structs.Constraint{{LTarget: "${node.unique.id}", RTarget: a.NodeID(), Operand: "="}},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"0.1"}},
				Resources: &structs.Resources{CPU: 50, MemoryMB: 16}}}}}}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: after}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a job complete on a", 20*time.Second, func() bool {
		allocs, err := st().AllocsByJob(nil, structs.DefaultNamespace, after.ID)
		return err == nil && len(allocs) == 1 && allocs[0].NodeID == a.NodeID() && allocs[0].ClientStatus == structs.AllocClientStatusComplete
	})
}

// lastNodeEvent returns the node's latest event of subsystem, or nil.
func lastNodeEvent(n *structs.Node, subsystem string) *structs.NodeEvent {
	for i := len(n.Events) - 1; i >= 0; i-- {
		if n.Events[i].Subsystem == subsystem {
			return n.Events[i]
		}
	}
	return nil
}

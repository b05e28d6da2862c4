package agent

import (
	"slices"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
)

// startSecondClient runs a client-only agent (real raw_exec processes)
// joined to the servers of a.
func startSecondClient(t *testing.T, a *Agent, name string) *Agent {
	t.Helper()
	ccfg := DefaultConfig()
	ccfg.Client.Enabled = true
	ccfg.Client.Servers = []string{a.RPCAddr()}
	ccfg.DataDir = t.TempDir()
	ccfg.BindAddr = "127.0.0.1"
	ccfg.NodeName = name
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
	return ca
}

// TestDrainMigrationsWaitForHealth drains a node running a count-3
// service job whose migrate block is max_parallel 1, min_healthy_time 2s,
// with real processes on two clients, through Nomad's Go client. Sampled
// every 100 ms, never more than one migration is in flight (its old
// allocation stopped, its replacement's health not yet set), and each old allocation's process stops only once the previous
// replacement's process has run for 2 s.
func TestDrainMigrationsWaitForHealth(t *testing.T) {
	a := startDevClientAgent(t)
	nc := nomad.DefaultConfig()
	nc.Address = a.HTTPURL()
	c, err := nomad.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	first := a.Client().NodeID()
	pollUntil(t, "a ready node", 20*time.Second, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	job := &nomad.Job{ID: new("mig"), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{{
		Name: new("web"), Count: new(3),
		Migrate: &nomad.MigrateStrategy{MaxParallel: new(1), HealthCheck: new("task_states"),
			MinHealthyTime: new(2 * time.Second), HealthyDeadline: new(time.Minute)},
		RestartPolicy: &nomad.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)},
		Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", KillTimeout: new(time.Second),
			Resources: &nomad.Resources{CPU: new(20), MemoryMB: new(20)},
			Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", "exec sleep 600"}}}},
	}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	// The first allocations turn healthy by the migrate block (no
	// deployment: the job has no update block).
	pollUntil(t, "three healthy allocations", 30*time.Second, func() bool {
		allocs, _, err := c.Jobs().Allocations("mig", false, nil)
		if err != nil {
			return false
		}
		n := 0
		for _, x := range allocs {
			if x.ClientStatus == "running" && x.DeploymentStatus != nil && x.DeploymentStatus.Healthy != nil && *x.DeploymentStatus.Healthy {
				n++
			}
		}
		return n == 3
	})
	startSecondClient(t, a, "second")
	pollUntil(t, "two ready nodes", 20*time.Second, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return err == nil && ready == 2
	})
	if _, err := c.Nodes().UpdateDrain(first, &nomad.DrainSpec{Deadline: 2 * time.Minute}, false, nil); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(90 * time.Second)
	var final []*nomad.AllocationListStub
	for {
		allocs, _, err := c.Jobs().Allocations("mig", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A migration is in flight from when its old allocation is
		// stopped until its replacement's health is set.
		moved, settled, done := 0, 0, 0
		for _, x := range allocs {
			switch {
			case x.NodeID == first:
				if x.DesiredStatus != "run" {
					moved++
				}
			case x.DesiredStatus == "run" && x.DeploymentStatus != nil && x.DeploymentStatus.Healthy != nil:
				settled++
				if *x.DeploymentStatus.Healthy && x.ClientStatus == "running" {
					done++
				}
			}
		}
		inFlight := moved - settled
		if inFlight > 1 {
			t.Fatalf("%d migrations in flight at once", inFlight)
		}
		if done == 3 {
			final = allocs
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drain not done: %d replacements healthy", done)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Each old process stops only once the replacement of the one before
	// has run for min_healthy_time.
	type move struct{ stopped, replStarted time.Time }
	var moves []move
	full := map[string]*nomad.Allocation{}
	for _, x := range final {
		al, _, err := c.Allocations().Info(x.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		full[x.ID] = al
	}
	for _, al := range full {
		if al.NodeID == first || al.DesiredStatus != "run" {
			continue
		}
		old := full[al.PreviousAllocation]
		if old == nil || old.NodeID != first {
			t.Fatalf("replacement %s replaces %q, not an allocation of the drained node", al.ID, al.PreviousAllocation)
		}
		moves = append(moves, move{stopped: old.TaskStates["t"].FinishedAt, replStarted: al.TaskStates["t"].StartedAt})
	}
	if len(moves) != 3 {
		t.Fatalf("%d replacements of the drained node's allocations", len(moves))
	}
	slices.SortFunc(moves, func(x, y move) int { return x.stopped.Compare(y.stopped) })
	for k := 1; k < len(moves); k++ {
		ran := moves[k].stopped.Sub(moves[k-1].replStarted)
		t.Logf("old allocation %d stopped after the previous replacement ran %s", k, ran)
		if ran < 2*time.Second {
			t.Fatalf("old allocation %d stopped when the previous replacement had run %s (< min_healthy_time 2s)", k, ran)
		}
	}
	pollUntil(t, "the drain complete", 20*time.Second, func() bool {
		n, _, err := c.Nodes().Info(first, nil)
		return err == nil && n.DrainStrategy == nil && !n.Drain
	})
}

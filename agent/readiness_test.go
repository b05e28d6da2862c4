package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
)

// TestDevAgentReadinessGate runs a -dev agent whose config file has a
// readiness block with a command that fails until a file exists, and
// drives it with Nomad's Go client: the node lists as initializing with
// the failure among its node events, a job registered meanwhile gets a
// blocked evaluation and no allocation; once the file exists the node is
// ready and the job runs to completion as a real process.
func TestDevAgentReadinessGate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and real processes")
	}
	flag := filepath.Join(t.TempDir(), "ready")
	cfg := DevConfig()
	src := fmt.Sprintf(`client {
  readiness {
    command  = "/bin/sh"
    args     = ["-c", "test -f %s || { echo disk not mounted >&2; exit 2; }"]
    interval = "500ms"
    timeout  = "5s"
  }
}
`, flag)
	if err := parseConfig(cfg, "readiness.hcl", []byte(src)); err != nil {
		t.Fatal(err)
	}
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "gated"
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	c, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	const failure = "Node readiness check failed: exit status 2: disk not mounted"
	var nodeID string
	pollUntil(t, "an initializing node with the failure", 15*time.Second, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != "initializing" {
			return false
		}
		nodeID = nodes[0].ID
		n, _, err := c.Nodes().Info(nodeID, nil)
		if err != nil {
			return false
		}
		for _, e := range n.Events {
			if e.Message == failure && e.Subsystem == "Readiness" {
				return n.Status == "initializing" && n.StatusDescription == "exit status 2: disk not mounted"
			}
		}
		return false
	})

	job := &nomad.Job{ID: new("gated"), Name: new("gated"), Type: new("batch"), Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: new("g"), Count: new(1),
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo ran"}}}}}}}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := waitEval(t, c, resp.EvalID)
	if ev.BlockedEval == "" {
		t.Fatalf("evaluation %+v: want a blocked evaluation (no ready node)", ev)
	}
	if allocs, _, err := c.Jobs().Allocations("gated", true, nil); err != nil || len(allocs) != 0 {
		t.Fatalf("allocations on an initializing node: %d, %v", len(allocs), err)
	}

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the node ready and the job complete", 20*time.Second, func() bool {
		n, _, err := c.Nodes().Info(nodeID, nil)
		if err != nil || n.Status != "ready" {
			return false
		}
		allocs, _, err := c.Jobs().Allocations("gated", true, nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete" && allocs[0].NodeID == nodeID
	})
	n, _, err := c.Nodes().Info(nodeID, nil)
	if err != nil || n.StatusDescription != "" {
		t.Fatalf("ready node's status description %q, %v", n.StatusDescription, err)
	}
}

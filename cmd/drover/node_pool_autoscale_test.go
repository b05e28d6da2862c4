package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodePoolAutoscalerCommands: apply an autoscaler from HCL, read it
// back with its events (the provider is not configured on this agent:
// an error event says so), list the pool's instances, refuse invalid
// specifications by field and an unknown instance, delete it.
func TestNodePoolAutoscalerCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr := startCLIAgent(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := cli(addr, args...)
		if code != want {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out + errOut
	}
	run(0, "node", "pool", "apply", write("pool.hcl", `node_pool "burst" {}`))
	spec := write("asg.hcl", `autoscaler "burst" {
  provider = "local"
  max = 3
  idle_timeout = "30s"
  max_creates_per_interval = 2
  instance_type "small" {
    cpu = 1000
    memory = 1024
    price_per_hour = 0.1
  }
}
`)
	if out := run(0, "node", "pool", "autoscaler", "apply", spec); !strings.Contains(out, `Successfully applied the autoscaler of node pool "burst"!`) {
		t.Fatalf("apply: %s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out = run(0, "node", "pool", "autoscaler", "status", "burst")
		if strings.Contains(out, `provider "local" is not configured on the leader`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"Provider = local", "Min / Max = 0 / 3", "Idle Timeout = 30s",
		"Create Throttle = 2 per 1m0s", "small 1000 1024 0.1", "Instances = booting 0", `provider "local" is not configured on the leader`} {
		if !strings.Contains(flat, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}
	if out := run(0, "node", "pool", "instances", "burst"); !strings.Contains(out, "No instances") {
		t.Fatalf("instances: %s", out)
	}
	if out := run(1, "node", "pool", "instance", "hold", "nope"); !strings.Contains(out, `no instance with ID prefix "nope"`) {
		t.Fatalf("hold of an unknown instance: %s", out)
	}
	bad := write("bad.hcl", `autoscaler "burst" {
  provider = "local"
  max = 0
  instance_type "small" {
    cpu = 0
    memory = 1024
  }
}
`)
	if out := run(1, "node", "pool", "autoscaler", "apply", bad); !strings.Contains(out, "InstanceTypes[0].CPU") || !strings.Contains(out, "Max") {
		t.Fatalf("invalid autoscaler: %s", out)
	}
	if out := run(1, "node", "pool", "delete", "burst"); !strings.Contains(out, "autoscaler") {
		t.Fatalf("delete of an autoscaled pool: %s", out)
	}
	run(0, "node", "pool", "autoscaler", "delete", "burst")
	if out := run(0, "node", "pool", "autoscaler", "status", "burst"); !strings.Contains(out, "No autoscaler configured") {
		t.Fatalf("status after delete: %s", out)
	}
	run(0, "node", "pool", "delete", "burst")
}

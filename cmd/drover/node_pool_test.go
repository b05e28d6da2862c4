package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodePoolCommands runs node pool apply, list, info, nodes, jobs and
// delete against a dev agent.
func TestNodePoolCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr := startCLIAgent(t)
	spec := filepath.Join(t.TempDir(), "pool.hcl")
	if err := os.WriteFile(spec, []byte(`node_pool "gpu" {
  description = "GPU nodes"
  meta {
    team = "ml"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := cli(addr, args...)
		if code != want {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out + errOut
	}
	if out := run(0, "node", "pool", "apply", spec); !strings.Contains(out, `Successfully applied node pool "gpu"!`) {
		t.Fatalf("apply: %s", out)
	}
	out := run(0, "node", "pool", "list")
	for _, want := range []string{"all ", "default ", "gpu ", "GPU nodes"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	out = run(0, "node", "pool", "info", "gpu")
	if !strings.Contains(out, "Description = GPU nodes") || !strings.Contains(out, "team = ml") {
		t.Fatalf("info:\n%s", out)
	}
	if out = run(0, "node", "pool", "nodes", "default"); !strings.Contains(out, "default") || !strings.Contains(out, "ready") {
		t.Fatalf("nodes:\n%s", out)
	}
	if out = run(0, "node", "pool", "nodes", "gpu"); !strings.Contains(out, "No nodes") {
		t.Fatalf("gpu nodes:\n%s", out)
	}
	if out = run(0, "node", "pool", "jobs", "gpu"); !strings.Contains(out, "No jobs") {
		t.Fatalf("gpu jobs:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(bad, []byte("node_pool \"x\" {\n  scheduler_config {\n    scheduler_algorithm = \"spread\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out = run(1, "node", "pool", "apply", bad); !strings.Contains(out, "Drover does not support a scheduler configuration per node pool") {
		t.Fatalf("apply with scheduler_config:\n%s", out)
	}
	if out = run(0, "node", "pool", "delete", "gpu"); !strings.Contains(out, `Successfully deleted node pool "gpu"!`) {
		t.Fatalf("delete: %s", out)
	}
	run(1, "node", "pool", "info", "gpu")
}

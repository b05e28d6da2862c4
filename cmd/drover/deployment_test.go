package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deployHCL is a service job of two raw_exec tasks with an update block
// (one canary, promoted by hand unless autoPromote); task is the shell
// script each runs.
func deployHCL(script string, autoPromote bool) string {
	return fmt.Sprintf(`job "cli-deploy" {
  datacenters = ["dc1"]
  group "web" {
    count = 2
    update {
      max_parallel     = 1
      canary           = 1
      min_healthy_time = "1s"
      healthy_deadline = "30s"
      auto_promote     = %v
      auto_revert      = true
      health_check     = "task_states"
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver       = "raw_exec"
      kill_timeout = "1s"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 20
        memory = 20
      }
    }
  }
}
`, autoPromote, script)
}

// TestCLIDeployments: job run follows a job's deployment to its end (exit
// 0 when it succeeds, 1 when it fails); deployment list and status show
// it; a manual canary waits for deployment promote.
func TestCLIDeployments(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
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

	code, out, errOut := cli(addr, "job", "run", write("v0.hcl", deployHCL("sleep 600", true)))
	if code != 0 || !strings.Contains(out, `==> Monitoring deployment "`) || !strings.Contains(out, "Deployment completed successfully") {
		t.Fatalf("job run v0: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(addr, "deployment", "list")
	if code != 0 || !strings.Contains(out, "cli-deploy") || !strings.Contains(out, "successful") {
		t.Fatalf("deployment list: %d\n%s", code, out)
	}

	// A change whose task exits at once fails and reverts: exit 1.
	code, out, errOut = cli(addr, "job", "run", write("bad.hcl", deployHCL("exit 3", true)))
	if code != 1 || !strings.Contains(out, "failed") || !strings.Contains(out, "rolling back to job version 0") {
		t.Fatalf("job run bad: exit %d\n%s%s", code, out, errOut)
	}

	// A manual canary: job run is detached; promote by hand.
	code, out, errOut = cli(addr, "job", "run", "-detach", write("v2.hcl", deployHCL("echo v2; sleep 600", false)))
	if code != 0 {
		t.Fatalf("job run -detach: %d\n%s%s", code, out, errOut)
	}
	var id string
	waitFor(t, "a canary awaiting promotion", 60*time.Second, func() bool {
		_, out, _ := cli(addr, "deployment", "list", "-verbose")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "requires manual promotion") {
				id = strings.Fields(line)[0]
			}
		}
		if id == "" {
			return false
		}
		_, out, _ = cli(addr, "deployment", "status", id[:8])
		return strings.Contains(out, "Promoted") && strings.Contains(out, "web") && healthyCanary(out)
	})
	code, out, errOut = cli(addr, "deployment", "promote", id[:8])
	if code != 0 {
		t.Fatalf("deployment promote: %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "the promoted deployment to succeed", 60*time.Second, func() bool {
		_, out, _ := cli(addr, "deployment", "status", id[:8])
		return strings.Contains(out, "Status      = successful")
	})
}

// healthyCanary reports whether a deployment status table shows one
// healthy allocation (the canary).
func healthyCanary(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		// Task Group, Auto Revert, Promoted, Desired, Canaries, Placed, Healthy, ...
		if len(f) >= 8 && f[0] == "web" && f[6] == "1" {
			return true
		}
	}
	return false
}

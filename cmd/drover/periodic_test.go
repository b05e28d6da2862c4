package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const periodicJobFile = `
job "tick" {
  type = "batch"
  periodic {
    crons            = ["@yearly"]
    prohibit_overlap = true
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = ["tick"]
      }
    }
  }
}
`

// TestCLIPeriodicJob: job run registers a periodic job without running it
// and says when it will; job periodic force launches a child that runs a
// real process; job status shows the next launch and the child, as
// Nomad's CLI does.
func TestCLIPeriodicJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)
	file := filepath.Join(t.TempDir(), "tick.nomad.hcl")
	if err := os.WriteFile(file, []byte(periodicJobFile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(addr, "job", "run", file)
	if code != 0 || !strings.Contains(out, "Job registration successful") || !strings.Contains(out, "Approximate next launch time: ") {
		t.Fatalf("job run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(addr, "job", "status", "tick")
	for _, want := range []string{"Periodic             = true", "Next Periodic Launch = ", "from now)", "No instances of periodic job found"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("job status lacks %q: %d\n%s%s", want, code, out, errOut)
		}
	}

	code, out, errOut = cli(addr, "job", "periodic", "force", "tick")
	if code != 0 || !strings.Contains(out, `Evaluation triggered by job "tick/periodic-`) {
		t.Fatalf("job periodic force: %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "the child to finish", 30*time.Second, func() bool {
		_, out, _ := cli(addr, "job", "status", "tick")
		return strings.Contains(out, "Previously Launched Jobs") && strings.Contains(out, "tick/periodic-") &&
			strings.Contains(out, " dead")
	})
	code, out, _ = cli(addr, "job", "status", "tick")
	if code != 0 || !strings.Contains(out, "Children Job Summary") || !strings.Contains(out, "Pending  Running  Dead\n0        0        1") {
		t.Fatalf("job status children: %d\n%s", code, out)
	}

	code, _, errOut = cli(addr, "job", "periodic", "force", "tick/periodic-")
	if code == 0 || !strings.Contains(errOut, "is not periodic") {
		t.Fatalf("force of a child: %d %s", code, errOut)
	}
}

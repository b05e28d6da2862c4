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
	code, out, errOut := cli(addr, "job", "plan", file)
	// Exit 0: registering it places nothing now.
	if code != 0 || !strings.Contains(out, "- If submitted now, next periodic launch would be at ") {
		t.Fatalf("job plan: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(addr, "job", "run", file)
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

	// A prefix resolves among periodic jobs only: the children do not
	// make "ti" ambiguous, and a child is not a periodic job. (Children
	// are named by the second: force the next one in another.)
	time.Sleep(time.Second)
	code, out, errOut = cli(addr, "job", "periodic", "force", "-detach", "ti")
	if code != 0 || !strings.Contains(out, "Force periodic successful\nEvaluation ID: ") {
		t.Fatalf("force by prefix: %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = cli(addr, "job", "periodic", "force", "tick/periodic-")
	if code == 0 || !strings.Contains(errOut, `No periodic job(s) with prefix or id "tick/periodic-" found`) {
		t.Fatalf("force of a child: %d %s", code, errOut)
	}
}

const parameterizedJobFile = `
job "render" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["customer"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"for $NOMAD_META_customer (parent $NOMAD_JOB_PARENT_ID): $(cat local/input/payload.txt)\""]
      }
      dispatch_payload {
        file = "input/payload.txt"
      }
    }
  }
}
`

// TestCLIDispatch: job dispatch runs a parameterized job with a payload
// file and meta; the raw_exec task reads the payload from local/ (written
// by the client before it starts); job status lists the dispatched job.
func TestCLIDispatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "render.nomad.hcl")
	payload := filepath.Join(dir, "payload.txt")
	if err := os.WriteFile(file, []byte(parameterizedJobFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payload, []byte("the payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli(addr, "job", "run", file); code != 0 || !strings.Contains(out, "Job registration successful") {
		t.Fatalf("job run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(addr, "job", "status", "render")
	if code != 0 || !strings.Contains(out, "Parameterized = true") || !strings.Contains(out, "No dispatched instances of parameterized job found") {
		t.Fatalf("job status: %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = cli(addr, "job", "dispatch", "-meta", "customer=acme", "render", payload)
	if code != 0 || !strings.Contains(out, "Dispatched Job ID = render/dispatch-") || !strings.Contains(out, "Evaluation ID     = ") {
		t.Fatalf("job dispatch: %d\n%s%s", code, out, errOut)
	}
	childID := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "Dispatched Job ID = ", 2)[1], "\n", 2)[0])
	var allocID string
	waitFor(t, "the dispatched job to finish", 30*time.Second, func() bool {
		_, out, _ := cli(addr, "job", "status", "-json", childID)
		i := strings.Index(out, `"Allocations"`)
		j := strings.Index(out, `"ClientStatus": "complete"`)
		if i < 0 || j < 0 {
			return false
		}
		k := strings.Index(out[i:], `"ID": "`)
		allocID = out[i+k+7 : i+k+7+36]
		return true
	})
	code, out, errOut = cli(addr, "alloc", "logs", allocID, "t")
	if code != 0 || !strings.Contains(out, "for acme (parent render): the payload") {
		t.Fatalf("alloc logs: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(addr, "job", "status", "render")
	if code != 0 || !strings.Contains(out, "Dispatched Jobs") || !strings.Contains(out, childID) {
		t.Fatalf("job status lists no dispatched job:\n%s", out)
	}

	// Missing required meta: Nomad's error, exit 1.
	code, _, errOut = cli(addr, "job", "dispatch", "-detach", "render", payload)
	if code != 1 || !strings.Contains(errOut, "dispatch did not provide required meta keys: customer") {
		t.Fatalf("dispatch without meta: %d %s", code, errOut)
	}
}

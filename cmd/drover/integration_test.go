package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent"
	"github.com/drover-project/drover/structs"
)

// startCLIAgent runs `drover agent -dev` in-process (server and client)
// and returns its HTTP address once a leader is elected and the client's
// node is ready. The agent is stopped with a signal when the test ends.
func startCLIAgent(t *testing.T) string {
	t.Helper()
	addr := runDevAgent(t, "cli2")
	waitFor(t, "a ready node", 30*time.Second, func() bool {
		code, out, _ := cli(addr, "node", "status")
		return code == 0 && strings.Contains(out, "ready")
	})
	return addr
}

// runDevAgent runs `drover agent -dev` in-process with the node name and
// any extra flags, and returns its HTTP address once it has started (not
// waiting for a leader or a node). It is stopped with a signal when the
// test ends.
func runDevAgent(t *testing.T, node string, extra ...string) string {
	t.Helper()
	e, _, errOut := testEnv(nil)
	sig := make(chan os.Signal, 2)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	started := make(chan *agent.Agent, 1)
	e.agentStarted = func(a *agent.Agent) { started <- a }
	done := make(chan int, 1)
	args := append([]string{"agent", "-dev"}, extra...)
	args = append(args, "-http-port", "0", "-rpc-port", "0", "-log-level", "error", "-node", node)
	go func() { done <- run(args, e) }()
	var a *agent.Agent
	select {
	case a = <-started:
	case code := <-done:
		t.Fatalf("agent exited with %d: %s", code, errOut)
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not start")
	}
	t.Cleanup(func() {
		sig <- syscall.SIGINT
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop")
		}
	})
	return a.HTTPURL()
}

// cli runs one command against the agent at addr.
func cli(addr string, args ...string) (int, string, string) {
	e, out, errOut := testEnv(map[string]string{"DROVER_ADDR": addr})
	e.now = time.Now
	code := run(args, e)
	return code, out.String(), errOut.String()
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCLIAgainstDevAgent runs the examples through the CLI on a real dev
// agent (server and raw_exec client in one process).
func TestCLIAgainstDevAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)

	// A batch job runs to completion.
	code, out, errOut := cli(addr, "job", "run", "../../examples/batch.nomad.hcl")
	if code != 0 {
		t.Fatalf("job run batch: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`==> Monitoring evaluation "`, `Evaluation triggered by job "hello"`,
		`Allocation "`, `created: node "`, `group "hello"`, `finished with status "complete"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("job run output lacks %q:\n%s", want, out)
		}
	}
	waitFor(t, "the batch job to finish", 30*time.Second, func() bool {
		_, out, _ := cli(addr, "job", "status", "hello")
		return strings.Contains(out, "Status        = dead") && strings.Contains(out, "complete")
	})
	code, out, _ = cli(addr, "job", "status", "-json", "hello")
	var status struct {
		Allocations []*structs.AllocListStub
	}
	if code != 0 || json.Unmarshal([]byte(out), &status) != nil || len(status.Allocations) != 1 {
		t.Fatalf("job status -json: %d %s", code, out)
	}
	allocID := status.Allocations[0].ID
	code, out, errOut = cli(addr, "alloc", "status", allocID[:6])
	if code != 0 || !strings.Contains(out, "Client Status       = complete") || !strings.Contains(out, `Task "hello" is "dead"`) {
		t.Fatalf("alloc status: %d\n%s%s", code, out, errOut)
	}

	// The agent serves its own client's logs and names its node.
	code, out, errOut = cli(addr, "alloc", "logs", allocID[:8], "hello")
	if code != 0 || !strings.Contains(out, "hello from drover") {
		t.Fatalf("alloc logs: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(addr, "node", "status", "-self")
	if code != 0 || !strings.Contains(out, "cli2") {
		t.Fatalf("node status -self: %d\n%s%s", code, out, errOut)
	}

	// A job no node can take: exit 2 and the reason.
	dir := t.TempDir()
	win := filepath.Join(dir, "win.nomad.hcl")
	if err := os.WriteFile(win, []byte(`job "win" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "windows"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(addr, "job", "run", win)
	if code != 2 || !strings.Contains(out, `Constraint "${attr.kernel.name} = windows": 1 nodes excluded by filter`) ||
		!strings.Contains(out, "waiting for additional capacity") {
		t.Fatalf("unplaceable job: exit %d\n%s%s", code, out, errOut)
	}

	// A service: plan says what would change, and exits 1 when it would.
	code, out, errOut = cli(addr, "job", "plan", "-var", "count=1", "../../examples/service.nomad.hcl")
	if code != 1 || !strings.Contains(out, `+ Task Group: "ticker" (1 create)`) {
		t.Fatalf("plan of a new job: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = cli(addr, "job", "run", "-var", "count=1", "../../examples/service.nomad.hcl"); code != 0 {
		t.Fatalf("job run service: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(addr, "job", "plan", "-var", "count=1", "../../examples/service.nomad.hcl")
	if code != 0 || !strings.Contains(out, "- All tasks successfully allocated.") {
		t.Fatalf("plan of an unchanged job: exit %d\n%s%s", code, out, errOut)
	}

	for _, args := range [][]string{{"eval", "list"}, {"node", "status"}, {"job", "status"}} {
		if code, out, errOut := cli(addr, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code, out, _ := cli(addr, "server", "members"); code != 0 || !strings.Contains(out, "cli2.global") {
		t.Fatalf("server members: %d\n%s", code, out)
	}
	if code, out, errOut := cli(addr, "job", "stop", "ticker"); code != 0 || !strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job stop: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli(addr, "job", "stop", "-purge", "-detach", "hello"); code != 0 {
		t.Fatalf("job stop -purge: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCLIReportsTaskStartFailure: a task whose command cannot start is
// visible at every step: job run prints the task's Driver Failure while it
// follows the allocation (exit 0 for a batch job, as Nomad's job run; 1
// for a service job, as Nomad's failed deployment), job status lists the
// failure under the allocations, and alloc status shows the events.
func TestCLIReportsTaskStartFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)
	dir := t.TempDir()
	const spec = `job %q {
  type = %q
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/nonexistent/drover-cli-test" }
    }
  }
}
`
	const reason = "fork/exec /nonexistent/drover-cli-test: no such file or directory"
	for _, tc := range []struct {
		job, typ string
		code     int
		want     []string
	}{
		{"nostart", "batch", exitOK, []string{`task "t": Driver Failure: `, "could not start a task; see drover alloc status "}},
		{"nostartsvc", "service", exitError, []string{`task "t": Driver Failure: `, `task "t": Not Restarting: `,
			`status "failed"`, "1 of 1 allocation failed; see drover alloc status "}},
	} {
		path := filepath.Join(dir, tc.job+".nomad.hcl")
		if err := os.WriteFile(path, fmt.Appendf(nil, spec, tc.job, tc.typ), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := cli(addr, "job", "run", path)
		if code != tc.code || !strings.Contains(out, reason) {
			t.Fatalf("job run %s: exit %d, want %d\n%s%s", tc.job, code, tc.code, out, errOut)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Fatalf("job run %s output lacks %q:\n%s", tc.job, want, out)
			}
		}
	}

	waitFor(t, "the batch allocation to fail", 20*time.Second, func() bool {
		_, out, _ := cli(addr, "job", "status", "nostart")
		return strings.Contains(out, "failed")
	})
	code, out, errOut := cli(addr, "job", "status", "nostart")
	if code != 0 || !strings.Contains(out, "Task Failures") || !strings.Contains(out, "Driver Failure") ||
		!strings.Contains(out, reason) {
		t.Fatalf("job status: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(addr, "job", "status", "-json", "nostart")
	var status struct {
		Allocations []*structs.AllocListStub
	}
	if code != 0 || json.Unmarshal([]byte(out), &status) != nil || len(status.Allocations) == 0 {
		t.Fatalf("job status -json: %d %s", code, out)
	}
	code, out, errOut = cli(addr, "alloc", "status", status.Allocations[0].ID[:8])
	if code != 0 || !strings.Contains(out, "Client Status       = failed") || !strings.Contains(out, "Recent Events:") ||
		!strings.Contains(out, "Driver Failure") || !strings.Contains(out, reason) {
		t.Fatalf("alloc status: exit %d\n%s%s", code, out, errOut)
	}
}

// The job `drover job init` writes places in full on a single-node dev
// agent, the one `make run` starts.
func TestJobInitPlacesOnDevAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)
	file := filepath.Join(t.TempDir(), "example.nomad.hcl")
	if code, out, errOut := cli(addr, "job", "init", file); code != 0 || !strings.Contains(out, file) {
		t.Fatalf("job init: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(addr, "job", "run", file)
	if code != 0 || !strings.Contains(out, `Allocation "`) || strings.Contains(out, "could not be placed") {
		t.Fatalf("job run of the example: exit %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "the example's allocation to run", 30*time.Second, func() bool {
		_, out, _ := cli(addr, "job", "status", "example")
		return strings.Contains(out, "running")
	})
	if code, out, errOut := cli(addr, "job", "stop", "-purge", "example"); code != 0 {
		t.Fatalf("job stop: exit %d\n%s%s", code, out, errOut)
	}
}

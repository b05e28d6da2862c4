package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

type taskStateStub struct {
	State    string
	Failed   bool
	Restarts uint64
	Events   []struct {
		Type     string
		ExitCode int
		Message  string
	}
}

// TestRawExecTasksSurviveClientSIGKILL drives real processes: a client
// running a batch job's two raw_exec tasks is killed with SIGKILL (its
// whole process group), one task exits 0 while no client runs, the client
// starts again on the same data directory, and the other task exits 0
// after the re-attach. Both are reported with exit code 0, never
// restarted, and the allocation completes.
func TestRawExecTasksSurviveClientSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	gates := filepath.Join(base, "gates")
	if err := os.MkdirAll(gates, 0o755); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, let the tasks end: the client's death does not
	// stop them, by design.
	t.Cleanup(func() {
		for _, name := range []string{"early", "late"} {
			os.WriteFile(filepath.Join(gates, name+".release"), nil, 0o644)
		}
	})
	ports := freePorts(t, 3)
	srvHTTP, srvRPC := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	cliConf := filepath.Join(base, "client.hcl")
	if err := os.WriteFile(cliConf, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newAgent := func(name string, args ...string) *agent {
		logf, err := os.Create(filepath.Join(base, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		a := &agent{name: name, log: logf, args: append([]string{"agent", "-node", name, "-bind", "127.0.0.1",
			"-data-dir", filepath.Join(base, name)}, args...)}
		a.start(t)
		return a
	}
	srv := newAgent("srv", "-server", "-bootstrap-expect", "1",
		"-http-port", fmt.Sprint(ports[0]), "-rpc-port", fmt.Sprint(ports[1]))
	cli := newAgent("c1", "-client", "-servers", srvRPC, "-config", cliConf, "-http-port", fmt.Sprint(ports[2]))
	t.Cleanup(func() {
		for _, a := range []*agent{cli, srv} {
			a.kill()
			a.log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(a.log.Name())
				t.Logf("--- %s log (tail) ---\n%s", a.name, tail(string(b), 30))
			}
		}
	})
	waitUntil(t, 30*time.Second, "a ready client node", func() bool {
		var nodes []struct{ Status string }
		_, err := getJSON(srvHTTP, "/v1/nodes", &nodes)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})

	// Each task records its PID, waits for its release file and exits 0
	// (1 if never released). Two restarts are allowed: a success taken
	// for a failure would run the task again.
	task := func(name string) string {
		gate := filepath.Join(gates, name)
		script := fmt.Sprintf(`echo $$ > %[1]s.pid; i=0; while [ ! -e %[1]s.release ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; [ -e %[1]s.release ]`, gate)
		return fmt.Sprintf(`{"Name":%q,"Driver":"raw_exec","Config":{"command":"/bin/sh","args":["-c",%q]},"Resources":{"CPU":10,"MemoryMB":10}}`, name, script)
	}
	job := `{"Job":{"ID":"rx","Type":"batch","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
		`"RestartPolicy":{"Attempts":2,"Interval":60000000000,"Delay":100000000,"Mode":"fail"},` +
		`"Tasks":[` + task("early") + `,` + task("late") + `]}]}}`
	if err := postJSON(srvHTTP, "/v1/jobs", job); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitUntil(t, 30*time.Second, "the allocation running", func() bool {
		var allocs []allocStub
		if _, err := getJSON(srvHTTP, "/v1/job/rx/allocations", &allocs); err != nil || len(allocs) != 1 {
			return false
		}
		allocID = allocs[0].ID
		return allocs[0].ClientStatus == "running"
	})
	pids := map[string]int{}
	waitUntil(t, 10*time.Second, "both tasks' PIDs", func() bool {
		for _, name := range []string{"early", "late"} {
			b, err := os.ReadFile(filepath.Join(gates, name+".pid"))
			pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || perr != nil {
				return false
			}
			pids[name] = pid
		}
		return true
	})

	// SIGKILL the client and everything in its process group.
	if err := syscall.Kill(-cli.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cli.cmd.Wait()
	cli.cmd = nil
	for name, pid := range pids {
		if !processAlive(pid) {
			t.Fatalf("task %s (pid %d) died with its client", name, pid)
		}
	}
	if err := os.WriteFile(filepath.Join(gates, "early.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the early task's exit while the client is down", func() bool {
		return !processAlive(pids["early"])
	})

	cli.start(t)
	waitUntil(t, 30*time.Second, "the restarted client re-attached", func() bool {
		var a struct{ TaskStates map[string]*taskStateStub }
		if _, err := getJSON(srvHTTP, "/v1/allocation/"+allocID, &a); err != nil {
			return false
		}
		early := a.TaskStates["early"]
		return early != nil && early.State == "dead"
	})
	if !processAlive(pids["late"]) {
		t.Fatal("the late task did not survive the client restart")
	}
	if err := os.WriteFile(filepath.Join(gates, "late.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var a struct {
		ClientStatus string
		TaskStates   map[string]*taskStateStub
	}
	waitUntil(t, 30*time.Second, "the allocation complete", func() bool {
		_, err := getJSON(srvHTTP, "/v1/allocation/"+allocID, &a)
		return err == nil && a.ClientStatus != "running" && a.ClientStatus != "pending"
	})
	if a.ClientStatus != "complete" {
		t.Errorf("allocation is %q, want complete", a.ClientStatus)
	}
	for _, name := range []string{"early", "late"} {
		ts := a.TaskStates[name]
		if ts == nil {
			t.Fatalf("no state for task %s", name)
		}
		var started, terminated int
		for _, ev := range ts.Events {
			switch ev.Type {
			case "Started":
				started++
			case "Terminated":
				terminated++
				if ev.ExitCode != 0 || ev.Message != "" {
					t.Errorf("task %s terminated with exit code %d %q", name, ev.ExitCode, ev.Message)
				}
			}
		}
		if ts.State != "dead" || ts.Failed || ts.Restarts != 0 || started != 1 || terminated != 1 {
			t.Errorf("task %s: state %s failed %v restarts %d, %d Started and %d Terminated events",
				name, ts.State, ts.Failed, ts.Restarts, started, terminated)
		}
	}
}

// processAlive reports whether pid names a process that has not exited.
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

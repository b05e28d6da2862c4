package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLifecycleOrderingOnCluster: a batch job with prestart, main and
// poststop raw_exec tasks, run by a real client: each task's process
// stamps the time into a file, and the stamps and the task events the
// servers hold agree on prestart -> main -> poststop.
func TestLifecycleOrderingOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	ports := freePorts(t, 3)
	srvHTTP, srvRPC := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	cliConf := filepath.Join(base, "client.hcl")
	if err := os.WriteFile(cliConf, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var agents []*agent
	newAgent := func(name string, args ...string) {
		logf, err := os.Create(filepath.Join(base, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		a := &agent{name: name, log: logf, args: append([]string{"agent", "-node", name, "-bind", "127.0.0.1",
			"-data-dir", filepath.Join(base, name)}, args...)}
		a.start(t)
		agents = append(agents, a)
	}
	t.Cleanup(func() {
		for _, a := range agents {
			a.kill()
			a.log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(a.log.Name())
				t.Logf("--- %s log (tail) ---\n%s", a.name, tail(string(b), 30))
			}
		}
	})
	newAgent("srv", "-server", "-bootstrap-expect", "1", "-http-port", fmt.Sprint(ports[0]), "-rpc-port", fmt.Sprint(ports[1]))
	newAgent("c1", "-client", "-servers", srvRPC, "-config", cliConf, "-http-port", fmt.Sprint(ports[2]))
	waitUntil(t, 30*time.Second, "a ready client", func() bool {
		var nodes []struct{ Status string }
		_, err := getJSON(srvHTTP, "/v1/nodes", &nodes)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})

	task := func(name, script, hook string) string {
		life := "null"
		if hook != "" {
			life = `{"Hook":"` + hook + `","Sidecar":false}`
		}
		return `{"Name":"` + name + `","Driver":"raw_exec","Lifecycle":` + life +
			`,"Config":{"command":"/bin/sh","args":["-c","` + script + `"]},"Resources":{"CPU":10,"MemoryMB":10}}`
	}
	stamp := func(name string) string { return "date +%s%N > " + filepath.Join(base, name) }
	job := `{"Job":{"ID":"life","Type":"batch","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[` +
		task("cleanup", stamp("poststop"), "poststop") + "," +
		task("main", stamp("main.start")+"; sleep 0.3; "+stamp("main.end"), "") + "," +
		task("init", "sleep 0.3; "+stamp("prestart"), "prestart") + `]}]}}`
	if err := postJSON(srvHTTP, "/v1/jobs", job); err != nil {
		t.Fatal(err)
	}
	type event struct {
		Type string
		Time int64
	}
	var alloc struct {
		ClientStatus string
		TaskStates   map[string]struct {
			State  string
			Failed bool
			Events []event
		}
	}
	waitUntil(t, 60*time.Second, "the allocation complete", func() bool {
		var allocs []allocStub
		if _, err := getJSON(srvHTTP, "/v1/job/life/allocations", &allocs); err != nil || len(allocs) != 1 {
			return false
		}
		_, err := getJSON(srvHTTP, "/v1/allocation/"+allocs[0].ID, &alloc)
		return err == nil && alloc.ClientStatus == "complete" && len(alloc.TaskStates) == 3 && alloc.TaskStates["cleanup"].State == "dead"
	})
	readStamp := func(name string) int64 {
		buf, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(buf)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if p, m := readStamp("prestart"), readStamp("main.start"); p > m {
		t.Errorf("prestart finished at %d, after main started at %d", p, m)
	}
	if m, s := readStamp("main.end"), readStamp("poststop"); m > s {
		t.Errorf("main ended at %d, after poststop ran at %d", m, s)
	}
	at := func(task, typ string) int64 {
		for _, e := range alloc.TaskStates[task].Events {
			if e.Type == typ {
				return e.Time
			}
		}
		t.Fatalf("task %s has no %s event: %+v", task, typ, alloc.TaskStates[task].Events)
		return 0
	}
	if at("init", "Terminated") > at("main", "Started") || at("main", "Terminated") > at("cleanup", "Started") {
		t.Errorf("events out of order: %+v", alloc.TaskStates)
	}
	for name, ts := range alloc.TaskStates {
		if ts.Failed {
			t.Errorf("task %s failed", name)
		}
	}
}

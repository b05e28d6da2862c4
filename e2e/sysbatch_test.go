package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSysBatchRunsOnceOnEveryNode: a sysbatch job with a real raw_exec
// task runs once on the one client there is, then once on a client that
// joins while the job is current; neither runs it again.
func TestSysBatchRunsOnceOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	ports := freePorts(t, 4)
	srvHTTP, srvRPC := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	cliConf := filepath.Join(base, "client.hcl")
	if err := os.WriteFile(cliConf, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var agents []*agent
	newAgent := func(name string, args ...string) *agent {
		logf, err := os.Create(filepath.Join(base, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		a := &agent{name: name, log: logf, args: append([]string{"agent", "-node", name, "-bind", "127.0.0.1",
			"-data-dir", filepath.Join(base, name)}, args...)}
		a.start(t)
		agents = append(agents, a)
		return a
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
	readyNodes := func(n int) func() bool {
		return func() bool {
			var nodes []struct{ Status string }
			if _, err := getJSON(srvHTTP, "/v1/nodes", &nodes); err != nil || len(nodes) != n {
				return false
			}
			for _, nd := range nodes {
				if nd.Status != "ready" {
					return false
				}
			}
			return true
		}
	}
	waitUntil(t, 30*time.Second, "one ready client", readyNodes(1))

	runs := filepath.Join(base, "runs")
	job := `{"Job":{"ID":"sb","Type":"sysbatch","Datacenters":["dc1"],"TaskGroups":[{"Name":"g",` +
		`"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/sh","args":["-c","echo $NOMAD_ALLOC_ID >> ` + runs + `"]},` +
		`"Resources":{"CPU":10,"MemoryMB":10}}]}]}}`
	if err := postJSON(srvHTTP, "/v1/jobs", job); err != nil {
		t.Fatal(err)
	}
	complete := func(n int) func() bool {
		return func() bool {
			var allocs []allocStub
			if _, err := getJSON(srvHTTP, "/v1/job/sb/allocations", &allocs); err != nil || len(allocs) != n {
				return false
			}
			nodes := map[string]bool{}
			for _, a := range allocs {
				if a.ClientStatus != "complete" {
					return false
				}
				nodes[a.NodeID] = true
			}
			return len(nodes) == n
		}
	}
	waitUntil(t, 30*time.Second, "the allocation on c1 complete", complete(1))

	newAgent("c2", "-client", "-servers", srvRPC, "-config", cliConf, "-http-port", fmt.Sprint(ports[3]))
	waitUntil(t, 30*time.Second, "two ready clients", readyNodes(2))
	waitUntil(t, 30*time.Second, "one complete allocation on each client", complete(2))

	time.Sleep(2 * time.Second) // nothing runs again
	if !complete(2)() {
		var allocs []allocStub
		getJSON(srvHTTP, "/v1/job/sb/allocations", &allocs)
		t.Fatalf("allocations changed: %+v", allocs)
	}
	buf, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Fields(string(buf)); len(lines) != 2 || lines[0] == lines[1] {
		t.Fatalf("runs %q, want one per allocation", lines)
	}
	var got struct{ Type string }
	if _, err := getJSON(srvHTTP, "/v1/job/sb", &got); err != nil || got.Type != "sysbatch" {
		t.Fatalf("job type %q, %v", got.Type, err)
	}
}

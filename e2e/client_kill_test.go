package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type allocStub struct {
	ID, NodeID, ClientStatus, DesiredStatus string
}

// TestClientSIGKILLReplacesAllocations drives real processes: one server
// and two clients. A client killed with SIGKILL stops heartbeating, its
// node is marked down after TTL + grace, its allocations become lost, and
// replacements run on the other client.
func TestClientSIGKILLReplacesAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	ports := freePorts(t, 4)
	srvHTTP, srvRPC := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	srvConf := filepath.Join(base, "server.hcl")
	if err := os.WriteFile(srvConf, []byte("server {\n  min_heartbeat_ttl = \"1s\"\n  heartbeat_grace = \"1s\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cliConf := filepath.Join(base, "client.hcl")
	if err := os.WriteFile(cliConf, []byte("plugin \"mock_driver\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o644); err != nil {
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
	agents := []*agent{newAgent("srv", "-server", "-bootstrap-expect", "1", "-config", srvConf,
		"-http-port", fmt.Sprint(ports[0]), "-rpc-port", fmt.Sprint(ports[1]))}
	agents[0].httpAddr = srvHTTP
	for i, name := range []string{"c1", "c2"} {
		agents = append(agents, newAgent(name, "-client", "-servers", srvRPC, "-config", cliConf,
			"-http-port", fmt.Sprint(ports[2+i])))
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

	var nodes []struct{ ID, Name, Status string }
	waitUntil(t, 30*time.Second, "two ready client nodes", func() bool {
		nodes = nil
		if _, err := getJSON(srvHTTP, "/v1/nodes", &nodes); err != nil || len(nodes) != 2 {
			return false
		}
		return nodes[0].Status == "ready" && nodes[1].Status == "ready"
	})
	job := `{"Job":{"ID":"svc","Type":"service","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":4,` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{"run_for":"10m"},"Resources":{"CPU":10,"MemoryMB":10}}]}]}}`
	if err := postJSON(srvHTTP, "/v1/jobs", job); err != nil {
		t.Fatal(err)
	}
	running := func() map[string][]allocStub { // node ID -> running allocations
		var allocs []allocStub
		out := map[string][]allocStub{}
		if _, err := getJSON(srvHTTP, "/v1/job/svc/allocations", &allocs); err != nil {
			return out
		}
		for _, a := range allocs {
			if a.ClientStatus == "running" && a.DesiredStatus == "run" {
				out[a.NodeID] = append(out[a.NodeID], a)
			}
		}
		return out
	}
	var before map[string][]allocStub
	waitUntil(t, 30*time.Second, "4 running allocations", func() bool {
		before = running()
		n := 0
		for _, as := range before {
			n += len(as)
		}
		return n == 4
	})

	// Kill the client holding the most allocations.
	victimNode, victim := "", (*agent)(nil)
	for id, as := range before {
		if victimNode == "" || len(as) > len(before[victimNode]) {
			victimNode = id
		}
	}
	for _, n := range nodes {
		if n.ID == victimNode {
			for _, a := range agents {
				if a.name == n.Name {
					victim = a
				}
			}
		}
	}
	if victim == nil {
		t.Fatalf("no agent for node %s", victimNode)
	}
	killedAt := time.Now()
	victim.kill()

	waitUntil(t, 30*time.Second, "the killed client's node down", func() bool {
		var n struct{ Status string }
		_, err := getJSON(srvHTTP, "/v1/node/"+victimNode, &n)
		return err == nil && n.Status == "down"
	})
	t.Logf("node down %s after SIGKILL", time.Since(killedAt).Round(time.Millisecond))
	waitUntil(t, 30*time.Second, "4 allocations running on the surviving client", func() bool {
		now := running()
		return len(now) == 1 && len(now[victimNode]) == 0 && len(firstValue(now)) == 4
	})
	var allocs []allocStub
	if _, err := getJSON(srvHTTP, "/v1/job/svc/allocations", &allocs); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, a := range allocs {
		if a.NodeID == victimNode {
			if a.ClientStatus != "lost" {
				t.Errorf("allocation %s on the dead node is %q, want lost", a.ID, a.ClientStatus)
			}
			lost++
		}
	}
	if lost != len(before[victimNode]) {
		t.Fatalf("%d allocations lost, want %d", lost, len(before[victimNode]))
	}
}

func firstValue(m map[string][]allocStub) []allocStub {
	for _, v := range m {
		return v
	}
	return nil
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func postJSON(addr, path, body string) error {
	resp, err := httpClient.Post("http://"+addr+path, "application/json", stringsReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d", path, resp.StatusCode)
	}
	return nil
}

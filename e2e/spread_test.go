package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpreadOverDatacentersRealProcesses: one server and three clients in
// dc1, dc2 and dc3, real raw_exec tasks. A job file with a spread over
// ${node.datacenter} and count 6, run with `drover job run`, places two
// allocations in each datacenter, and `drover alloc status -verbose`
// lists the allocation-spread score. The spread replaced by an affinity
// for dc3 (a destructive change) moves the new allocations to dc3.
func TestSpreadOverDatacentersRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	ports := freePorts(t, 5)
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
	for i := 1; i <= 3; i++ {
		newAgent(fmt.Sprintf("c%d", i), "-client", "-dc", fmt.Sprintf("dc%d", i), "-servers", srvRPC,
			"-config", cliConf, "-http-port", fmt.Sprint(ports[1+i]))
	}
	var nodes []struct{ ID, Datacenter, Status string }
	waitUntil(t, 30*time.Second, "three ready clients", func() bool {
		if _, err := getJSON(srvHTTP, "/v1/nodes", &nodes); err != nil || len(nodes) != 3 {
			return false
		}
		for _, n := range nodes {
			if n.Status != "ready" {
				return false
			}
		}
		return true
	})
	dcOf := map[string]string{}
	for _, n := range nodes {
		dcOf[n.ID] = n.Datacenter
	}

	jobFile := filepath.Join(base, "spread.nomad.hcl")
	writeJob := func(extra string) {
		src := `job "spread" {
  datacenters = ["dc1", "dc2", "dc3"]
  group "g" {
    count = 6
` + extra + `
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`
		if err := os.WriteFile(jobFile, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(droverBin, args...)
		cmd.Env = append(os.Environ(), "DROVER_ADDR=http://"+srvHTTP, "NOMAD_ADDR=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("drover %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	running := func(version int) map[string]int {
		var allocs []struct {
			ID, NodeID, ClientStatus, DesiredStatus string
			JobVersion                              int
		}
		if _, err := getJSON(srvHTTP, "/v1/job/spread/allocations", &allocs); err != nil {
			return nil
		}
		byDC := map[string]int{}
		for _, a := range allocs {
			if a.DesiredStatus == "run" && a.ClientStatus == "running" && a.JobVersion == version {
				byDC[dcOf[a.NodeID]]++
			}
		}
		return byDC
	}
	writeJob(`    spread {
      attribute = "${node.datacenter}"
      weight    = 100
    }`)
	cli("job", "run", "-detach", jobFile)
	var byDC map[string]int
	waitUntil(t, 60*time.Second, "six running allocations", func() bool {
		byDC = running(0)
		return byDC["dc1"]+byDC["dc2"]+byDC["dc3"] == 6
	})
	if byDC["dc1"] != 2 || byDC["dc2"] != 2 || byDC["dc3"] != 2 {
		t.Fatalf("placed %v, want 2 per datacenter", byDC)
	}
	var allocs []struct{ ID string }
	if _, err := getJSON(srvHTTP, "/v1/job/spread/allocations", &allocs); err != nil || len(allocs) == 0 {
		t.Fatalf("allocations: %v", err)
	}
	out := cli("alloc", "status", "-verbose", allocs[0].ID)
	for _, want := range []string{"Placement Metrics", "allocation-spread", "binpack", "final score"} {
		if !strings.Contains(out, want) {
			t.Fatalf("alloc status -verbose lacks %q:\n%s", want, out)
		}
	}

	// The spread replaced by an affinity for dc3 (a destructive change):
	// the replacements gather in dc3.
	writeJob(`    affinity {
      attribute = "${node.datacenter}"
      value     = "dc3"
      weight    = 100
    }`)
	cli("job", "run", "-detach", jobFile)
	waitUntil(t, 60*time.Second, "six running allocations of version 1", func() bool {
		byDC = running(1)
		return byDC["dc1"]+byDC["dc2"]+byDC["dc3"] == 6
	})
	if byDC["dc3"] < 4 {
		t.Fatalf("with the affinity for dc3: %v", byDC)
	}
	t.Logf("version 0: 2/2/2; version 1 with the dc3 affinity: %v", byDC)
}

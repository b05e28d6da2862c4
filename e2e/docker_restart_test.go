package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver/docker/dockertest"
)

// TestDockerTasksSurviveClientSIGKILL drives real processes and real
// containers: a client running a batch job's two docker tasks is killed
// with SIGKILL (its whole process group); the containers keep running,
// one exits 0 while no client runs, the client starts again on the same
// data directory and re-attaches, and the other exits 3 after that. Each
// is reported with its real exit code, neither is started twice, and no
// container is left.
func TestDockerTasksSurviveClientSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dc, img := dockertest.Image(t)
	base := t.TempDir()
	ports := freePorts(t, 3)
	srvHTTP, srvRPC := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
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
	cli := newAgent("c1", "-client", "-servers", srvRPC, "-http-port", fmt.Sprint(ports[2]))
	var allocID string
	containers := func() int {
		if allocID == "" {
			return 0
		}
		list, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", "com.hashicorp.nomad.alloc_id="+allocID)})
		if err != nil {
			return -1
		}
		return len(list.Items)
	}
	release := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(base, "c1", "alloc", allocID, "alloc", name+".release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, a := range []*agent{cli, srv} {
			a.kill()
			a.log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(a.log.Name())
				t.Logf("--- %s log (tail) ---\n%s", a.name, tail(string(b), 30))
			}
		}
		if allocID != "" { // the client's death does not stop containers, by design
			list, _ := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true,
				Filters: client.Filters{}.Add("label", "com.hashicorp.nomad.alloc_id="+allocID)})
			for _, c := range list.Items {
				_, _ = dc.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
			}
		}
	})
	waitUntil(t, 30*time.Second, "a ready client node with docker", func() bool {
		var nodes []struct {
			Status  string
			Drivers map[string]struct{ Healthy bool }
		}
		_, err := getJSON(srvHTTP, "/v1/nodes", &nodes)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready" && nodes[0].Drivers["docker"].Healthy
	})

	// Each task waits for its release file in the shared alloc dir, then
	// exits with its code.
	task := func(name string, code int) string {
		script := fmt.Sprintf(`while [ ! -e /alloc/%[1]s.release ]; do sleep 0.05; done; exit %[2]d`, name, code)
		return fmt.Sprintf(`{"Name":%q,"Driver":"docker","Config":{"image":%q,"command":"/bin/sh","args":["-c",%q]},"Resources":{"CPU":10,"MemoryMB":16}}`,
			name, img, script)
	}
	job := `{"Job":{"ID":"dk","Type":"batch","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
		`"RestartPolicy":{"Attempts":0,"Interval":60000000000,"Delay":100000000,"Mode":"fail"},` +
		`"Tasks":[` + task("early", 0) + `,` + task("late", 3) + `]}]}}`
	if err := postJSON(srvHTTP, "/v1/jobs", job); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the allocation running", func() bool {
		var allocs []allocStub
		if _, err := getJSON(srvHTTP, "/v1/job/dk/allocations", &allocs); err != nil || len(allocs) != 1 {
			return false
		}
		allocID = allocs[0].ID
		return allocs[0].ClientStatus == "running"
	})
	if n := containers(); n != 2 {
		t.Fatalf("%d containers running, want 2", n)
	}

	if err := syscall.Kill(-cli.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cli.cmd.Wait()
	cli.cmd = nil
	if n := containers(); n != 2 {
		t.Fatalf("%d containers after the client's death, want 2", n)
	}
	release("early")
	waitUntil(t, 10*time.Second, "the early container's exit while the client is down", func() bool {
		ins, err := dc.ContainerInspect(context.Background(), "early-"+allocID, client.ContainerInspectOptions{})
		return err == nil && ins.Container.State != nil && !ins.Container.State.Running
	})

	cli.start(t)
	var states map[string]*taskStateStub
	getStates := func() bool {
		var a struct {
			ClientStatus string
			TaskStates   map[string]*taskStateStub
		}
		if _, err := getJSON(srvHTTP, "/v1/allocation/"+allocID, &a); err != nil {
			return false
		}
		states = a.TaskStates
		return a.ClientStatus == "failed"
	}
	waitUntil(t, 30*time.Second, "the early task reported dead after the restart", func() bool {
		getStates()
		return states["early"] != nil && states["early"].State == "dead"
	})
	release("late")
	waitUntil(t, 30*time.Second, "the allocation failed by the late task's exit 3", getStates)
	for name, want := range map[string]int{"early": 0, "late": 3} {
		ts := states[name]
		started, code := 0, -1
		for _, ev := range ts.Events {
			switch ev.Type {
			case "Started":
				started++
			case "Terminated":
				code = ev.ExitCode
			}
		}
		if started != 1 || code != want || ts.Restarts != 0 {
			t.Errorf("task %s: started %d times, exit code %d (want %d), restarts %d: %+v", name, started, code, want, ts.Restarts, ts.Events)
		}
	}
	waitUntil(t, 10*time.Second, "no container left", func() bool { return containers() == 0 })
}

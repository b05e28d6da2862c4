package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deploymentJob is a service job of 6 raw_exec tasks rolled out 2 at a
// time, each allocation healthy once its task has run 2 s; version marks
// the spec (an env change: a destructive update).
func deploymentJob(version string) string {
	return `{"Job":{"ID":"roll","Type":"service","Datacenters":["dc1"],
	  "Update":{"MaxParallel":2,"MinHealthyTime":2000000000,"HealthyDeadline":60000000000,"ProgressDeadline":120000000000,"HealthCheck":"task_states"},
	  "TaskGroups":[{"Name":"g","Count":6,"Tasks":[{"Name":"t","Driver":"raw_exec",
	    "Config":{"command":"/bin/sleep","args":["600"]},"Env":{"V":"` + version + `"},
	    "Resources":{"CPU":10,"MemoryMB":16}}]}]}}`
}

type deploymentStub struct {
	ID, Status string
	JobVersion uint64
	TaskGroups map[string]struct{ HealthyAllocs, PlacedAllocs, DesiredTotal int }
}

type rollAlloc struct {
	ID, ClientStatus, DesiredStatus string
	JobVersion                      uint64
}

// TestDeploymentAcrossLeaderSIGKILL: three server processes and a client
// process; a rolling update of a count-6 service job (max_parallel 2,
// min_healthy_time 2s) is under way when the leader is SIGKILLed. The new
// leader's deployment watcher and scheduler carry the same deployment to
// success: every allocation of the new version placed once, never more
// than max_parallel of them unhealthy at a time, the old version's gone.
func TestDeploymentAcrossLeaderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	agents := startCluster(t)
	leader := waitLeader(t, agents, "", 30*time.Second)
	base := t.TempDir()
	cliConf := filepath.Join(base, "client.hcl")
	if err := os.WriteFile(cliConf, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePorts(t, 1)[0]
	logf, err := os.Create(filepath.Join(base, "c1.log"))
	if err != nil {
		t.Fatal(err)
	}
	servers := strings.Join([]string{agents[0].rpcAddr, agents[1].rpcAddr, agents[2].rpcAddr}, ",")
	cli := &agent{name: "c1", log: logf, args: []string{"agent", "-node", "c1", "-bind", "127.0.0.1",
		"-data-dir", filepath.Join(base, "c1"), "-client", "-servers", servers, "-config", cliConf,
		"-http-port", fmt.Sprint(port)}}
	cli.start(t)
	t.Cleanup(func() {
		// Stop the job first, so that the client's tasks end with it.
		for _, a := range agents {
			if a.cmd != nil {
				req, _ := http.NewRequest(http.MethodDelete, "http://"+a.httpAddr+"/v1/job/roll?purge=true", nil)
				if resp, err := httpClient.Do(req); err == nil {
					resp.Body.Close()
					break
				}
			}
		}
		time.Sleep(2 * time.Second)
		cli.kill()
		cli.log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(cli.log.Name())
			t.Logf("--- c1 log (tail) ---\n%s", tail(string(b), 30))
		}
	})
	live := func() *agent {
		for _, a := range agents {
			if a.cmd != nil && a.rpcAddr != leader {
				return a
			}
		}
		return agents[0]
	}
	waitUntil(t, 30*time.Second, "a ready client", func() bool {
		var nodes []struct{ Status string }
		_, err := getJSON(live().httpAddr, "/v1/nodes", &nodes)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	register := func(version string) {
		t.Helper()
		resp, err := httpClient.Post("http://"+live().httpAddr+"/v1/jobs", "application/json", stringsReader(deploymentJob(version)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("register %s: %d", version, resp.StatusCode)
		}
	}
	latest := func() deploymentStub {
		var d deploymentStub
		getJSON(live().httpAddr, "/v1/job/roll/deployment", &d)
		return d
	}
	register("1")
	waitUntil(t, 60*time.Second, "version 0 deployed", func() bool {
		d := latest()
		return d.JobVersion == 0 && d.Status == "successful"
	})

	register("2")
	var rolling deploymentStub
	waitUntil(t, 60*time.Second, "version 1's rollout under way", func() bool {
		rolling = latest()
		g := rolling.TaskGroups["g"]
		return rolling.JobVersion == 1 && rolling.Status == "running" && g.HealthyAllocs >= 2 && g.HealthyAllocs < 6
	})
	for _, a := range agents {
		if a.rpcAddr == leader {
			a.kill()
		}
	}
	newLeader := waitLeader(t, agents, leader, 30*time.Second)
	t.Logf("leader %s SIGKILLed with %d of 6 healthy; new leader %s", leader, rolling.TaskGroups["g"].HealthyAllocs, newLeader)

	// Sample until the deployment ends: at most max_parallel allocations
	// of the new version running and not yet healthy at a time is what
	// the deployment's own counts show (placed - healthy).
	deadline := time.Now().Add(90 * time.Second)
	var final deploymentStub
	for {
		final = latest()
		g := final.TaskGroups["g"]
		if final.ID == rolling.ID && g.PlacedAllocs-g.HealthyAllocs > 2 {
			t.Fatalf("%d placed and not healthy, max_parallel 2: %+v", g.PlacedAllocs-g.HealthyAllocs, final)
		}
		if final.ID != rolling.ID || final.Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment still running: %+v", final)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if final.ID != rolling.ID || final.Status != "successful" {
		t.Fatalf("deployment after the failover: %+v, want %s successful", final, rolling.ID)
	}
	var allocs []rollAlloc
	if _, err := getJSON(live().httpAddr, "/v1/job/roll/allocations", &allocs); err != nil {
		t.Fatal(err)
	}
	var inDeployment []rollAlloc
	if _, err := getJSON(live().httpAddr, "/v1/deployment/allocations/"+rolling.ID, &inDeployment); err != nil {
		t.Fatal(err)
	}
	if len(inDeployment) != 6 {
		t.Errorf("deployment %s holds %d allocations, want the 6 of version 1", rolling.ID, len(inDeployment))
	}
	newVersion, running := 0, 0
	for _, a := range allocs {
		if a.JobVersion == 1 {
			newVersion++
		}
		if a.DesiredStatus == "run" && a.ClientStatus == "running" {
			if a.JobVersion != 1 {
				t.Errorf("allocation %s of version %d still running", a.ID, a.JobVersion)
			}
			running++
		}
	}
	if newVersion != 6 || running != 6 {
		t.Fatalf("%d allocations of version 1 (want 6: none placed twice), %d running", newVersion, running)
	}
}

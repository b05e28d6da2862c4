package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// deployJob is a service job of six raw_exec tasks running script (real
// processes), with the update block of the issue: max_parallel 2, one
// canary, min_healthy_time 2s, auto_revert, judged by task states.
func deployJob(id, script string, autoPromote bool) *nomad.Job {
	return &nomad.Job{ID: new(id), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{{
		Name: new("web"), Count: new(6),
		Update: &nomad.UpdateStrategy{MaxParallel: new(2), Canary: new(1), MinHealthyTime: new(2 * time.Second),
			HealthyDeadline: new(time.Minute), ProgressDeadline: new(2 * time.Minute), AutoRevert: new(true),
			AutoPromote: new(autoPromote), HealthCheck: new("task_states")},
		RestartPolicy: &nomad.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)},
		Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", KillTimeout: new(time.Second),
			Resources: &nomad.Resources{CPU: new(20), MemoryMB: new(20)},
			Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}}},
	}}}
}

// startDeployAgent runs a dev agent (server and client, real raw_exec
// processes) and a Nomad Go client for it.
func startDeployAgent(t *testing.T) *nomad.Client {
	t.Helper()
	a := startDevClientAgent(t)
	nc := nomad.DefaultConfig()
	nc.Address = a.HTTPURL()
	c, err := nomad.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "a ready node", 20*time.Second, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	return c
}

// rollout samples a job's allocations every 100 ms until its latest
// deployment of version reaches a terminal status, and checks the
// issue's bounds at each sample: never more than max_parallel (2)
// replacements in flight, never fewer than count-max_parallel (4)
// allocations healthy (old ones running, new ones healthy; canaries
// aside). It returns the deployment.
func rollout(t *testing.T, c *nomad.Client, id string, version uint64, check bool) *nomad.Deployment {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		allocs, _, err := c.Jobs().Allocations(id, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		healthy, inFlight := 0, 0
		for _, a := range allocs {
			if a.DesiredStatus != "run" {
				continue
			}
			canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary
			isHealthy := a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
			switch {
			case canary:
			case a.JobVersion < version && a.ClientStatus == "running", isHealthy && a.ClientStatus == "running":
				healthy++
			case a.JobVersion == version:
				inFlight++
			}
		}
		if check && (inFlight > 2 || healthy < 4) {
			t.Fatalf("rollout of version %d: %d replacements in flight, %d healthy", version, inFlight, healthy)
		}
		// The same from the processes: the allocations whose task
		// process (its raw_exec supervisor) is alive on this machine.
		if check {
			live := liveSupervisors(t)
			running := 0
			for _, a := range allocs {
				if live[a.ID] {
					running++
				}
			}
			if running < 4 {
				t.Fatalf("rollout of version %d: %d task processes alive, want at least 4", version, running)
			}
		}
		deps, _, err := c.Jobs().Deployments(id, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var d *nomad.Deployment
		for _, x := range deps {
			if x.JobVersion == version {
				d = x
			}
		}
		if d != nil && d.Status != "running" && d.Status != "paused" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment of version %d not over: %+v", version, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDeploymentRollingAutoPromoteAndRevert is the rollout with
// real processes and Nomad's Go client: the first version deploys; a good
// change rolls out through an auto-promoted canary, never more than 2
// replaced at once and never fewer than 4 healthy; a change whose task
// exits at once fails its deployment and reverts to the last stable
// version, whose processes run again.
func TestDeploymentRollingAutoPromoteAndRevert(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about a minute")
	}
	c := startDeployAgent(t)
	if _, _, err := c.Jobs().Register(deployJob("roll", "echo v0; sleep 600", true), nil); err != nil {
		t.Fatal(err)
	}
	if d := rollout(t, c, "roll", 0, false); d.Status != "successful" {
		t.Fatalf("first deployment: %s (%s)", d.Status, d.StatusDescription)
	}

	if _, _, err := c.Jobs().Register(deployJob("roll", "echo v1; sleep 600", true), nil); err != nil {
		t.Fatal(err)
	}
	d := rollout(t, c, "roll", 1, true)
	if d.Status != "successful" || d.TaskGroups["web"].HealthyAllocs < 6 || !d.TaskGroups["web"].Promoted {
		t.Fatalf("good change: %s (%s) %+v", d.Status, d.StatusDescription, d.TaskGroups["web"])
	}
	job, _, err := c.Jobs().Info("roll", nil)
	if err != nil || !*job.Stable || *job.Version != 1 {
		t.Fatalf("after the good change: stable %v version %v, %v", job.Stable, job.Version, err)
	}

	if _, _, err := c.Jobs().Register(deployJob("roll", "exit 3", true), nil); err != nil {
		t.Fatal(err)
	}
	d = rollout(t, c, "roll", 2, false)
	if d.Status != "failed" || !strings.Contains(d.StatusDescription, "rolling back to job version 1") {
		t.Fatalf("bad change: %s (%s)", d.Status, d.StatusDescription)
	}
	// The revert is version 3, a copy of version 1: it deploys, and six
	// allocations run it.
	d = rollout(t, c, "roll", 3, false)
	if d.Status != "successful" {
		t.Fatalf("revert deployment: %s (%s)", d.Status, d.StatusDescription)
	}
	allocs, _, err := c.Jobs().Allocations("roll", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, a := range allocs {
		if a.DesiredStatus == "run" && a.ClientStatus == "running" && a.JobVersion == 3 {
			running++
		}
	}
	if running != 6 {
		t.Fatalf("%d allocations of the reverted version running, want 6", running)
	}
	list, _, err := c.Deployments().List(nil)
	if err != nil || len(list) != 4 {
		t.Fatalf("deployments: %d, %v", len(list), err)
	}
}

// TestDeploymentManualCanaryPromote: with Nomad's Go client, a change
// waits with its canary healthy until Deployments().PromoteAll, then rolls
// out to success; the deployment's allocations are listed.
func TestDeploymentManualCanaryPromote(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	c := startDeployAgent(t)
	if _, _, err := c.Jobs().Register(deployJob("canary", "sleep 600", false), nil); err != nil {
		t.Fatal(err)
	}
	rollout(t, c, "canary", 0, false)
	if _, _, err := c.Jobs().Register(deployJob("canary", "echo new; sleep 600", false), nil); err != nil {
		t.Fatal(err)
	}
	var dep *nomad.Deployment
	pollUntil(t, "a healthy canary awaiting promotion", 30*time.Second, func() bool {
		d, _, err := c.Jobs().LatestDeployment("canary", nil)
		if err != nil || d == nil || d.JobVersion != 1 {
			return false
		}
		dep = d
		return d.TaskGroups["web"].HealthyAllocs == 1 && len(d.TaskGroups["web"].PlacedCanaries) == 1
	})
	info, _, err := c.Deployments().Info(dep.ID, nil)
	if err != nil || info.Status != "running" || info.StatusDescription != "Deployment is running but requires manual promotion" {
		t.Fatalf("deployment before promotion: %+v, %v", info, err)
	}
	allocs, _, err := c.Deployments().Allocations(dep.ID, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("deployment allocations before promotion: %d, %v", len(allocs), err)
	}
	if _, _, err := c.Deployments().PromoteAll(dep.ID, nil); err != nil {
		t.Fatal(err)
	}
	if d := rollout(t, c, "canary", 1, true); d.Status != "successful" || !d.TaskGroups["web"].Promoted {
		t.Fatalf("after promotion: %s (%s)", d.Status, d.StatusDescription)
	}
	list, _, err := c.Deployments().List(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("deployments: %d, %v", len(list), err)
	}
}

// liveSupervisors returns the allocation IDs of the raw_exec supervisor
// processes alive on this machine (argv "drover-raw_exec-supervisor
// <alloc ID>/<task>"): each lives as long as its task.
func liveSupervisors(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(b, []byte("drover-raw_exec-supervisor\x00")) {
			continue
		}
		arg := strings.TrimRight(string(b[len("drover-raw_exec-supervisor\x00"):]), "\x00")
		if id, _, ok := strings.Cut(arg, "/"); ok {
			out[id] = true
		}
	}
	return out
}

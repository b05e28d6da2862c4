package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver/exec"
	"github.com/drover-project/drover/structs"
)

// needExec skips tests that run exec tasks where the driver cannot run.
func needExec(t *testing.T) {
	t.Helper()
	if fp := exec.New(exec.Config{}).Fingerprint(); !fp.Healthy {
		t.Skipf("the exec driver cannot run here (%s): these tests need root and cgroup controllers", fp.HealthDescription)
	}
}

// execAlloc is an allocation of one exec task running script, with
// memoryMB of memory.
func execAlloc(nodeID, script string, memoryMB int64) *structs.Allocation {
	a := mockAlloc(nodeID, structs.JobTypeService, nil)
	a.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "t", Driver: "exec", KillTimeout: 500 * time.Millisecond,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}
	a.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": {
		Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: memoryMB}}}}
	return a
}

func lastEvent(a *structs.Allocation, typ string) *structs.TaskEvent {
	ts := a.TaskStates.MustMap()["t"]
	if ts == nil {
		return nil
	}
	for i := len(ts.Events) - 1; i >= 0; i-- {
		if ts.Events[i].Type == typ {
			return ts.Events[i]
		}
	}
	return nil
}

// TestExecTaskSurvivesClientRestart: a client stopped without killing its
// tasks leaves an exec task running; a new client on the same data
// directory re-attaches to it (one start, usage still read from its
// cgroup), and later reports its real exit code; its cgroup is gone.
func TestExecTaskSurvivesClientRestart(t *testing.T) {
	needExec(t)
	f := newFakeCluster(t, time.Second)
	dir := t.TempDir()
	c := testClient(t, f, dir)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := execAlloc(c.NodeID(), `x=$(head -c 2000000 /dev/zero | tr '\0' a); while [ ! -e /local/go ]; do sleep 0.05; done; exit 3`, 64)
	f.upsertAlloc(a)
	waitFor(t, "running", 10*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning })
	waitFor(t, "memory in use", 10*time.Second, func() bool {
		u, err := c.AllocStats(context.Background(), a.ID)
		return err == nil && u.Tasks["t"] != nil && u.Tasks["t"].ResourceUsage.MemoryStats.RSS > 0 && u.ResourceUsage.MemoryStats.RSS > 0
	})
	c.Shutdown() // the task keeps running

	c2 := testClient(t, f, dir)
	cleanupKill(t, c2)
	waitFor(t, "restored", 10*time.Second, func() bool {
		got := c2.Allocs()
		return len(got) == 1 && got[0].ClientStatus == structs.AllocClientStatusRunning
	})
	waitFor(t, "usage through the re-attached handle", 10*time.Second, func() bool {
		u, err := c2.AllocStats(context.Background(), a.ID)
		return err == nil && u.Tasks["t"] != nil && u.Tasks["t"].ResourceUsage.MemoryStats.Usage > 0
	})
	if err := os.WriteFile(filepath.Join(dir, "alloc", a.ID, "t", "local", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "failed with the task's exit code", 10*time.Second, func() bool {
		ev := lastEvent(f.alloc(a.ID), structs.TaskTerminated)
		return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusFailed && ev != nil && ev.ExitCode == 3
	})
	started := 0
	for _, ev := range f.alloc(a.ID).TaskStates.MustMap()["t"].Events {
		if ev.Type == structs.TaskStarted {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("task started %d times", started)
	}
	assertCgroupGone(t, a.ID+".t")
}

// TestExecOOMKillEvent: a task over its memory limit is killed by the
// kernel, and its Terminated event says "OOM Killed", as Nomad's.
func TestExecOOMKillEvent(t *testing.T) {
	needExec(t)
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := execAlloc(c.NodeID(), `x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; while :; do x="$x$x"; done`, 16)
	f.upsertAlloc(a)
	waitFor(t, "OOM killed", 30*time.Second, func() bool {
		ev := lastEvent(f.alloc(a.ID), structs.TaskTerminated)
		return ev != nil && ev.Message == exec.OOMKilled && ev.Signal == 9 && ev.ExitCode == 137 &&
			ev.Details["oom_killed"] == "true" && ev.Details["exit_message"] == exec.OOMKilled
	})
	assertCgroupGone(t, a.ID+".t")
}

// assertCgroupGone fails when the memory cgroup of the task is left.
func assertCgroupGone(t *testing.T, name string) {
	t.Helper()
	for _, root := range []string{"/sys/fs/cgroup/memory/drover", "/sys/fs/cgroup/drover.slice"} {
		for _, n := range []string{name, name + ".scope"} {
			if _, err := os.Stat(filepath.Join(root, n)); err == nil {
				t.Fatalf("cgroup %s left in %s", n, root)
			}
		}
	}
}

// TestExecMissingCommandEvent: a command missing from the chroot fails
// the start with the kernel's message in the Driver Failure event.
func TestExecMissingCommandEvent(t *testing.T) {
	needExec(t)
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := execAlloc(c.NodeID(), "", 32)
	a.Job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/usr/bin/drover-not-in-chroot"}
	f.upsertAlloc(a)
	const want = `failed to exec "/usr/bin/drover-not-in-chroot": no such file or directory`
	waitFor(t, "driver failure", 15*time.Second, func() bool {
		ev := lastEvent(f.alloc(a.ID), structs.TaskDriverFailure)
		return ev != nil && ev.DriverError == want
	})
	assertCgroupGone(t, a.ID+".t")
}

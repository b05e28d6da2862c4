package client

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// testClient starts a client against the fake cluster; t.Cleanup shuts it
// down and kills whatever it still runs.
func testClient(t *testing.T, f *fakeCluster, dataDir string, servers ...string) *Client {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	if len(servers) == 0 {
		servers = []string{"s1:4647"}
	}
	c, err := New(&Config{
		DataDir: dataDir, Servers: servers, Transport: f,
		NodeName: "test-node", NodeClass: "linux-small", Meta: map[string]string{"rack": "r1"},
		RawExecEnabled: true, MockEnabled: true, NetworkAddr: "127.0.0.1",
		// Short queries: collected allocations show when one times out.
		UpdateInterval: 50 * time.Millisecond, MaxQueryTime: 500 * time.Millisecond,
		RetryBase: 10 * time.Millisecond, RetryLimit: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cleanupKill stops every allocation of c and shuts it down.
func cleanupKill(t *testing.T, c *Client) {
	t.Cleanup(func() {
		c.allocMu.Lock()
		for _, ar := range c.runners {
			ar.Kill("test cleanup")
			defer func() { <-ar.DoneCh() }()
		}
		c.allocMu.Unlock()
		c.Shutdown()
	})
}

func mockAlloc(nodeID, jobType string, cfg map[string]any) *structs.Allocation {
	job := &structs.Job{ID: "job-" + jobType, Name: "job-" + jobType, Type: jobType, Namespace: "default", Region: "global",
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Millisecond, Mode: "fail"},
			Tasks:         []*structs.Task{{Name: "t", Driver: "mock_driver", Config: cfg, KillTimeout: 200 * time.Millisecond}}}}}
	return &structs.Allocation{ID: structs.GenerateUUID(), Name: job.ID + ".g[0]", Namespace: "default",
		NodeID: nodeID, JobID: job.ID, TaskGroup: "g", Job: job,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
}

func TestRegistersFingerprintedNode(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	dir := t.TempDir()
	c := testClient(t, f, dir)
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	n := f.node(c.NodeID())
	checks := map[string]string{
		"attr driver.raw_exec": n.Attributes["driver.raw_exec"], "attr driver.mock_driver": n.Attributes["driver.mock_driver"],
		"attr kernel.name": n.Attributes["kernel.name"], "attr unique.network.ip-address": n.Attributes["unique.network.ip-address"],
		"meta rack": n.Meta["rack"], "class": n.NodeClass, "name": n.Name, "status": n.Status,
	}
	want := map[string]string{
		"attr driver.raw_exec": "1", "attr driver.mock_driver": "1", "attr kernel.name": "linux",
		"attr unique.network.ip-address": "127.0.0.1", "meta rack": "r1", "class": "linux-small",
		"name": "test-node", "status": structs.NodeStatusReady,
	}
	for k, v := range want {
		if checks[k] != v {
			t.Errorf("%s = %q, want %q", k, checks[k], v)
		}
	}
	if d := n.Drivers["raw_exec"]; d == nil || !d.Healthy || !d.Detected {
		t.Errorf("raw_exec driver info %+v", d)
	}
	if n.NodeResources.Cpu.CpuShares <= 0 || n.NodeResources.Memory.MemoryMB <= 0 || n.ReservedResources.Cpu.CpuShares != DefaultReservedCPU {
		t.Errorf("resources %+v reserved %+v", n.NodeResources, n.ReservedResources)
	}
	if n.ComputedClass == "" || n.SecretID == "" {
		t.Errorf("computed class %q secret %q", n.ComputedClass, n.SecretID)
	}
	b, err := os.ReadFile(filepath.Join(dir, "client", "node-id"))
	if err != nil || strings.TrimSpace(string(b)) != c.NodeID() {
		t.Fatalf("node-id file %q, %v", b, err)
	}
	// A new client on the same data dir keeps the node ID.
	id := c.NodeID()
	c.Shutdown()
	c2 := testClient(t, f, dir)
	cleanupKill(t, c2)
	if c2.NodeID() != id {
		t.Fatalf("node ID changed: %s -> %s", id, c2.NodeID())
	}
}

func TestHeartbeatsWithinTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	f := newFakeCluster(t, ttl)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "6 heartbeats", 5*time.Second, func() bool { return len(f.heartbeatLog()) >= 6 })
	hb := f.heartbeatLog()
	for i := 1; i < len(hb); i++ {
		gap := hb[i].at.Sub(hb[i-1].at)
		// About half the TTL (minus up to a tenth of jitter); never late.
		if gap >= ttl || gap < ttl/2-ttl/10-20*time.Millisecond {
			t.Fatalf("heartbeat gap %d = %v, want in [%v, %v)", i, gap, ttl/2-ttl/10, ttl)
		}
	}
	if n := f.count("", "Node.Register"); n != 1 {
		t.Fatalf("registered %d times", n)
	}
}

func TestHeartbeatInterval(t *testing.T) {
	tests := []struct {
		ttl  time.Duration
		r    float64
		want time.Duration
	}{
		{10 * time.Second, 0, 5 * time.Second},
		{10 * time.Second, 1, 4 * time.Second},
		{10 * time.Second, 0.5, 4500 * time.Millisecond},
		{time.Millisecond, 0, minHeartbeatInterval},
	}
	for _, tc := range tests {
		if got := heartbeatInterval(tc.ttl, tc.r); got != tc.want {
			t.Errorf("heartbeatInterval(%v, %v) = %v, want %v", tc.ttl, tc.r, got, tc.want)
		}
	}
}

func TestFailoverBetweenServers(t *testing.T) {
	const ttl = 400 * time.Millisecond
	f := newFakeCluster(t, ttl)
	f.setDown("a:4647", true)
	c := testClient(t, f, "", "a:4647", "b:4647")
	cleanupKill(t, c)
	waitFor(t, "registration through b", 5*time.Second, func() bool { return f.count("b:4647", "Node.Register") == 1 })

	// b goes away, a comes back: heartbeats move to a without a new
	// registration (the node never expired).
	f.setDown("a:4647", false)
	f.setDown("b:4647", true)
	waitFor(t, "heartbeats through a", 5*time.Second, func() bool { return f.count("a:4647", "Node.UpdateStatus") >= 2 })
	if n := f.count("", "Node.Register"); n != 1 {
		t.Fatalf("registered %d times during a failover within the TTL", n)
	}
	hb := f.heartbeatLog()
	for i := 1; i < len(hb); i++ {
		if gap := hb[i].at.Sub(hb[i-1].at); gap >= ttl {
			t.Fatalf("heartbeat gap %v reached the TTL during failover", gap)
		}
	}
}

func TestOutageKeepsTasksAndReregisters(t *testing.T) {
	const ttl = 200 * time.Millisecond
	f := newFakeCluster(t, ttl)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
	f.upsertAlloc(a)
	waitFor(t, "running on the servers", 5*time.Second, func() bool {
		return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning
	})

	f.setDown("s1:4647", true)
	time.Sleep(3 * ttl)
	if got := c.Allocs(); len(got) != 1 || got[0].ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("allocation during the outage: %+v", got)
	}
	f.setDown("s1:4647", false)
	waitFor(t, "re-registration", 5*time.Second, func() bool { return f.count("", "Node.Register") >= 2 })
	if got := c.Allocs(); len(got) != 1 || got[0].ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("allocation after the outage: %+v", got)
	}
}

func TestUnknownNodeReregisters(t *testing.T) {
	f := newFakeCluster(t, 200*time.Millisecond)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	f.forgetNodes()
	waitFor(t, "re-registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
}

func TestAllocLifecycle(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })

	batch := mockAlloc(c.NodeID(), structs.JobTypeBatch, map[string]any{"run_for": "20ms"})
	svc := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
	f.upsertAlloc(batch)
	f.upsertAlloc(svc)
	waitFor(t, "batch complete, service running", 5*time.Second, func() bool {
		return f.alloc(batch.ID).ClientStatus == structs.AllocClientStatusComplete &&
			f.alloc(svc.ID).ClientStatus == structs.AllocClientStatusRunning
	})
	ts := f.alloc(svc.ID).TaskStates.MustMap()["t"]
	if ts == nil || ts.State != structs.TaskStateRunning || len(ts.Events) < 3 {
		t.Fatalf("service task state on the servers: %+v", ts)
	}

	// Desired stop kills the task promptly.
	start := time.Now()
	f.stopAlloc(svc.ID)
	waitFor(t, "service complete", 5*time.Second, func() bool {
		return f.alloc(svc.ID).ClientStatus == structs.AllocClientStatusComplete
	})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stop took %v", d)
	}
	ts = f.alloc(svc.ID).TaskStates.MustMap()["t"]
	if ts.State != structs.TaskStateDead || ts.Events[len(ts.Events)-1].Type != structs.TaskKilled {
		t.Fatalf("stopped task state %+v", ts)
	}

	// Collected on the servers: the client removes its directory once its
	// watch times out (the servers do not answer for a collection).
	dir := filepath.Join(c.allocRoot, svc.ID)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("alloc dir missing before removal: %v", err)
	}
	f.removeAlloc(svc.ID)
	waitFor(t, "alloc dir removed", 5*time.Second, func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
	if c.runner(svc.ID) != nil {
		t.Fatal("runner kept after removal")
	}
}

func TestUpdatesAreBatched(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	// Ten allocations whose tasks restart quickly produce hundreds of task
	// events; updates go out at most once per interval.
	var ids []string
	for i := 0; i < 10; i++ {
		a := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1ms", "exit_code": 1})
		a.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 30, Interval: time.Hour, Delay: time.Millisecond, Mode: "fail"}
		f.upsertAlloc(a)
		ids = append(ids, a.ID)
	}
	start := time.Now()
	waitFor(t, "all failed", 20*time.Second, func() bool {
		for _, id := range ids {
			if f.alloc(id).ClientStatus != structs.AllocClientStatusFailed {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start)
	f.mu.Lock()
	rpcs := len(f.updates)
	var sent int
	for _, u := range f.updates {
		seen := map[string]bool{}
		for _, a := range u.Alloc {
			if seen[a.ID] {
				f.mu.Unlock()
				t.Fatalf("allocation %s twice in one batch", a.ID)
			}
			seen[a.ID] = true
		}
		sent += len(u.Alloc)
	}
	f.mu.Unlock()
	events := 0
	for _, id := range ids {
		events += int(f.alloc(id).TaskStates.MustMap()["t"].Restarts) * 3
	}
	maxRPCs := int(elapsed/(50*time.Millisecond)) + 3
	if rpcs > maxRPCs || rpcs >= events/5 {
		t.Fatalf("%d update RPCs (%d allocation updates) for ~%d events in %v; want <= %d", rpcs, sent, events, elapsed, maxRPCs)
	}
	t.Logf("%d events -> %d RPCs carrying %d allocation updates in %v", events, rpcs, sent, elapsed)
}

func TestClientRestartReattaches(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	dir := t.TempDir()
	c := testClient(t, f, dir)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	marker := fmt.Sprintf("1000.%09d", time.Now().UnixNano()%1e9)
	a := mockAlloc(c.NodeID(), structs.JobTypeService, nil)
	a.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "exec sleep " + marker}}}
	f.upsertAlloc(a)
	waitFor(t, "running", 5*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning })
	waitFor(t, "one process", 5*time.Second, func() bool { return countProcs(marker) == 1 })

	c.Shutdown() // tasks keep running
	if n := countProcs(marker); n != 1 {
		t.Fatalf("%d processes after client shutdown", n)
	}
	c2 := testClient(t, f, dir)
	cleanupKill(t, c2)
	waitFor(t, "restored", 5*time.Second, func() bool {
		got := c2.Allocs()
		return len(got) == 1 && got[0].ClientStatus == structs.AllocClientStatusRunning
	})
	time.Sleep(500 * time.Millisecond) // let the watch and the re-attach settle
	if n := countProcs(marker); n != 1 {
		t.Fatalf("%d processes after restart, want exactly 1", n)
	}
	started := 0
	for _, ev := range c2.Allocs()[0].TaskStates.MustMap()["t"].Events {
		if ev.Type == structs.TaskStarted {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("task started %d times", started)
	}
	// The servers stop it: the restarted client kills the adopted process.
	f.stopAlloc(a.ID)
	waitFor(t, "process gone", 10*time.Second, func() bool { return countProcs(marker) == 0 })
	waitFor(t, "complete", 5*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusComplete })
}

func TestRestartedClientStopsWhatServersDropped(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	dir := t.TempDir()
	c := testClient(t, f, dir)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	marker := fmt.Sprintf("1000.%09d", time.Now().UnixNano()%1e9)
	a := mockAlloc(c.NodeID(), structs.JobTypeService, nil)
	a.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "exec sleep " + marker}}}
	f.upsertAlloc(a)
	waitFor(t, "one process", 5*time.Second, func() bool { return countProcs(marker) == 1 })
	c.Shutdown()
	f.removeAlloc(a.ID) // dropped while the client was away
	c2 := testClient(t, f, dir)
	cleanupKill(t, c2)
	waitFor(t, "process gone", 10*time.Second, func() bool { return countProcs(marker) == 0 })
	waitFor(t, "runner removed", 5*time.Second, func() bool { return len(c2.Allocs()) == 0 })
}

func TestTaskLogs(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := mockAlloc(c.NodeID(), structs.JobTypeBatch, nil)
	a.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "t", Driver: "raw_exec",
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo one; sleep 0.3; echo two; echo err >&2"}}}
	f.upsertAlloc(a)
	waitFor(t, "runner", 5*time.Second, func() bool { return c.runner(a.ID) != nil })

	// Following from the start returns everything, ending when the task does.
	r, err := c.TaskLogs(a.ID, "t", "stdout", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("followed stdout %q, %v", b, err)
	}
	tests := []struct {
		name, typ string
		offset    int64
		want      string
	}{
		{"stderr", "stderr", 0, "err\n"},
		{"offset", "stdout", 4, "two\n"},
		{"tail", "stdout", -2, "o\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.TaskLogs(a.ID, "t", tc.typ, false, tc.offset)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			b, _ := io.ReadAll(r)
			if string(b) != tc.want {
				t.Fatalf("got %q want %q", b, tc.want)
			}
		})
	}
	for _, bad := range []struct{ alloc, task, typ string }{{"nope", "t", "stdout"}, {a.ID, "nope", "stdout"}, {a.ID, "t", "stdin"}} {
		if _, err := c.TaskLogs(bad.alloc, bad.task, bad.typ, false, 0); err == nil {
			t.Errorf("TaskLogs(%v) succeeded", bad)
		}
	}
}

func TestGarbageCollection(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	c.cfg.GCMaxAllocs = 2
	c.cfg.GCRetention = time.Hour
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	var ids []string
	for i := 0; i < 4; i++ {
		a := mockAlloc(c.NodeID(), structs.JobTypeBatch, map[string]any{"run_for": "1ms"})
		f.upsertAlloc(a)
		ids = append(ids, a.ID)
		waitFor(t, "complete", 5*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusComplete })
		time.Sleep(5 * time.Millisecond) // distinct finish times
	}
	running := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
	f.upsertAlloc(running)
	waitFor(t, "running", 5*time.Second, func() bool { return f.alloc(running.ID).ClientStatus == structs.AllocClientStatusRunning })

	// Beyond the newest two terminal allocations, the oldest go.
	removed := c.collect(time.Now())
	if len(removed) != 2 || !contains(removed, ids[0]) || !contains(removed, ids[1]) {
		t.Fatalf("collected %v, want the two oldest of %v", removed, ids)
	}
	for _, id := range ids[:2] {
		if _, err := os.Stat(filepath.Join(c.allocRoot, id)); !os.IsNotExist(err) {
			t.Fatalf("dir of %s still there: %v", id, err)
		}
	}
	// After the retention period every terminal one goes; running stays.
	removed = c.collect(time.Now().Add(2 * time.Hour))
	if len(removed) != 2 || c.runner(running.ID) == nil {
		t.Fatalf("second collection %v", removed)
	}
	// Collected allocations are not run again by the watch.
	f.upsertAlloc(f.alloc(ids[0]))
	time.Sleep(200 * time.Millisecond)
	if c.runner(ids[0]) != nil {
		t.Fatal("a collected allocation was started again")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// countProcs counts live processes whose command line has marker.
func countProcs(marker string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 && s[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}

// The watch's index can be above every allocation it asks the client to
// pull (here the node's CreateIndex, as when the node registered again
// after being collected). The fetch must wait for the allocations' own
// index: waiting for the watch's would block on a real server until the
// query times out (the fake server fails the test if it would).
// TestWatchAnswerCarriesAllocations: allocations the watch's answer
// carries (InlineAllocs) run without an Alloc.GetAllocs; with a server
// that ignores the option (Nomad, older servers) they are fetched.
func TestWatchAnswerCarriesAllocations(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			f := newFakeCluster(t, time.Second)
			f.noInline = !inline
			c := testClient(t, f, "")
			cleanupKill(t, c)
			waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
			var ids []string
			for range 3 {
				a := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
				f.upsertAlloc(a)
				ids = append(ids, a.ID)
			}
			waitFor(t, "all running on the servers", 5*time.Second, func() bool {
				for _, id := range ids {
					if f.alloc(id).ClientStatus != structs.AllocClientStatusRunning {
						return false
					}
				}
				return true
			})
			fetches := f.count("", "Alloc.GetAllocs")
			if inline && fetches != 0 {
				t.Fatalf("%d Alloc.GetAllocs calls: the answers carried the allocations", fetches)
			}
			if !inline && fetches == 0 {
				t.Fatal("no Alloc.GetAllocs call, but the server did not carry the allocations")
			}
		})
	}
}

func TestFetchWaitsForThePulledAllocationsIndex(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
	nodeID := c.NodeID()
	f.mu.Lock() // both writes before the watch can read the index
	placed := a.Copy()
	idx := f.bumpLocked()
	placed.AllocModifyIndex, placed.ModifyIndex = idx, idx
	f.allocs[a.ID] = placed
	f.nodeIndex[nodeID] = f.bumpLocked()
	f.mu.Unlock()
	waitFor(t, "running on the servers", 5*time.Second, func() bool {
		return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning
	})
}

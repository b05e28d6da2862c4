package client

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver/docker"
	"github.com/drover-project/drover/agent/client/driver/docker/dockertest"
	"github.com/drover-project/drover/structs"
)

// TestDockerClientRestartReattaches: a client that stops without stopping
// its tasks (as a SIGKILLed one does) leaves the container running; a new
// client on the same data directory re-attaches to it without starting it
// again, and later reports its real exit code, with its output in the
// task's log once.
func TestDockerClientRestartReattaches(t *testing.T) {
	dc, img := dockertest.Image(t)
	f := newFakeCluster(t, time.Second)
	dir := t.TempDir()
	c := testClient(t, f, dir)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := mockAlloc(c.NodeID(), structs.JobTypeBatch, nil)
	a.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "t", Driver: "docker", KillTimeout: time.Second,
		Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
		Config: map[string]any{"image": img, "command": "/bin/sh",
			"args": []any{"-c", "echo before; while [ ! -e /alloc/done ]; do sleep 0.1; done; echo after; exit 3"}}}
	f.upsertAlloc(a)
	waitFor(t, "running", 30*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning })
	containerID := func() string {
		list, err := dc.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", "com.hashicorp.nomad.alloc_id="+a.ID)})
		if err != nil || len(list.Items) != 1 {
			return ""
		}
		return list.Items[0].ID
	}
	id := containerID()
	if id == "" {
		t.Fatal("no running container")
	}

	c.Shutdown() // tasks keep running
	time.Sleep(200 * time.Millisecond)
	if got := containerID(); got != id {
		t.Fatalf("the container did not survive the client: %q", got)
	}
	c2 := testClient(t, f, dir)
	cleanupKill(t, c2)
	waitFor(t, "restored", 10*time.Second, func() bool {
		got := c2.Allocs()
		return len(got) == 1 && got[0].ClientStatus == structs.AllocClientStatusRunning
	})
	if err := os.WriteFile(filepath.Join(dir, "alloc", a.ID, "alloc", "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "failed with the real exit code", 30*time.Second, func() bool {
		return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusFailed
	})
	var started int
	var term *structs.TaskEvent
	for _, ev := range f.alloc(a.ID).TaskStates.MustMap()["t"].Events {
		switch ev.Type {
		case structs.TaskStarted:
			started++
		case structs.TaskTerminated:
			term = ev
		}
	}
	if started != 1 || term == nil || term.ExitCode != 3 {
		t.Fatalf("started %d times, terminated event %+v", started, term)
	}
	r, err := c2.TaskLogs(a.ID, "t", "stdout", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "before\nafter\n" {
		t.Fatalf("stdout %q", b)
	}
	if got := containerID(); got != "" {
		t.Fatalf("container %s left after the task ended", got)
	}
}

// TestDockerDetectedWhenDaemonAppears: a client whose docker daemon does
// not answer has no docker driver on its node; once the daemon answers
// (here: a proxy to the real daemon's socket starts listening), the next
// fingerprint registers driver.docker = "1" and its version.
func TestDockerDetectedWhenDaemonAppears(t *testing.T) {
	dockertest.Client(t)
	sock := filepath.Join(t.TempDir(), "docker.sock")
	f := newFakeCluster(t, time.Second)
	c, err := New(&Config{DataDir: t.TempDir(), Servers: []string{"s1:4647"}, Transport: f, NodeName: "n",
		Docker: &docker.Config{Endpoint: "unix://" + sock}, DriverFingerprintInterval: 50 * time.Millisecond,
		RetryBase: 10 * time.Millisecond, RetryLimit: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	if n := f.node(c.NodeID()); n.Attributes["driver.docker"] != "" || n.Drivers["docker"] == nil || n.Drivers["docker"].Detected {
		t.Fatalf("docker detected without a daemon: %v %+v", n.Attributes["driver.docker"], n.Drivers["docker"])
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", "/var/run/docker.sock")
			if err != nil {
				conn.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, conn); up.Close() }()
			go func() { _, _ = io.Copy(conn, up); conn.Close() }()
		}
	}()
	waitFor(t, "docker registered", 10*time.Second, func() bool {
		n := f.node(c.NodeID())
		return n.Attributes["driver.docker"] == "1" && n.Attributes["driver.docker.version"] != "" &&
			n.Drivers["docker"] != nil && n.Drivers["docker"].Healthy
	})
}

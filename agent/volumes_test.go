package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// startVolumeAgent runs a -dev agent whose client offers the given host
// volumes (through the agent's own client { host_volume } config) and
// waits until its node is ready.
func startVolumeAgent(t *testing.T, vols ...HostVolumeConfig) *Agent {
	t.Helper()
	cfg := DevConfig()
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "vol-client"
	cfg.Client.HostVolumes = vols
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	srv, cl := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: cl.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	return a
}

func volNomadClient(t *testing.T, a *Agent) *nomad.Client {
	t.Helper()
	c, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitJobAlloc waits until job id has an allocation of the given job
// version that is terminal on the client, and returns it.
func waitJobAlloc(t *testing.T, a *Agent, id string, version uint64) *structs.Allocation {
	t.Helper()
	var alloc *structs.Allocation
	pollUntil(t, "allocation of "+id+" finished", 30*time.Second, func() bool {
		allocs, err := a.Server().State().AllocsByJob(nil, structs.DefaultNamespace, id)
		if err != nil {
			return false
		}
		for _, x := range allocs {
			if x.JobVersion == version && x.ClientTerminalStatus() {
				alloc = x
				return true
			}
		}
		return false
	})
	return alloc
}

func mountedUnder(t *testing.T, allocID string) bool {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(info), allocID)
}

// TestDevAgentHostVolumeMountedAndRead: a client's host_volume is on its
// node; a raw_exec task whose group asks for it read-only and mounts it
// at /srv reads the host's file there, cannot write to it, and the mount
// is gone once the task is done.
func TestDevAgentHostVolumeMountedAndRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("host volumes are bind mounted, which needs root; this test runs as uid", os.Geteuid())
	}
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "hello.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startVolumeAgent(t, HostVolumeConfig{Name: "shared", Path: host})
	node := a.Client().Node()
	if hv := node.HostVolumes["shared"]; hv == nil || hv.Path != host || hv.ReadOnly {
		t.Fatalf("node host volumes %+v", node.HostVolumes)
	}
	c := volNomadClient(t, a)
	n, _, err := c.Nodes().Info(node.ID, nil)
	if err != nil || n.HostVolumes["shared"] == nil || n.HostVolumes["shared"].Path != host {
		t.Fatalf("node over the API: %+v, %v", n, err)
	}

	out := t.TempDir()
	job := &nomad.Job{ID: new("vol"), Type: new("batch"), Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
			RestartPolicy: &nomad.RestartPolicy{Attempts: new(0), Mode: new("fail")},
			Volumes:       map[string]*nomad.VolumeRequest{"d": {Name: "d", Type: "host", Source: "shared", ReadOnly: true}},
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Env: map[string]string{"OUT": out},
				VolumeMounts: []*nomad.VolumeMount{{Volume: new("d"), Destination: new("/srv")}},
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c",
					`cat srv/hello.txt > "$OUT/seen"; if echo x > srv/w 2>/dev/null; then echo writable; else echo read-only; fi >> "$OUT/seen"`}},
			}}}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	alloc := waitJobAlloc(t, a, "vol", 0)
	if alloc.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s: %+v", alloc.ClientStatus, alloc.TaskStates.MustMap()["t"])
	}
	got, err := os.ReadFile(filepath.Join(out, "seen"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "from the host\nread-only\n"; string(got) != want {
		t.Fatalf("the task saw %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(host, "w")); !os.IsNotExist(err) {
		t.Fatalf("the task wrote to the read-only volume: %v", err)
	}
	pollUntil(t, "volume unmounted", 5*time.Second, func() bool { return !mountedUnder(t, alloc.ID) })
}

// TestDevAgentVolumeNoNodeHasIsBlocked: a job asking for a host volume
// that no node offers is not placed; its evaluation's metric names the
// volume, and a blocked evaluation waits for a node that has it.
func TestDevAgentVolumeNoNodeHasIsBlocked(t *testing.T) {
	a := startVolumeAgent(t, HostVolumeConfig{Name: "shared", Path: t.TempDir()})
	c := volNomadClient(t, a)
	job := &nomad.Job{ID: new("novol"), Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
			Volumes: map[string]*nomad.VolumeRequest{"d": {Name: "d", Type: "host", Source: "missing"}},
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sleep", "args": []any{"60"}}}}}}}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := waitEval(t, c, resp.EvalID)
	m := ev.FailedTGAllocs["g"]
	want := `missing compatible host volume "missing" (writable)`
	if m == nil || m.ConstraintFiltered[want] != 1 {
		t.Fatalf("failed allocation metric %+v; want ConstraintFiltered[%q] = 1", m, want)
	}
	if ev.BlockedEval == "" {
		t.Fatalf("no blocked evaluation: %+v", ev)
	}
	blocked, _, err := c.Evaluations().Info(ev.BlockedEval, nil)
	if err != nil || blocked.Status != "blocked" {
		t.Fatalf("blocked eval %+v, %v", blocked, err)
	}
	allocs, _, err := c.Jobs().Allocations("novol", true, nil)
	if err != nil || len(allocs) != 0 {
		t.Fatalf("allocations %d, %v; want none", len(allocs), err)
	}
}

// TestDevAgentLogsRotationHonoursMaxFileSize: a task writing 3.5 MB with
// logs { max_files = 2, max_file_size = 1 } leaves two files of at most
// 1 MiB each, the newest last.
func TestDevAgentLogsRotationHonoursMaxFileSize(t *testing.T) {
	a := startVolumeAgent(t)
	c := volNomadClient(t, a)
	job := &nomad.Job{ID: new("logs"), Type: new("batch"), Datacenters: []string{"dc1"},
		TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec",
				LogConfig: &nomad.LogConfig{MaxFiles: new(2), MaxFileSizeMB: new(1)},
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c",
					`head -c 3670016 /dev/zero | tr '\0' a; echo end`}},
			}}}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Jobs().Info("logs", nil)
	if err != nil || got.TaskGroups[0].Tasks[0].LogConfig == nil || *got.TaskGroups[0].Tasks[0].LogConfig.MaxFileSizeMB != 1 {
		t.Fatalf("job read back: %+v, %v", got, err)
	}
	alloc := waitJobAlloc(t, a, "logs", 0)
	if alloc.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s", alloc.ClientStatus)
	}
	dir := filepath.Join(a.DataDir(), "alloc", alloc.ID, "alloc", "logs")
	files, err := filepath.Glob(filepath.Join(dir, "t.stdout.*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("log files %v; want the newest 2", files)
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1<<20 {
			t.Fatalf("%s is %d bytes, over max_file_size", f, st.Size())
		}
		total += st.Size()
	}
	last, err := os.ReadFile(filepath.Join(dir, "t.stdout.3"))
	if err != nil || !strings.HasSuffix(string(last), "aend\n") {
		t.Fatalf("newest file t.stdout.3: %d bytes, %v", len(last), err)
	}
	if want := int64(3670016+4) - 3<<20; total != (1<<20)+int64(len(last)) || int64(len(last)) != want {
		t.Fatalf("kept %d bytes (newest %d); want 1 MiB + %d", total, len(last), want)
	}
}

// TestDevAgentStickyDiskKeepsData: a file a task writes to alloc/data and
// local/ is there for its replacement after a destructive update on the
// same node, when the group's ephemeral disk is sticky.
func TestDevAgentStickyDiskKeepsData(t *testing.T) {
	a := startVolumeAgent(t)
	c := volNomadClient(t, a)
	out := t.TempDir()
	script := `if [ -f ../alloc/data/count ]; then cat ../alloc/data/count local/note > "$OUT/seen-$V"; fi; ` +
		`echo "v$V" > ../alloc/data/count; echo "note$V" > local/note; exec sleep 60`
	job := func(v string) *nomad.Job {
		return &nomad.Job{ID: new("sticky"), Datacenters: []string{"dc1"},
			TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
				EphemeralDisk: &nomad.EphemeralDisk{Sticky: new(true), SizeMB: new(200)},
				Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Env: map[string]string{"OUT": out, "V": v},
					KillTimeout: new(time.Second),
					Config:      map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}}}}}
	}
	running := func(version uint64) *structs.Allocation {
		var alloc *structs.Allocation
		pollUntil(t, "allocation running", 30*time.Second, func() bool {
			allocs, err := a.Server().State().AllocsByJob(nil, structs.DefaultNamespace, "sticky")
			if err != nil {
				return false
			}
			for _, x := range allocs {
				if x.JobVersion == version && x.ClientStatus == structs.AllocClientStatusRunning {
					alloc = x
					return true
				}
			}
			return false
		})
		return alloc
	}
	if _, _, err := c.Jobs().Register(job("1"), nil); err != nil {
		t.Fatal(err)
	}
	first := running(0)
	pollUntil(t, "first task wrote its data", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(a.DataDir(), "alloc", first.ID, "t", "local", "note"))
		return err == nil
	})
	// A new env is a destructive update: a new allocation replaces the
	// first one.
	if _, _, err := c.Jobs().Register(job("2"), nil); err != nil {
		t.Fatal(err)
	}
	second := running(1)
	if second.ID == first.ID || second.PreviousAllocation != first.ID || second.NodeID != first.NodeID {
		t.Fatalf("replacement %s previous %q node %s; want a new allocation after %s on %s",
			second.ID, second.PreviousAllocation, second.NodeID, first.ID, first.NodeID)
	}
	var got []byte
	pollUntil(t, "the replacement read the data", 10*time.Second, func() bool {
		var err error
		got, err = os.ReadFile(filepath.Join(out, "seen-2"))
		return err == nil && len(got) > 0
	})
	if want := "v1\nnote1\n"; string(got) != want {
		t.Fatalf("the replacement saw %q, want %q", got, want)
	}
}

// TestNomadMemoryMaxRefusedForRawExec: memory_max sent by Nomad's Go
// client for a raw_exec task is refused with a 400 naming the field and
// the driver; nothing is written.
func TestNomadMemoryMaxRefusedForRawExec(t *testing.T) {
	_, c := startServerAgent(t)
	job := &nomad.Job{ID: new("mm"), TaskGroups: []*nomad.TaskGroup{{Name: new("g"),
		Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
			Resources: &nomad.Resources{MemoryMB: new(128), MemoryMaxMB: new(256)}}}}}}
	_, _, err := c.Jobs().Register(job, nil)
	var ue nomad.UnexpectedResponseError
	if !errors.As(err, &ue) || ue.StatusCode() != 400 ||
		!strings.Contains(ue.Body(), "TaskGroups[0].Tasks[0].Resources.MemoryMaxMB: Drover does not support memory_max with the raw_exec driver") {
		t.Fatalf("register: %v", err)
	}
	if _, _, err := c.Jobs().Info("mm", nil); err == nil {
		t.Fatal("a refused job was written")
	}
}

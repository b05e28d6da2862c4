package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/driver/docker/dockertest"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// testTask builds a task config in fresh directories; output goes to
// plain files (stdout, stderr) in the task directory.
func testTask(t *testing.T, config map[string]any) *driver.TaskConfig {
	t.Helper()
	root := t.TempDir()
	allocID := structs.GenerateUUID()
	ad, err := allocdir.New(root, allocID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ad.Build(); err != nil {
		t.Fatal(err)
	}
	td, err := ad.TaskDir("web")
	if err != nil {
		t.Fatal(err)
	}
	if err := td.Build(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stdout", "stderr"} {
		if err := os.WriteFile(filepath.Join(td.Dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &driver.TaskConfig{
		ID: allocID + "/web", AllocID: allocID, TaskName: "web", JobName: "j", GroupName: "g", Namespace: "default",
		Config: config, Env: map[string]string{"NOMAD_ALLOC_ID": allocID, "GREETING": "hello"},
		TaskDir: td.Dir, AllocDir: ad.Dir,
		StdoutPath: filepath.Join(td.Dir, "stdout"), StderrPath: filepath.Join(td.Dir, "stderr"),
		Resources: &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 100},
			Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
	}
}

// newTestDriver returns a driver on the local daemon and the test image,
// or skips the test.
func newTestDriver(t *testing.T, mod func(*Config)) (*Driver, *client.Client, string) {
	t.Helper()
	c, img := dockertest.Image(t)
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	d := New(cfg)
	t.Cleanup(func() { d.Close() })
	return d, c, img
}

func waitExit(t *testing.T, h driver.Handle, within time.Duration) *driver.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("the task did not exit within %v: %v", within, err)
	}
	return res
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func containerGone(t *testing.T, c *client.Client, id string) {
	t.Helper()
	_, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if !cerrdefs.IsNotFound(err) {
		t.Fatalf("container %s is still there (inspect error %v)", shortID(id), err)
	}
}

func TestFingerprint(t *testing.T) {
	t.Run("no daemon", func(t *testing.T) {
		d := New(Config{Endpoint: "unix://" + filepath.Join(t.TempDir(), "none.sock")})
		defer d.Close()
		info := d.Fingerprint()
		if info.Detected || info.Healthy || len(info.Attributes) != 0 {
			t.Fatalf("detected without a daemon: %+v", info)
		}
		if !strings.Contains(info.HealthDescription, "Failed to connect") {
			t.Fatalf("health description %q", info.HealthDescription)
		}
	})
	t.Run("daemon", func(t *testing.T) {
		dockertest.Client(t)
		d := New(DefaultConfig())
		defer d.Close()
		info := d.Fingerprint()
		if !info.Detected || !info.Healthy || info.Attributes["driver.docker"] != "1" || info.Attributes["driver.docker.version"] == "" {
			t.Fatalf("fingerprint %+v", info)
		}
	})
}

func TestCreateOptionsRefusals(t *testing.T) {
	d := New(DefaultConfig())
	defer d.Close()
	tests := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"privileged", map[string]any{"image": "x", "privileged": true}, "privileged mode is disabled"},
		{"host volume", map[string]any{"image": "x", "volumes": []any{"/etc:/host-etc"}}, "volumes are disabled"},
		{"escaping volume", map[string]any{"image": "x", "volumes": []any{"../../x:/y"}}, "inside the task directory"},
		{"named volume", map[string]any{"image": "x", "mount": []any{map[string]any{"target": "/d", "source": "v"}}}, "volumes are disabled"},
		{"unknown port", map[string]any{"image": "x", "ports": []any{"nope"}}, `port label "nope"`},
		{"bad dns", map[string]any{"image": "x", "dns_servers": []any{"resolver"}}, "not an IP address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testTask(t, tc.config)
			conf, err := decodeSpec(cfg.Config)
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.createOptions(cfg, parseTaskConfig(conf), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCreateOptionsResources(t *testing.T) {
	d := New(Config{PidsLimit: 100})
	defer d.Close()
	cfg := testTask(t, nil)
	cfg.Resources.Memory = structs.AllocatedMemoryResources{MemoryMB: 64, MemoryMaxMB: 128}
	cfg.Ports = []structs.AllocatedPortMapping{{Label: "http", Value: 25000, To: 8080}, {Label: "raw", Value: 25001}}
	conf, err := decodeSpec(map[string]any{"image": "x", "ports": []any{"http", "raw"}, "ulimit": map[string]any{"nofile": "100:200"},
		"labels": map[string]any{"team": "a"}, "volumes": []any{"local/data:/data"}})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := d.createOptions(cfg, parseTaskConfig(conf), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	hc := opts.HostConfig
	if hc.Memory != 128<<20 || hc.MemoryReservation != 64<<20 || hc.CPUShares != 100 || hc.CpusetCpus != "1" || *hc.PidsLimit != 100 {
		t.Fatalf("resources: memory %d reservation %d shares %d cpuset %q pids %d", hc.Memory, hc.MemoryReservation, hc.CPUShares, hc.CpusetCpus, *hc.PidsLimit)
	}
	if got := fmt.Sprint(hc.PortBindings); !strings.Contains(got, "8080/tcp:[{invalid IP 25000}]") || !strings.Contains(got, "25001/tcp") {
		t.Fatalf("port bindings %s", got)
	}
	if len(hc.Ulimits) != 1 || hc.Ulimits[0].Soft != 100 || hc.Ulimits[0].Hard != 200 {
		t.Fatalf("ulimits %+v", hc.Ulimits)
	}
	if opts.Config.Labels["team"] != "a" || opts.Config.Labels[labelAllocID] != cfg.AllocID {
		t.Fatalf("labels %v", opts.Config.Labels)
	}
	if len(hc.Binds) != 1 || hc.Binds[0] != filepath.Join(cfg.TaskDir, "local/data")+":/data" {
		t.Fatalf("binds %v", hc.Binds)
	}
	if len(hc.Mounts) != 3 || hc.Mounts[0].Target != "/alloc" || hc.Mounts[1].Target != "/local" || hc.Mounts[2].Target != "/secrets" {
		t.Fatalf("mounts %+v", hc.Mounts)
	}
	if _, err := d.createOptions(cfg, parseTaskConfig(map[string]any{"image": "x", "pids_limit": int64(101)}), nil); err == nil {
		t.Fatal("a pids_limit above the client's was accepted")
	}
}

// TestRunOutputAndExit: output reaches the task's files, the environment
// and the task directories are there, the exit code is the container's,
// and the container is removed once it exited.
func TestRunOutputAndExit(t *testing.T) {
	d, c, img := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sh",
		"args": []any{"-c", "echo out $GREETING; echo err >&2; touch /alloc/a /local/l /secrets/s; exit 3"}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, h, 30*time.Second)
	if res.ExitCode != 3 || res.Err != nil {
		t.Fatalf("result %v", res)
	}
	if got := readFile(t, cfg.StdoutPath); got != "out hello\n" {
		t.Fatalf("stdout %q", got)
	}
	if got := readFile(t, cfg.StderrPath); got != "err\n" {
		t.Fatalf("stderr %q", got)
	}
	for _, p := range []string{filepath.Join(cfg.AllocDir, "alloc", "a"), filepath.Join(cfg.TaskDir, "local", "l"), filepath.Join(cfg.TaskDir, "secrets", "s")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the task's write did not reach %s: %v", p, err)
		}
	}
	containerGone(t, c, h.State().Data[dataContainerID])
}

// TestOOMKilled: a task over its memory limit is killed by the kernel and
// reported so, with exit code 137.
func TestOOMKilled(t *testing.T) {
	d, _, img := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "tail /dev/zero"}})
	cfg.Resources.Memory.MemoryMB = 16
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, h, 60*time.Second)
	if res.ExitCode != 137 || !errors.Is(res.Err, ErrOOMKilled) {
		t.Fatalf("result %v, want exit code 137 and %v", res, ErrOOMKilled)
	}
}

// TestCoresStopAndPorts: cores = 1 pins the container to one core; a
// published port answers through the host; Stop (its signal ignored, as a
// PID 1 does) kills the container after the timeout and removes it.
func TestCoresStopAndPorts(t *testing.T) {
	d, c, img := newTestDriver(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := testTask(t, map[string]any{"image": img, "command": "httpd", "args": []any{"-f", "-p", "8080", "-h", "/var/www"},
		"ports": []any{"http"}})
	cfg.Cores = 1
	cfg.Ports = []structs.AllocatedPortMapping{{Label: "http", Value: port, To: 8080, HostIP: "127.0.0.1"}}
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := h.State().Data[dataContainerID]
	ins, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ins.Container.HostConfig.CpusetCpus; got != "0" {
		t.Fatalf("cpuset %q, want \"0\"", got)
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if body != "hello from drover\n" {
		t.Fatalf("the published port answered %q", body)
	}
	start := time.Now()
	if err := h.Stop("SIGINT", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("stop took %v", time.Since(start))
	}
	waitExit(t, h, time.Second)
	containerGone(t, c, id)
}

// TestRecover: a driver closed with its container running (a client
// shutting down) leaves it alone; a new driver re-attaches from the saved
// state, resumes the output where the first stopped, and reports the real
// exit code. A container that exited while no driver ran is reported with
// its exit code at once.
func TestRecover(t *testing.T) {
	d, c, img := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sh",
		"args": []any{"-c", "echo one; while [ ! -e /alloc/go ]; do sleep 0.1; done; echo two; exit 7"}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(cfg.StdoutPath); string(b) == "one\n" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := h.State()
	d.Close()
	if err := os.WriteFile(filepath.Join(cfg.AllocDir, "alloc", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d2 := New(DefaultConfig())
	defer d2.Close()
	h2, err := d2.Recover(st)
	if err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, h2, 30*time.Second)
	if res.ExitCode != 7 || res.Err != nil {
		t.Fatalf("result %v", res)
	}
	if got := readFile(t, cfg.StdoutPath); got != "one\ntwo\n" {
		t.Fatalf("stdout %q, want each line once", got)
	}
	containerGone(t, c, st.Data[dataContainerID])
	if _, err := New(DefaultConfig()).Recover(st); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("recovering a removed container: %v", err)
	}

	t.Run("exited while away", func(t *testing.T) {
		d3 := New(DefaultConfig())
		cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "sleep 0.5; exit 5"}})
		h, err := d3.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		st := h.State()
		d3.Close()
		w := c.ContainerWait(context.Background(), st.Data[dataContainerID], client.ContainerWaitOptions{})
		select {
		case <-w.Result:
		case err := <-w.Error:
			t.Fatal(err)
		}
		d4 := New(DefaultConfig())
		defer d4.Close()
		h4, err := d4.Recover(st)
		if err != nil {
			t.Fatal(err)
		}
		if res := waitExit(t, h4, 10*time.Second); res.ExitCode != 5 {
			t.Fatalf("result %v", res)
		}
	})
}

// TestPullFailure: an image no registry serves is a start error carrying
// the daemon's message (the registry is a closed port on loopback: no
// traffic leaves the machine).
func TestPullFailure(t *testing.T) {
	d, _, _ := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": "127.0.0.1:1/drover/missing:1", "image_pull_timeout": "20s"})
	_, err := d.Start(context.Background(), cfg)
	if err == nil || errors.Is(err, driver.ErrUnrecoverable) {
		t.Fatalf("start error %v, want a recoverable pull error", err)
	}
	if !strings.Contains(err.Error(), "Failed to pull `127.0.0.1:1/drover/missing:1`") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error %q does not carry the daemon's message", err)
	}
}

// TestImageGC: the image reference a task used is removed image_delay
// after its last task exited; the image stays while a task holds it.
func TestImageGC(t *testing.T) {
	d, c, img := newTestDriver(t, func(cfg *Config) { cfg.GC.ImageDelay = 200 * time.Millisecond })
	ref := "drover-test/busybox:gc-" + structs.GenerateUUID()[:8]
	if _, err := c.ImageTag(context.Background(), client.ImageTagOptions{Source: img, Target: ref}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{}) })
	cfg := testTask(t, map[string]any{"image": ref, "command": "/bin/sh", "args": []any{"-c", "sleep 0.5"}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // longer than the delay: held, so kept
	if _, err := c.ImageInspect(context.Background(), ref); err != nil {
		t.Fatalf("the image went while a task held it: %v", err)
	}
	waitExit(t, h, 30*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.ImageInspect(context.Background(), ref)
		if cerrdefs.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unused image %s was not removed (inspect: %v)", ref, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.ImageInspect(context.Background(), img); err != nil {
		t.Fatalf("the other reference of the image went too: %v", err)
	}
}

func decodeSpec(cfg map[string]any) (map[string]any, error) { return driverspec.DockerSpec.Decode(cfg) }

// TestExec: a command runs inside the task's running container (a
// template's change_script) and its exit code comes back; a context that
// ends first kills it.
func TestExec(t *testing.T) {
	d, _, img := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"30"}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop("SIGKILL", time.Second)
	code, err := d.Exec(context.Background(), cfg, "/bin/sh", []string{"-c", "touch /local/ran; exit 4"})
	if err != nil || code != 4 {
		t.Fatalf("exec: %d, %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ran")); err != nil {
		t.Fatalf("the command did not run in the container: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := d.Exec(ctx, cfg, "/bin/sleep", []string{"30"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec past its deadline: %v", err)
	}
}

// TestCreateFailure: a container the daemon refuses to create or start is
// a start error with the daemon's message (left to the restart policy),
// and nothing of it stays.
func TestCreateFailure(t *testing.T) {
	d, c, img := newTestDriver(t, nil)
	for name, config := range map[string]map[string]any{
		"create": {"image": img, "command": "/bin/true", "cap_add": []any{"NOPE"}},
		"start":  {"image": img, "command": "/no/such/command"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testTask(t, config)
			_, err := d.Start(context.Background(), cfg)
			if err == nil || errors.Is(err, driver.ErrUnrecoverable) {
				t.Fatalf("start error %v, want a recoverable one", err)
			}
			want := map[string]string{"create": "NOPE", "start": "/no/such/command"}[name]
			if !strings.Contains(err.Error(), "Failed to "+name) || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q lacks the daemon's message", err)
			}
			_, ierr := c.ContainerInspect(context.Background(), containerName(cfg), client.ContainerInspectOptions{})
			if !cerrdefs.IsNotFound(ierr) {
				t.Fatalf("a container of the failed start is left (inspect: %v)", ierr)
			}
		})
	}
}

// TestAdopt: a running container of the task that no saved state names
// (the client died before saving the handle) is adopted; none is
// driver.ErrTaskGone.
func TestAdopt(t *testing.T) {
	d, _, img := newTestDriver(t, nil)
	cfg := testTask(t, map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "sleep 0.5; exit 6"}})
	if _, err := d.Adopt(cfg); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("adopt without a container: %v", err)
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	d.Close() // the handle is never saved
	d2 := New(DefaultConfig())
	defer d2.Close()
	h, err := d2.Adopt(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, h, 30*time.Second); res.ExitCode != 6 {
		t.Fatalf("result %v", res)
	}
}

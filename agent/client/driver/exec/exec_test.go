package exec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/cgroup"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/logs"
	"github.com/drover-project/drover/structs"
)

// needRoot skips a test that needs a usable exec driver (root, cgroups).
func needRoot(t *testing.T) *Driver {
	t.Helper()
	d := New(Config{})
	if fp := d.Fingerprint(); !fp.Healthy {
		t.Skipf("the exec driver cannot run here (%s): these tests need root and cgroup controllers", fp.HealthDescription)
	}
	return d
}

// taskEnv makes an allocation directory with the task's directories and
// its stdout/stderr FIFOs pumped into files; stop stops the pumps and
// returns what the task wrote.
func taskEnv(t *testing.T, id string, cfg map[string]any, res *structs.AllocatedTaskResources) (*driver.TaskConfig, func() (string, string)) {
	t.Helper()
	dir, err := os.MkdirTemp("", "drover-exec-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	taskDir := filepath.Join(dir, "web")
	logDir := filepath.Join(dir, "alloc", "logs")
	for _, d := range []string{taskDir, logDir, filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets"), filepath.Join(taskDir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var pumps []*logs.Pump
	paths := map[string]string{}
	for _, typ := range []string{"stdout", "stderr"} {
		w, err := logs.NewRotator(logDir, "web."+typ, 2, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(logDir, ".web."+typ+".fifo")
		p, err := logs.StartPump(fifo, w)
		if err != nil {
			t.Fatal(err)
		}
		pumps = append(pumps, p)
		paths[typ] = fifo
	}
	stopped := false
	stop := func() (string, string) {
		if !stopped {
			stopped = true
			for _, p := range pumps {
				p.Stop()
			}
		}
		out, _ := os.ReadFile(filepath.Join(logDir, "web.stdout.0"))
		errOut, _ := os.ReadFile(filepath.Join(logDir, "web.stderr.0"))
		return string(out), string(errOut)
	}
	t.Cleanup(func() { stop() })
	return &driver.TaskConfig{
		ID: id + "/web", AllocID: id, TaskName: "web", Config: cfg,
		Env: map[string]string{"PATH": "/usr/bin:/bin", "GREETING": "hello",
			"NOMAD_TASK_DIR": filepath.Join(taskDir, "local")},
		TaskDir: taskDir, AllocDir: dir, StdoutPath: paths["stdout"], StderrPath: paths["stderr"],
		Resources: res,
	}, stop
}

func waitExit(t *testing.T, h driver.Handle, within time.Duration) *driver.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return res
}

func sh(script string) map[string]any {
	return map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}
}

func TestIsolation(t *testing.T) {
	d := needRoot(t)
	cfg, stop := taskEnv(t, "iso1", sh(`id -u; id -g; ps -e -o comm=
echo "dir=$NOMAD_TASK_DIR $GREETING"
echo ok > /local/mine && echo wrote local
echo bad > /etc/drover-exec-test 2>/dev/null || echo cannot write etc
echo bad > /usr/drover 2>/dev/null || echo cannot write usr
ls /alloc >/dev/null && echo alloc visible
test -e `+filepath.Dir(os.Args[0])+` && echo host visible
hostname >/dev/null; exit 7`), nil)
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, h, 20*time.Second)
	out, errOut := stop()
	if res.ExitCode != 7 || res.Err != nil {
		t.Fatalf("result %v; stdout %q stderr %q", res, out, errOut)
	}
	// In its own PID namespace the task (PID 1) sees only itself and its ps.
	want := "65534\n65534\nsh\nps\ndir=/local hello\nwrote local\ncannot write etc\ncannot write usr\nalloc visible\n"
	if out != want {
		t.Fatalf("stdout = %q, want %q (stderr %q)", out, want, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.TaskDir, "local", "mine")); err != nil || string(b) != "ok\n" {
		t.Fatalf("the task's file: %q, %v", b, err)
	}
	if _, err := os.Stat("/etc/drover-exec-test"); err == nil {
		t.Fatal("the task wrote the host's /etc")
	}
	assertNoCgroup(t, d, cfg.ID)
}

// assertNoCgroup fails if the task's cgroup is still there.
func assertNoCgroup(t *testing.T, d *Driver, taskID string) {
	t.Helper()
	g, err := d.cgroups.Group(cgroupName(taskID))
	if err != nil {
		t.Fatal(err)
	}
	if g.Exists() {
		t.Fatalf("cgroup %s left behind", g.Name())
	}
}

func TestMissingCommandIsKernelMessage(t *testing.T) {
	d := needRoot(t)
	cfg, _ := taskEnv(t, "miss1", map[string]any{"command": "/bin/drover-no-such-command"}, nil)
	_, err := d.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") || !strings.Contains(err.Error(), "/bin/drover-no-such-command") {
		t.Fatalf("start error = %v, want the kernel's ENOENT naming the command", err)
	}
	assertNoCgroup(t, d, cfg.ID)
}

func TestOOMKilled(t *testing.T) {
	d := needRoot(t)
	res := &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 20}}
	// A shell variable doubling until well past 20 MB.
	cfg, _ := taskEnv(t, "oom1", sh(`x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; while :; do x="$x$x"; done`), res)
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, h, 60*time.Second)
	if r.Signal != 9 || !r.OOMKilled || r.Err == nil || r.Err.Error() != OOMKilled {
		t.Fatalf("result %v, want SIGKILL and %q", r, OOMKilled)
	}
	assertNoCgroup(t, d, cfg.ID)
}

func TestLimitsAndStatsAndStop(t *testing.T) {
	d := needRoot(t)
	res := &structs.AllocatedTaskResources{
		Cpu:    structs.AllocatedCpuResources{CpuShares: 300, ReservedCores: []uint16{0}},
		Memory: structs.AllocatedMemoryResources{MemoryMB: 64, MemoryMaxMB: 128},
	}
	cfg, stopLogs := taskEnv(t, "lim1", sh(`grep Cpus_allowed_list /proc/self/status; x=$(head -c 4000000 /dev/zero | tr '\0' a); sleep 300 & touch /local/ready; wait`), res)
	cfg.Config["cap_drop"] = []any{"all"}
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := d.cgroups.Group(cgroupName(cfg.ID))
	read := func(ctrl, file string) string {
		b, err := os.ReadFile(filepath.Join(g.Dir(ctrl), file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if d.cgroups.Mode() == cgroup.V1 {
		for _, c := range []struct{ ctrl, file, want string }{
			{cgroup.Memory, "memory.limit_in_bytes", "134217728"},
			{cgroup.Memory, "memory.soft_limit_in_bytes", "67108864"},
			{cgroup.CPU, "cpu.shares", "300"},
			{cgroup.CPUSet, "cpuset.cpus", "0"},
			{cgroup.Pids, "pids.max", "16384"},
		} {
			if got := read(c.ctrl, c.file); got != c.want {
				t.Errorf("%s = %s, want %s", c.file, got, c.want)
			}
		}
	}
	// Usage: memory above zero once the task has touched some.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ready")); err != nil; _, err = os.Stat(filepath.Join(cfg.TaskDir, "local", "ready")) {
		if time.Now().After(deadline) {
			t.Fatal("the task never got ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var usage *driver.TaskResourceUsage
	for time.Now().Before(deadline) {
		usage, err = d.TaskStats(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if pids, _ := g.Pids(); usage.ResourceUsage.MemoryStats.RSS > 0 && len(pids) >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if usage.ResourceUsage.MemoryStats.RSS == 0 || usage.ResourceUsage.MemoryStats.Usage == 0 {
		t.Fatalf("memory stats %+v", usage.ResourceUsage.MemoryStats)
	}
	pids, _ := g.Pids()
	if len(pids) < 2 {
		t.Fatalf("cgroup holds %v, want the shell and its sleep", pids)
	}
	if err := h.Stop("SIGTERM", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitExit(t, h, 10*time.Second)
	for _, p := range pids {
		if _, err := os.Stat(filepath.Join("/proc", strings.TrimSpace(itoa(p)))); err == nil {
			if st, _ := os.ReadFile(filepath.Join("/proc", itoa(p), "stat")); len(st) > 0 && !strings.Contains(string(st), ") Z") {
				t.Fatalf("process %d survived the stop", p)
			}
		}
	}
	assertNoCgroup(t, d, cfg.ID)
	// cores = 1 pinned the task to core 0.
	if out, errOut := stopLogs(); !strings.Contains(out, "Cpus_allowed_list:\t0\n") {
		t.Fatalf("stdout %q (stderr %q): the task is not pinned to core 0", out, errOut)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestExecInTheTaskChroot(t *testing.T) {
	d := needRoot(t)
	cfg, _ := taskEnv(t, "execer1", sh(`sleep 60`), nil)
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Stop("SIGKILL", time.Second) }()
	// The script sees the task's chroot (its /local, the read-only /usr)
	// and runs as nobody.
	code, err := d.Exec(context.Background(), cfg, "/bin/sh", []string{"-c",
		`[ "$(id -u)" = 65534 ] && [ "$NOMAD_TASK_DIR" = /local ] && echo hi > /local/from-script && ! touch /usr/x 2>/dev/null && exit 4`})
	if err != nil || code != 4 {
		t.Fatalf("exec = %d, %v; want 4", code, err)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.TaskDir, "local", "from-script")); err != nil || string(b) != "hi\n" {
		t.Fatalf("the script's file: %q, %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := d.Exec(ctx, cfg, "sleep", []string{"30"}); err == nil {
		t.Fatal("a script past its deadline returned no error")
	}
}

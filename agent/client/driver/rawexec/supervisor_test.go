package rawexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// Signals sent to the supervisor (not to the task's group) change
// nothing: the task runs on and its exit is recorded.
func TestSupervisorIgnoresSignals(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, _ := taskEnv(t, gatedTask(5))
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sup := supervisorOf(t, h)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1} {
		if err := syscall.Kill(sup.pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // let the signals land
	if !d.running(sup.pid, sup.startTime) || !d.running(h.State().PID, h.State().ProcStartTime) {
		t.Fatal("a signal to the supervisor ended the supervisor or the task")
	}
	release(t, cfg)
	if res := waitExit(t, h); res.ExitCode != 5 || res.Signal != 0 || res.Err != nil {
		t.Fatalf("result = %v, want exit code 5", res)
	}
	waitNoGroup(t, h.State().PID)
}

// A supervisor killed outright records nothing: the task is then watched
// alone, its exit is unknown, and its group is still cleaned up.
func TestSupervisorKilled(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, _ := taskEnv(t, gatedTask(0))
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(supervisorOf(t, h).pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if finished(h) {
		t.Fatalf("handle finished while the task runs: %v", waitExit(t, h))
	}
	release(t, cfg)
	if res := waitExit(t, h); !errors.Is(res.Err, driver.ErrExitUnknown) {
		t.Fatalf("result = %v, want an unknown exit", res)
	}
	waitNoGroup(t, h.State().PID)
}

// The task gets stdin, stdout and stderr, and none of the descriptors the
// client hands the supervisor.
func TestTaskGetsOnlyStdio(t *testing.T) {
	d := New(Config{Enabled: true})
	script := `for fd in 3 4 5; do if [ -e /proc/$$/fd/$fd ]; then echo "fd $fd: $(readlink /proc/$$/fd/$fd)"; fi; done`
	cfg, stop := taskEnv(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", script}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, h); !res.Successful() {
		t.Fatalf("result = %v", res)
	}
	if out, _ := stop(); strings.TrimSpace(out) != "" {
		t.Fatalf("the task inherited descriptors:\n%s", out)
	}
}

// A start cancelled while the supervisor starts the task (a kill during
// Start) leaves no task behind.
func TestCancelledStartLeavesNothing(t *testing.T) {
	marker := fmt.Sprintf("1000.%09d", time.Now().UnixNano()%1e9)
	d := New(Config{Enabled: true})
	cfg, _ := taskEnv(t, map[string]any{"command": "/bin/sleep", "args": []any{marker}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if h, err := d.Start(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("start = %v, %v; want context.Canceled", h, err)
	}
	// The supervisor did start the task: it records the SIGKILL.
	status := filepath.Join(supervisorDir(cfg), exitStatusFile)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(status)
		if err == nil {
			if !strings.Contains(string(b), `"signal":9`) {
				t.Fatalf("exit status %s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exit status; %d task processes", processesWithMarker(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := processesWithMarker(t, marker); n != 0 {
		t.Fatalf("%d task processes left", n)
	}
}

// processesWithMarker counts live processes whose command line has marker.
func processesWithMarker(t *testing.T, marker string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if st, err := readProcStat("/proc", pid); err == nil && st.alive() {
			n++
		}
	}
	return n
}

// Unread output keeps the supervisor waiting, but not once the allocation
// directory is gone: no client can read it any more. Output that was read
// ends the wait at once.
func TestAwaitOutputReadGivesUpWhenNoClientCanCome(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	never := func() bool { return false }

	start := time.Now()
	if awaitOutputRead(50*time.Millisecond, never, r) {
		t.Fatal("unread output reported as read")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the linger", took)
	}

	start = time.Now()
	goneAfter30ms := func() bool { return time.Since(start) > 30*time.Millisecond }
	if awaitOutputRead(time.Hour, goneAfter30ms, r) {
		t.Fatal("unread output reported as read")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("still waiting %v after the directory was gone", took)
	}

	buf := make([]byte, 64)
	if n, err := r.Read(buf); err != nil || n != len("last words") {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	if !awaitOutputRead(time.Hour, never, r) {
		t.Fatal("drained output not reported as read")
	}
}

package rawexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/logs"
)

// taskEnv sets up a task dir with stdout/stderr FIFOs pumped into rotated
// files, and returns the config plus a function that stops the pumps and
// returns the stdout content.
func taskEnv(t *testing.T, cfg map[string]any) (*driver.TaskConfig, func() (string, string)) {
	t.Helper()
	dir := t.TempDir()
	taskDir := filepath.Join(dir, "web")
	logDir := filepath.Join(dir, "alloc", "logs")
	for _, d := range []string{taskDir, logDir} {
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
	stop := func() (string, string) {
		for _, p := range pumps {
			p.Stop()
		}
		out, _ := os.ReadFile(filepath.Join(logDir, "web.stdout.0"))
		errOut, _ := os.ReadFile(filepath.Join(logDir, "web.stderr.0"))
		return string(out), string(errOut)
	}
	t.Cleanup(func() { stop() })
	return &driver.TaskConfig{
		ID: "a1/web", AllocID: "a1", TaskName: "web", Config: cfg,
		Env:     map[string]string{"PATH": "/usr/bin:/bin", "GREETING": "hello"},
		TaskDir: taskDir, AllocDir: dir, StdoutPath: paths["stdout"], StderrPath: paths["stderr"],
	}, stop
}

func waitExit(t *testing.T, h driver.Handle) *driver.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return res
}

func TestRunExitCodeLogsEnvAndDir(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, stop := taskEnv(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", `echo hi; echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, h)
	if res.ExitCode != 3 || res.Signal != 0 || res.Err != nil {
		t.Fatalf("result = %v", res)
	}
	// The code came through the supervisor's status file.
	b, err := os.ReadFile(h.State().Data[dataExitStatusPath])
	if err != nil || !strings.Contains(string(b), `"exit_code":3`) {
		t.Fatalf("exit status file: %s, %v", b, err)
	}
	out, errOut := stop()
	if want := "hi\nhello from " + cfg.TaskDir + "\n"; out != want {
		t.Fatalf("stdout = %q, want %q", out, want)
	}
	if errOut != "oops\n" {
		t.Fatalf("stderr = %q", errOut)
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name        string
		enabled     bool
		supervisor  string // SupervisorPath; "" for the default
		cfg         map[string]any
		want        string
		unrecovered bool
	}{
		{"disabled", false, "", map[string]any{"command": "/bin/true"}, "disabled", true},
		{"missing binary", true, "", map[string]any{"command": "/nonexistent/bin"}, "no such file or directory", false},
		{"not executable", true, "", map[string]any{"command": "/etc/passwd"}, "permission denied", false},
		{"not in PATH", true, "", map[string]any{"command": "no-such-command-drover"}, "not found in $PATH", false},
		{"escape", true, "", map[string]any{"command": "../x"}, "inside the task directory", true},
		{"bad config", true, "", map[string]any{"args": "x"}, "Config.command", true},
		{"missing supervisor", true, "/nonexistent/drover", map[string]any{"command": "/bin/true"}, "starting the raw_exec supervisor", false},
		{"supervisor says nothing", true, "/bin/true", map[string]any{"command": "/bin/true"}, "exited before starting the task", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Config{Enabled: tc.enabled, SupervisorPath: tc.supervisor})
			cfg, _ := taskEnv(t, tc.cfg)
			_, err := d.Start(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
			if errors.Is(err, driver.ErrUnrecoverable) != tc.unrecovered {
				t.Fatalf("unrecoverable = %v, want %v", !tc.unrecovered, tc.unrecovered)
			}
		})
	}
}

func TestRelativeCommandInTaskDir(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, stop := taskEnv(t, map[string]any{"command": "local/run.sh"})
	os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755)
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "run.sh"), []byte("#!/bin/sh\necho local\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, h); !res.Successful() {
		t.Fatalf("result %v", res)
	}
	if out, _ := stop(); out != "local\n" {
		t.Fatalf("stdout %q", out)
	}
}

// liveGroupMembers lists processes of group pgid that have not exited.
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		end := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b)[end+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid { // field 5: pgrp
			out = append(out, pid)
		}
	}
	return out
}

func waitNoGroup(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := liveGroupMembers(t, pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d still alive: %v", pgid, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopKillsWholeGroup(t *testing.T) {
	tests := []struct {
		name string
		// script spawns a child sleep; the parent either dies from the kill
		// signal or ignores it (then SIGKILL after the timeout).
		script string
	}{
		{"parent dies on SIGINT", `sleep 1000 & echo started; wait`},
		{"parent ignores SIGINT", `trap '' INT; sleep 1000 & echo started; while true; do sleep 0.05; done`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Config{Enabled: true})
			cfg, _ := taskEnv(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", tc.script}})
			h, err := d.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			pid := h.State().PID
			deadline := time.Now().Add(5 * time.Second)
			for len(liveGroupMembers(t, pid)) < 2 {
				if time.Now().After(deadline) {
					t.Fatal("child never started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			start := time.Now()
			if err := h.Stop("SIGINT", 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			waitExit(t, h)
			if time.Since(start) > 5*time.Second {
				t.Fatal("stop took too long")
			}
			waitNoGroup(t, pid)
			if sup := supervisorOf(t, h); d.running(sup.pid, sup.startTime) {
				t.Fatalf("supervisor %d outlived its task", sup.pid)
			}
		})
	}
}

func TestExitKillsLeftovers(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, _ := taskEnv(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", `sleep 1000 & exit 0`}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, h); res.ExitCode != 0 {
		t.Fatalf("result %v", res)
	}
	waitNoGroup(t, h.State().PID)
}

func TestParseProcStat(t *testing.T) {
	line := "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
	st, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.StartTime != 987654 {
		t.Fatalf("got %+v", st)
	}
	if _, err := parseProcStat([]byte("garbage")); err == nil {
		t.Fatal("garbage parsed")
	}
}

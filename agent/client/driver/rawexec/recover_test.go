package rawexec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// gatedTask runs until a file named "release" appears in its directory,
// then exits with code. It leaves a child behind in its group, which the
// supervisor must kill.
func gatedTask(code int) map[string]any {
	script := `sleep 1000 & while [ ! -e release ]; do sleep 0.02; done; exit ` + strconv.Itoa(code)
	return map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}
}

func release(t *testing.T, cfg *driver.TaskConfig) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func supervisorOf(t *testing.T, h driver.Handle) supervisorRef {
	t.Helper()
	ref, ok := loadSupervisor(h.State())
	if !ok {
		t.Fatalf("handle state names no supervisor: %+v", h.State())
	}
	return ref
}

// waitGone waits until pid no longer names a live process started at
// startTime.
func waitGone(t *testing.T, d *Driver, pid int, startTime uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.running(pid, startTime) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func finished(h driver.Handle) bool {
	select {
	case <-h.(*handle).exit.Done():
		return true
	default:
		return false
	}
}

// The client dies (its driver and handle are dropped without stopping the
// task) and a new one recovers the task from the saved state: the exit
// code is the task's own, whether it exits after the re-attach or while
// no client runs.
func TestClientRestartReportsRealExitCode(t *testing.T) {
	tests := []struct {
		name          string
		code          int
		exitWhileDown bool
	}{
		{"exit 0 after re-attach", 0, false},
		{"exit 7 after re-attach", 7, false},
		{"exit 0 while the client is down", 0, true},
		{"exit 7 while the client is down", 7, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := taskEnv(t, gatedTask(tc.code))
			h1, err := New(Config{Enabled: true}).Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			saved := h1.State()
			sup := supervisorOf(t, h1)
			h1 = nil // the client is gone; its supervisor and task are not

			d2 := New(Config{Enabled: true})
			if tc.exitWhileDown {
				release(t, cfg)
				waitGone(t, d2, sup.pid, sup.startTime)
			}
			h2, err := d2.Recover(saved)
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			if tc.exitWhileDown != finished(h2) {
				t.Fatalf("recovered handle finished = %v, want %v", finished(h2), tc.exitWhileDown)
			}
			if !tc.exitWhileDown {
				if !d2.running(saved.PID, saved.ProcStartTime) {
					t.Fatal("the task did not survive its client")
				}
				release(t, cfg)
			}
			res := waitExit(t, h2)
			if res.ExitCode != tc.code || res.Signal != 0 || res.Err != nil {
				t.Fatalf("recovered result = %v, want exit code %d", res, tc.code)
			}
			waitNoGroup(t, saved.PID)
		})
	}
}

// A real client process is killed with SIGKILL, its whole process group
// with it: the supervisor (in a session of its own) and the task live on,
// and a new client gets the task's exit code.
func TestClientSIGKILLedReattaches(t *testing.T) {
	cfg, _ := taskEnv(t, gatedTask(7))
	saved := startInKilledClient(t, cfg)
	d := New(Config{Enabled: true})
	h, err := d.Recover(saved)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if finished(h) {
		t.Fatalf("task ended with its client: %v", waitExit(t, h))
	}
	release(t, cfg)
	if res := waitExit(t, h); res.ExitCode != 7 || res.Err != nil {
		t.Fatalf("recovered result = %v, want exit code 7", res)
	}
	waitNoGroup(t, saved.PID)
}

// startInKilledClient starts the task in a real client process
// (TestHelperClientProcess), kills that process and its group with
// SIGKILL, and returns the handle state it printed.
func startInKilledClient(t *testing.T, cfg *driver.TaskConfig) *driver.HandleState {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := exec.Command(os.Args[0], "-test.run=^TestHelperClientProcess$")
	client.Env = append(os.Environ(), helperEnv+"="+string(b))
	client.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	client.Stderr = os.Stderr
	out, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-client.Process.Pid, syscall.SIGKILL); _ = client.Wait() })
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		t.Fatalf("helper client: %v", err)
	}
	var saved driver.HandleState
	if err := json.Unmarshal(line, &saved); err != nil {
		t.Fatalf("helper client said %q: %v", line, err)
	}
	if err := syscall.Kill(-client.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = client.Wait()
	return &saved
}

const helperEnv = "DROVER_RAWEXEC_TEST_CLIENT"

// TestHelperClientProcess is the client that TestClientSIGKILLedReattaches
// kills: it starts the task described in its environment, prints the
// handle state and waits to be killed.
func TestHelperClientProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	var cfg driver.TaskConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Enabled: true}).Start(context.Background(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(h.State()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	t.Fatal("helper client was not killed")
}

// Recover never adopts a process that merely reuses a saved PID, for the
// supervisor or the task, and never takes another run's exit status.
func TestRecoverRefusesRecycledPIDs(t *testing.T) {
	d := New(Config{Enabled: true})
	cfg, _ := taskEnv(t, gatedTask(0))
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop("SIGKILL", time.Second) })
	st := h.State()
	if st.PID == 0 || st.ProcStartTime == 0 {
		t.Fatalf("state lacks pid or start time: %+v", st)
	}
	const missingPID = 1 << 22 // above pid_max on default kernels
	otherRun := filepath.Join(t.TempDir(), "status.json")
	if err := writeExitStatus(otherRun, &exitStatus{TaskPID: missingPID, TaskStartTime: 5, ExitCode: 9}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(s *driver.HandleState)
	}{
		{"old state, recycled task pid", func(s *driver.HandleState) { s.Data = nil; s.ProcStartTime++ }},
		{"old state, no such task", func(s *driver.HandleState) { s.Data = nil; s.PID = missingPID }},
		{"recycled supervisor and task pids", func(s *driver.HandleState) {
			s.Data[dataSupervisorStartTime] += "1"
			s.ProcStartTime++
		}},
		{"no such supervisor or task", func(s *driver.HandleState) {
			s.Data[dataSupervisorPID] = strconv.Itoa(missingPID)
			s.PID = missingPID
		}},
		{"exit status of another run", func(s *driver.HandleState) {
			s.Data[dataSupervisorPID] = strconv.Itoa(missingPID)
			s.Data[dataExitStatusPath] = otherRun
			s.PID, s.ProcStartTime = missingPID, 6
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := st.Copy()
			tc.change(bad)
			if _, err := New(Config{Enabled: true}).Recover(bad); !errors.Is(err, driver.ErrTaskGone) {
				t.Fatalf("err = %v, want ErrTaskGone", err)
			}
		})
	}

	t.Run("recycled supervisor pid, live task", func(t *testing.T) {
		bad := st.Copy()
		bad.Data[dataSupervisorStartTime] += "1"
		h2, err := New(Config{Enabled: true}).Recover(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := loadSupervisor(h2.State()); ok || h2.State().PID != st.PID {
			t.Fatalf("re-attached as %+v, want the task alone", h2.State())
		}
	})
	t.Run("same task is re-attached and stopped", func(t *testing.T) {
		h2, err := New(Config{Enabled: true}).Recover(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := h2.Stop("SIGTERM", time.Second); err != nil {
			t.Fatal(err)
		}
		if res := waitExit(t, h2); res.Signal != int(syscall.SIGTERM) || res.ExitCode != 128+int(syscall.SIGTERM) || res.Err != nil {
			t.Fatalf("recovered result = %v", res)
		}
		waitNoGroup(t, st.PID)
		if res := waitExit(t, h); res.Signal != int(syscall.SIGTERM) {
			t.Fatalf("first handle's result = %v", res)
		}
	})
}

// The client dies after the task started but before it saved the handle:
// a new client adopts the run from the supervisor's record (the same
// process, its real exit code) instead of starting a second copy, whether
// the task still runs or ended meanwhile. A run the client saw end is not
// adopted again.
func TestAdoptUnrecordedRun(t *testing.T) {
	for _, exitWhileDown := range []bool{false, true} {
		t.Run(fmt.Sprintf("exit while down=%v", exitWhileDown), func(t *testing.T) {
			cfg, _ := taskEnv(t, gatedTask(5))
			if _, err := New(Config{Enabled: true}).Adopt(cfg); !errors.Is(err, driver.ErrTaskGone) {
				t.Fatalf("adopt before any start: %v, want ErrTaskGone", err)
			}
			// The client dies before it saved anything: the state it
			// printed stands for what nobody recorded.
			started := startInKilledClient(t, cfg)
			sup, ok := loadSupervisor(started)
			if !ok {
				t.Fatalf("no supervisor in %+v", started)
			}
			d2 := New(Config{Enabled: true})
			if exitWhileDown {
				release(t, cfg)
				waitGone(t, d2, sup.pid, sup.startTime)
			}
			h2, err := d2.Adopt(cfg)
			if err != nil {
				t.Fatalf("adopt: %v", err)
			}
			if st := h2.State(); st.PID != started.PID || st.ProcStartTime != started.ProcStartTime {
				t.Fatalf("adopted process %d (start %d), the run was %d (start %d)", st.PID, st.ProcStartTime, started.PID, started.ProcStartTime)
			}
			if !exitWhileDown {
				release(t, cfg)
			}
			if res := waitExit(t, h2); res.ExitCode != 5 || res.Err != nil {
				t.Fatalf("adopted run's result = %v, want exit code 5", res)
			}
			// Seen to end: not adopted again, and the next start is a
			// new run.
			if _, err := New(Config{Enabled: true}).Adopt(cfg); !errors.Is(err, driver.ErrTaskGone) {
				t.Fatalf("adopt after the run was seen to end: %v, want ErrTaskGone", err)
			}
			waitNoGroup(t, started.PID)
		})
	}
}

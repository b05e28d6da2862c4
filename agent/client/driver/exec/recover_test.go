package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// TestClientSIGKILLedReattaches: a client SIGKILLed with its process group
// leaves the exec task running (its supervisor has a session of its own);
// a new client re-attaches from the saved handle, reads the task's usage
// and gets its real exit code, and the task's cgroup is removed.
func TestClientSIGKILLedReattaches(t *testing.T) {
	d := needRoot(t)
	cfg, _ := taskEnv(t, "killed1", sh(`while [ ! -e /local/go ]; do sleep 0.05; done; exit 5`), nil)
	saved := startInKilledClient(t, cfg)
	h, err := d.Recover(saved)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if _, err := d.TaskStats(context.Background(), h); err != nil {
		t.Fatalf("usage of the re-attached task: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, h, 20*time.Second); res.ExitCode != 5 || res.Err != nil {
		t.Fatalf("recovered result = %v, want exit code 5", res)
	}
	assertNoCgroup(t, d, cfg.ID)
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
	client := osexec.Command(os.Args[0], "-test.run=^TestHelperClientProcess$")
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

const helperEnv = "DROVER_EXEC_TEST_CLIENT"

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
	h, err := New(Config{}).Start(context.Background(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(h.State()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	t.Fatal("helper client was not killed")
}

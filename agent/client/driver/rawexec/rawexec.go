package rawexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/logs"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Name is the driver's name.
const Name = driverspec.RawExecName

// Defaults.
const (
	// recoverPoll is how often a re-attached task (not the client's child,
	// so it cannot be waited for) is checked in /proc.
	recoverPoll = 200 * time.Millisecond
	// killWait bounds the wait for a SIGKILLed process to disappear.
	killWait = 10 * time.Second
)

// Config configures the driver.
type Config struct {
	// Enabled: raw_exec runs nothing unless enabled.
	Enabled bool
	Logger  hclog.Logger
	// ProcRoot is /proc (tests may point elsewhere).
	ProcRoot string
}

// Driver is the raw_exec driver.
type Driver struct {
	cfg    Config
	logger hclog.Logger
}

var _ driver.Driver = (*Driver)(nil)

// New returns the driver.
func New(cfg Config) *Driver {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	return &Driver{cfg: cfg, logger: cfg.Logger.Named("raw_exec")}
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements driver.Driver: undetected when disabled, as Nomad.
func (d *Driver) Fingerprint() *structs.DriverInfo {
	now := time.Now()
	if !d.cfg.Enabled {
		return &structs.DriverInfo{Detected: false, Healthy: false, HealthDescription: "disabled", UpdateTime: now}
	}
	return &structs.DriverInfo{
		Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: now,
		Attributes: map[string]string{"driver.raw_exec": "1"},
	}
}

// ValidateConfig implements driver.Driver.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := driverspec.RawExecSpec.Decode(cfg)
	return err
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, cfg *driver.TaskConfig) (driver.Handle, error) {
	if !d.cfg.Enabled {
		return nil, driver.Unrecoverable(driver.ErrDisabled)
	}
	conf, err := driverspec.RawExecSpec.Decode(cfg.Config)
	if err != nil {
		return nil, driver.Unrecoverable(err)
	}
	command := conf["command"].(string)
	args, _ := conf["args"].([]string)
	path, err := d.resolveCommand(cfg, command)
	if err != nil {
		return nil, err
	}

	stdout, err := openOutput(cfg.StdoutPath)
	if err != nil {
		return nil, fmt.Errorf("opening stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := openOutput(cfg.StderrPath)
	if err != nil {
		return nil, fmt.Errorf("opening stderr: %w", err)
	}
	defer stderr.Close()

	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{command}, args...),
		Env:         envList(cfg.Env),
		Dir:         cfg.TaskDir,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	var startTicks uint64
	if st, err := readProcStat(d.cfg.ProcRoot, pid); err == nil {
		startTicks = st.StartTime
	}
	h := newHandle(d, &driver.HandleState{
		Driver: Name, TaskID: cfg.ID, PID: pid, ProcStartTime: startTicks, StartedAt: time.Now(),
	})
	go h.waitChild(cmd)
	d.logger.Debug("started task", "task_id", cfg.ID, "pid", pid, "command", path)
	return h, nil
}

// resolveCommand finds the executable: absolute as is, a relative path
// with a slash inside the task directory, a bare name in the task's PATH.
func (d *Driver) resolveCommand(cfg *driver.TaskConfig, command string) (string, error) {
	p, err := driverspec.ResolveInTaskDir(cfg.TaskDir, command)
	if err != nil {
		return "", driver.Unrecoverable(err)
	}
	if strings.Contains(p, "/") {
		return p, nil
	}
	pathEnv, ok := cfg.Env["PATH"]
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // relative PATH entries would depend on the client's cwd
		}
		cand := filepath.Join(dir, p)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", command)
}

// openOutput opens a task's output FIFO, or /dev/null when path is empty.
func openOutput(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	return logs.OpenWriteEnd(path)
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Recover implements driver.Driver: it re-attaches only if the PID still
// names a live process with the saved start time.
func (d *Driver) Recover(state *driver.HandleState) (driver.Handle, error) {
	if state == nil || state.PID <= 0 {
		return nil, fmt.Errorf("%w: no process ID saved", driver.ErrTaskGone)
	}
	st, err := readProcStat(d.cfg.ProcRoot, state.PID)
	switch {
	case errors.Is(err, errNoProcess):
		return nil, fmt.Errorf("%w: process %d has exited", driver.ErrTaskGone, state.PID)
	case err != nil:
		return nil, fmt.Errorf("%w: reading process %d: %v", driver.ErrTaskGone, state.PID, err)
	case state.ProcStartTime == 0 || st.StartTime != state.ProcStartTime:
		return nil, fmt.Errorf("%w: process ID %d now belongs to another process", driver.ErrTaskGone, state.PID)
	case !st.alive():
		return nil, fmt.Errorf("%w: process %d has exited", driver.ErrTaskGone, state.PID)
	}
	h := newHandle(d, state.Copy())
	go h.pollRecovered()
	d.logger.Debug("re-attached to task", "task_id", state.TaskID, "pid", state.PID)
	return h, nil
}

// handle is a raw_exec task: either the client's child (waited for) or a
// re-attached process (polled in /proc).
type handle struct {
	d     *Driver
	state *driver.HandleState
	done  chan struct{}

	mu     sync.Mutex
	result *driver.ExitResult // set before done closes; guarded by mu
}

func newHandle(d *Driver, st *driver.HandleState) *handle {
	return &handle{d: d, state: st, done: make(chan struct{})}
}

// waitChild waits for the child, then kills what is left of its group.
func (h *handle) waitChild(cmd *exec.Cmd) {
	err := cmd.Wait()
	res := &driver.ExitResult{}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
			res.ExitCode = ws.ExitStatus()
			if ws.Signaled() {
				res.Signal = int(ws.Signal())
				res.ExitCode = 128 + res.Signal
			}
		} else {
			res.ExitCode = exitErr.ExitCode()
		}
	default:
		res.ExitCode, res.Err = 1, err
	}
	h.finish(res, true)
}

// pollRecovered watches a re-attached process until it is gone or its PID
// names another process. Its exit status is not observable.
func (h *handle) pollRecovered() {
	t := time.NewTicker(recoverPoll)
	defer t.Stop()
	for range t.C {
		st, err := readProcStat(h.d.cfg.ProcRoot, h.state.PID)
		if err == nil && st.StartTime == h.state.ProcStartTime && st.alive() {
			continue
		}
		// Kill the rest of the group only if the PID was not reused.
		reused := err == nil && st.StartTime != h.state.ProcStartTime
		h.finish(&driver.ExitResult{Err: driver.ErrExitUnknown}, !reused)
		return
	}
}

// finish records the result, kills the rest of the process group when
// killGroup is set, and wakes waiters.
func (h *handle) finish(res *driver.ExitResult, killGroup bool) {
	// Whatever the task left behind in its group goes with it. The group
	// ID is the task's PID (Setpgid); Linux does not reuse a PID while a
	// group of that ID has members.
	if killGroup {
		_ = syscall.Kill(-h.state.PID, syscall.SIGKILL)
	}
	h.mu.Lock()
	h.result = res
	h.mu.Unlock()
	close(h.done)
}

// Wait implements driver.Handle.
func (h *handle) Wait(ctx context.Context) (*driver.ExitResult, error) {
	select {
	case <-h.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop implements driver.Handle: signal the group, then SIGKILL it after
// timeout.
func (h *handle) Stop(signal string, timeout time.Duration) error {
	select {
	case <-h.done:
		return nil
	default:
	}
	sig, err := driverspec.ParseSignal(signal)
	if err != nil {
		return err
	}
	if err := syscall.Kill(-h.state.PID, sig); err != nil && errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(h.state.PID, sig)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.done:
		return nil
	case <-t.C:
	}
	h.d.logger.Debug("kill timeout reached; sending SIGKILL to the process group",
		"task_id", h.state.TaskID, "pid", h.state.PID, "kill_timeout", timeout)
	_ = syscall.Kill(-h.state.PID, syscall.SIGKILL)
	select {
	case <-h.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("process %d did not exit after SIGKILL", h.state.PID)
	}
}

// State implements driver.Handle.
func (h *handle) State() *driver.HandleState { return h.state.Copy() }

// String names the handle in logs.
func (h *handle) String() string { return "raw_exec pid " + strconv.Itoa(h.state.PID) }

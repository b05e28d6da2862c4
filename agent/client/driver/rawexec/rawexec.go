package rawexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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
	// recoverPoll is how often a re-attached supervisor or task (not the
	// client's child, so it cannot be waited for) is checked in /proc.
	recoverPoll = 200 * time.Millisecond
	// killWait bounds the wait for a SIGKILLed process to disappear.
	killWait = 10 * time.Second
	// DefaultSupervisorPath is the client's own executable, whatever
	// happens to its file on disk after the client started (an upgrade
	// replacing it): the supervisor is always the same build as the
	// client that starts it.
	DefaultSupervisorPath = "/proc/self/exe"
)

// Config configures the driver.
type Config struct {
	// Enabled: raw_exec runs nothing unless enabled.
	Enabled bool
	Logger  hclog.Logger
	// ProcRoot is /proc (tests may point elsewhere).
	ProcRoot string
	// SupervisorPath is the executable started as each task's supervisor;
	// it must link this package (see init). Default
	// DefaultSupervisorPath.
	SupervisorPath string
	// Flavor, if set, makes the driver another driver on the same
	// supervisor (see Flavor); nil is raw_exec.
	Flavor *Flavor
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
	if cfg.SupervisorPath == "" {
		cfg.SupervisorPath = DefaultSupervisorPath
	}
	return &Driver{cfg: cfg, logger: cfg.Logger.Named(nameOf(cfg.Flavor))}
}

func nameOf(f *Flavor) string {
	if f != nil {
		return f.Name
	}
	return Name
}

// Name implements driver.Driver.
func (d *Driver) Name() string { return nameOf(d.cfg.Flavor) }

// supervisorDir is the supervisor directory of the task: "<task>@<driver>".
func (d *Driver) supervisorDir(cfg *driver.TaskConfig) string {
	return supervisorDirOf(cfg, "@"+d.Name())
}

// prepare decodes the task's config into what the supervisor launches.
func (d *Driver) prepare(cfg *driver.TaskConfig) (*LaunchSpec, error) {
	if d.cfg.Flavor != nil {
		return d.cfg.Flavor.Prepare(cfg)
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
	return &LaunchSpec{Path: path, Args: append([]string{command}, args...), Env: envList(cfg.Env), Dir: cfg.TaskDir}, nil
}

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

// Start implements driver.Driver: it starts the task's supervisor, which
// starts the task, and returns once the supervisor reports the task's PID.
func (d *Driver) Start(ctx context.Context, cfg *driver.TaskConfig) (driver.Handle, error) {
	if !d.cfg.Enabled {
		return nil, driver.Unrecoverable(driver.NodeFault(driver.ErrDisabled))
	}
	launch, err := d.prepare(cfg)
	if err != nil {
		return nil, err
	}

	supDir := d.supervisorDir(cfg)
	if err := os.MkdirAll(supDir, 0o700); err != nil {
		return nil, driver.NodeFault(fmt.Errorf("creating the supervisor directory: %w", err))
	}
	statusPath := filepath.Join(supDir, exitStatusFile)
	// A status or run record left by an earlier run must not stand for
	// this one.
	for _, name := range []string{exitStatusFile, runFile} {
		if err := os.Remove(filepath.Join(supDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, driver.NodeFault(fmt.Errorf("removing an old %s: %w", name, err))
		}
	}
	spec, err := json.Marshal(&supervisorSpec{LaunchSpec: *launch, StatusPath: statusPath})
	if err != nil {
		return nil, err
	}
	cmd, report, err := d.startSupervisor(cfg, supDir, spec)
	if err != nil {
		return nil, driver.NodeFault(err)
	}
	supPID := cmd.Process.Pid
	// The supervisor is this process's child until Wait: its PID is
	// stable, so this start time is its own.
	supStat, err := readProcStat(d.cfg.ProcRoot, supPID)
	if err != nil {
		report.Close() // a supervisor that cannot report kills its task
		go func() { _ = cmd.Wait() }()
		return nil, driver.NodeFault(fmt.Errorf("reading the supervisor's start time: %w", err))
	}
	var rep *supervisorReport
	reports := readReport(report)
	select {
	case res := <-reports:
		rep, err = res.rep, res.err
	case <-ctx.Done():
		// The supervisor may be starting the task right now: hear it
		// out in the background and take down what it started.
		go func() {
			if res := <-reports; res.err == nil {
				_ = syscall.Kill(-res.rep.PID, syscall.SIGKILL)
			}
			_ = cmd.Wait()
		}()
		return nil, ctx.Err()
	}
	if err != nil {
		go func() { _ = cmd.Wait() }()
		if errors.Is(err, errNoReport) {
			err = driver.NodeFault(fmt.Errorf("%w (see %s)", err, filepath.Join(supDir, supervisorLogFile)))
		}
		return nil, err
	}
	h := newHandle(d, &driver.HandleState{
		Driver: d.Name(), TaskID: cfg.ID, PID: rep.PID, ProcStartTime: rep.StartTime, StartedAt: time.Now(),
	}, supervisorRef{pid: supPID, startTime: supStat.StartTime, statusPath: statusPath})
	go h.waitSupervisor(cmd)
	d.logger.Debug("started task", "task_id", cfg.ID, "pid", rep.PID, "supervisor_pid", supPID, "command", launch.Path)
	return h, nil
}

// startSupervisor starts the task's supervisor in a session of its own, so
// that signals to the client's process group (a terminal's ^C, a group
// kill) never reach it, and returns it with the read end of its report
// pipe.
func (d *Driver) startSupervisor(cfg *driver.TaskConfig, supDir string, spec []byte) (*exec.Cmd, *os.File, error) {
	stdout, err := openOutput(cfg.StdoutPath)
	if err != nil {
		return nil, nil, fmt.Errorf("opening stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := openOutput(cfg.StderrPath)
	if err != nil {
		return nil, nil, fmt.Errorf("opening stderr: %w", err)
	}
	defer stderr.Close()
	logf, err := os.OpenFile(filepath.Join(supDir, supervisorLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the supervisor log: %w", err)
	}
	defer logf.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer reportW.Close()
	cmd := &exec.Cmd{
		Path: d.cfg.SupervisorPath,
		Args: []string{d.supervisorArg0(), cfg.ID},
		// GORACE matters only to race-enabled builds (tests), which
		// would otherwise linger a second at exit.
		Env: []string{supervisorEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Dir: "/",
		// The spec goes through a pipe, not the command line, so the
		// supervisor never shows the task's arguments in /proc.
		Stdin:  bytes.NewReader(spec),
		Stderr: logf,
		// Must match reportFD, stdoutFD, stderrFD.
		ExtraFiles:  []*os.File{reportW, stdout, stderr},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		reportR.Close()
		return nil, nil, fmt.Errorf("starting the %s supervisor %s: %w", d.Name(), d.cfg.SupervisorPath, err)
	}
	return cmd, reportR, nil
}

// errNoReport: the supervisor exited without saying whether the task runs.
var errNoReport = errors.New("the task's supervisor exited before starting the task")

// supervisorArg0 is argv[0] of the driver's supervisors.
func (d *Driver) supervisorArg0() string {
	if d.cfg.Flavor != nil {
		return d.cfg.Flavor.SupervisorArg0
	}
	return supervisorArg0
}

// reportResult is the supervisor's report, or why there is none.
type reportResult struct {
	rep *supervisorReport
	err error
}

// readReport reads the supervisor's report from r in the background and
// closes r. The channel yields once: a report of a running task, or an
// error.
func readReport(r *os.File) <-chan reportResult {
	ch := make(chan reportResult, 1)
	go func() {
		defer r.Close()
		var rep supervisorReport
		err := json.NewDecoder(r).Decode(&rep)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			err = errNoReport
		case err != nil:
			err = fmt.Errorf("reading the supervisor's report: %w", err)
		case rep.Error != "" && rep.NodeFault:
			err = driver.NodeFault(errors.New(rep.Error))
		case rep.Error != "":
			err = errors.New(rep.Error)
		case rep.PID <= 0:
			err = fmt.Errorf("the supervisor reported process ID %d", rep.PID)
		}
		if err != nil {
			ch <- reportResult{err: err}
			return
		}
		ch <- reportResult{rep: &rep}
	}()
	return ch
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

// Recover implements driver.Driver. A task with a supervisor is
// re-attached while its supervisor (the same PID with the saved start
// time) runs; when the supervisor is gone, the exit status it recorded
// stands for the task, which ended while the client was away. Without
// either (a state saved before supervisors, or a supervisor that was
// killed), the task itself is re-attached if its PID still names it, and
// its exit status is unknowable.
func (d *Driver) Recover(state *driver.HandleState) (driver.Handle, error) {
	if state == nil || state.PID <= 0 {
		return nil, fmt.Errorf("%w: no process ID saved", driver.ErrTaskGone)
	}
	logger := d.logger.With("task_id", state.TaskID, "pid", state.PID)
	if sup, ok := loadSupervisor(state); ok {
		h := newHandle(d, state.Copy(), sup)
		if d.running(sup.pid, sup.startTime) {
			go h.pollSupervisor()
			logger.Debug("re-attached to task", "supervisor_pid", sup.pid)
			return h, nil
		}
		res, err := readExitStatus(sup.statusPath, state)
		if err == nil {
			h.finish(res, false)
			logger.Debug("task exited while the client was away", "result", res)
			return h, nil
		}
		logger.Warn("the task's supervisor is gone without an exit status; watching the task alone", "error", err)
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
	h := newHandle(d, withoutSupervisor(state), supervisorRef{})
	go h.pollTask(errReattached)
	logger.Debug("re-attached to task without a supervisor")
	return h, nil
}

// Adopt implements driver.Adopter: it finds the run of the task a
// supervisor recorded (run.json) and the client never saw end, and
// re-attaches to it as Recover does: to a supervisor still running, or to
// the exit status of a run that ended meanwhile. Without a record (no run
// started, or the client saw it end) it returns an error wrapping
// driver.ErrTaskGone.
func (d *Driver) Adopt(cfg *driver.TaskConfig) (driver.Handle, error) {
	supDir := d.supervisorDir(cfg)
	rec, err := readRunRecord(supDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no unrecorded run", driver.ErrTaskGone)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", driver.ErrTaskGone, err)
	}
	st := &driver.HandleState{Driver: d.Name(), TaskID: cfg.ID, PID: rec.TaskPID, ProcStartTime: rec.TaskStartTime, StartedAt: time.Now()}
	saveSupervisor(st, supervisorRef{pid: rec.SupervisorPID, startTime: rec.SupervisorStartTime,
		statusPath: filepath.Join(supDir, exitStatusFile)})
	h, err := d.Recover(st)
	if err != nil {
		return nil, err
	}
	d.logger.Info("adopted a task started before the client restarted", "task_id", cfg.ID, "pid", rec.TaskPID)
	return h, nil
}

// running reports whether pid names a live process that started at
// startTime.
func (d *Driver) running(pid int, startTime uint64) bool {
	st, err := readProcStat(d.cfg.ProcRoot, pid)
	return err == nil && st.StartTime == startTime && st.alive()
}

// Exec implements driver.Execer: the command runs on the host, as the
// task does, with the task's environment and in its directory, in a
// process group of its own that is killed when ctx ends.
func (d *Driver) Exec(ctx context.Context, cfg *driver.TaskConfig, command string, args []string) (int, error) {
	path, err := d.resolveCommand(cfg, command)
	if err != nil {
		return -1, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = envList(cfg.Env)
	cmd.Dir = cfg.TaskDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/internal/backoff"
)

// init turns this executable into a task supervisor when the client
// started it as one (the re-exec pattern): it works in `drover` and in
// every test binary that links this package, with no subcommand and no
// TestMain. It never returns in a supervisor.
func init() {
	if !IsSupervisor(supervisorArg0) {
		return
	}
	os.Exit(runSupervisor(plainLauncher{}))
}

// supervisorIgnores are the signals a supervisor receives and discards. The
// client stops a task by signalling the task's process group, never the
// supervisor; anything sent to the supervisor (a terminal's ^C, a service
// manager stopping the client) must not keep the task's exit from being
// recorded. The signals are caught, not set to SIG_IGN: a caught signal
// reverts to its default in the task, an ignored one would stay ignored.
var supervisorIgnores = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
}

// runSupervisor starts the task the client describes on stdin as a child
// in its own process group, reports its PID and start time on fd 3, waits
// for it, kills what is left of its group, writes its exit status, and
// returns the supervisor's exit code.
func runSupervisor(l Launcher) int {
	logger := hclog.New(&hclog.LoggerOptions{Name: "raw_exec_supervisor", Output: os.Stderr, Level: hclog.Info})
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, supervisorIgnores...)
	go func() {
		for s := range sigs {
			logger.Debug("ignoring signal", "signal", s)
		}
	}()
	// Inherited descriptors are not close-on-exec; the task must get its
	// output on 1 and 2 only, and never the report pipe.
	for fd := reportFD; fd <= stderrFD; fd++ {
		syscall.CloseOnExec(fd)
	}
	report := os.NewFile(reportFD, "report")
	stdout := os.NewFile(stdoutFD, "stdout")
	stderr := os.NewFile(stderrFD, "stderr")

	var spec supervisorSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		sendReport(report, &supervisorReport{Error: "raw_exec supervisor: reading the task: " + err.Error()})
		return 1
	}
	os.Stdin.Close()
	logger = logger.With("status_path", spec.StatusPath)

	// stdout and stderr stay open here after the task has them: see
	// awaitOutputRead.
	cmd, err := l.Start(&spec.LaunchSpec, stdout, stderr)
	if err != nil {
		sendReport(report, &supervisorReport{Error: err.Error(), NodeFault: errors.Is(err, driver.ErrNodeFault)})
		return 1
	}
	pid := cmd.Process.Pid
	// The task is this process's child: its PID cannot name another
	// process before it is reaped, so this start time is the task's.
	st, err := readProcStat("/proc", pid)
	if err == nil {
		// Before the client hears of the task: a client that dies before
		// it saves the task's handle finds the task by this record.
		err = writeRunRecord(filepath.Dir(spec.StatusPath), pid, st.StartTime)
	}
	if err == nil {
		err = sendReport(report, &supervisorReport{PID: pid, StartTime: st.StartTime})
	}
	if err != nil {
		// The client never learned of the task, so nothing would ever
		// stop it: take it down now.
		logger.Error("cannot report the task to the client; killing it", "pid", pid, "error", err)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		l.Exited(&spec.LaunchSpec, &exitStatus{TaskPID: pid})
		return 1
	}

	es := waitTask(cmd)
	es.TaskStartTime = st.StartTime
	l.Exited(&spec.LaunchSpec, es)
	if err := writeExitStatus(spec.StatusPath, es); err != nil {
		logger.Error("cannot record the task's exit", "pid", pid, "exit_code", es.ExitCode, "error", err)
		return 1
	}
	// Once the allocation's directory is gone (collected, or a dev agent's
	// data discarded) no client can ever read the pipes: stop waiting.
	dirGone := func() bool {
		_, err := os.Stat(filepath.Dir(spec.StatusPath))
		return errors.Is(err, fs.ErrNotExist)
	}
	if !awaitOutputRead(outputLinger, dirGone, stdout, stderr) {
		logger.Warn("no client read the task's last output; it is lost", "pid", pid, "waited_at_most", outputLinger)
	}
	return 0
}

// writeRunRecord records this supervisor and its task in dir.
func writeRunRecord(dir string, taskPID int, taskStart uint64) error {
	self, err := readProcStat("/proc", os.Getpid())
	if err != nil {
		return err
	}
	return writeJSONFile(filepath.Join(dir, runFile), &runRecord{
		SupervisorPID: os.Getpid(), SupervisorStartTime: self.StartTime, TaskPID: taskPID, TaskStartTime: taskStart})
}

// outputLinger bounds how long a supervisor whose task has exited waits
// for a client to read the task's last output.
const outputLinger = 10 * time.Minute

// awaitOutputRead keeps the task's output pipes open until a client has
// read what they hold, for at most linger, and reports whether it was
// read. A pipe that no process holds open loses its contents, so without
// this the last output of a task that ends while no client runs would be
// gone before the next client opens the FIFO. It gives up early, once
// gone reports that no client can come any more.
func awaitOutputRead(linger time.Duration, gone func() bool, pipes ...*os.File) bool {
	ctx, cancel := context.WithTimeout(context.Background(), linger)
	defer cancel()
	b := backoff.New(2*time.Millisecond, time.Second)
	last := -1
	for {
		n := 0
		for _, f := range pipes {
			n += pipeBuffered(f)
		}
		if n == 0 {
			return true
		}
		if gone() {
			return false
		}
		if last >= 0 && n < last {
			b.Reset() // a client is reading
		}
		last = n
		if b.Wait(ctx) != nil {
			return false
		}
	}
}

// pipeBuffered returns how many bytes wait in the pipe f (0 for anything
// that is not a pipe).
func pipeBuffered(f *os.File) int {
	var n int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return 0
	}
	return int(n)
}

// sendReport writes the report and closes the pipe.
func sendReport(f *os.File, r *supervisorReport) error {
	err := json.NewEncoder(f).Encode(r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// waitTask waits for the task to exit, kills whatever is left of its
// process group, reaps it and returns its exit status.
func waitTask(cmd *exec.Cmd) *exitStatus {
	pid := cmd.Process.Pid
	// Wait without reaping first: while the task is an unreaped zombie its
	// PID, and so its process group ID, cannot be reused, so the SIGKILL
	// reaches only what the task left behind.
	pinned := waitExited(pid) == nil
	if pinned {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	err := cmd.Wait()
	if !pinned {
		// A group with live members keeps its ID from being reused.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	es := &exitStatus{TaskPID: pid, ExitedAt: time.Now()}
	es.ExitCode, es.Signal, es.Error = exitCodeOf(err)
	return es
}

// exitCodeOf turns cmd.Wait's error into an exit code and signal; a task
// killed by a signal exits with 128+signal, as a shell reports it.
func exitCodeOf(err error) (code, sig int, msg string) {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, 0, ""
	case errors.As(err, &exitErr):
		ws, ok := exitErr.Sys().(syscall.WaitStatus)
		if !ok {
			return exitErr.ExitCode(), 0, ""
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal()), ""
		}
		return ws.ExitStatus(), 0, ""
	default:
		return 1, 0, err.Error()
	}
}

// pPID is waitid's P_PID id type.
const pPID = 1

// waitExited blocks until child pid has exited, leaving it unreaped
// (waitid with WNOWAIT).
func waitExited(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}

package rawexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs/driverspec"
)

var (
	// errReattached: the task was re-attached without a supervisor to
	// record its exit.
	errReattached = fmt.Errorf("%w: the task was re-attached after a client restart without its supervisor", driver.ErrExitUnknown)
	// errSupervisorLost: the supervisor ended without recording the exit.
	errSupervisorLost = fmt.Errorf("%w: the task's supervisor exited without recording it", driver.ErrExitUnknown)
)

// handle is a raw_exec task. Its result comes from the exit status its
// supervisor records, found when the supervisor exits: waited for when
// the supervisor is the client's child, polled in /proc when it was
// re-attached. A task without a supervisor (see Recover) is polled itself.
type handle struct {
	d     *Driver
	state *driver.HandleState
	sup   supervisorRef // zero: no supervisor
	exit  *driver.Exit
	cpu   driver.CPUSampler // for TaskStats
}

func newHandle(d *Driver, st *driver.HandleState, sup supervisorRef) *handle {
	if sup.valid() {
		saveSupervisor(st, sup)
	}
	return &handle{d: d, state: st, sup: sup, exit: driver.NewExit()}
}

// waitSupervisor waits for the supervisor the client started.
func (h *handle) waitSupervisor(cmd *exec.Cmd) {
	if err := cmd.Wait(); err != nil {
		h.d.logger.Debug("supervisor exited", "task_id", h.state.TaskID, "error", err)
	}
	h.finishFromStatus()
}

// pollSupervisor watches a re-attached supervisor until it is gone (or
// its PID names another process).
func (h *handle) pollSupervisor() {
	t := time.NewTicker(recoverPoll)
	defer t.Stop()
	for range t.C {
		if !h.d.running(h.sup.pid, h.sup.startTime) {
			h.finishFromStatus()
			return
		}
	}
}

// finishFromStatus ends the handle with the exit status the supervisor
// recorded. Without one (the supervisor was killed, or could not write
// it), the task is watched until it is gone and its exit is unknown.
func (h *handle) finishFromStatus() {
	res, err := readExitStatus(h.sup.statusPath, h.state)
	if err == nil {
		// The supervisor killed the rest of the group before it exited.
		h.finish(res, false)
		return
	}
	h.d.logger.Warn("supervisor exited without recording the task's exit", "task_id", h.state.TaskID,
		"pid", h.state.PID, "error", err)
	h.pollTask(errSupervisorLost)
}

// pollTask watches the task's own PID until it is gone or names another
// process, then ends the handle with an unknown exit (why says why).
func (h *handle) pollTask(why error) {
	t := time.NewTicker(recoverPoll)
	defer t.Stop()
	for {
		st, err := readProcStat(h.d.cfg.ProcRoot, h.state.PID)
		if err != nil || st.StartTime != h.state.ProcStartTime || !st.alive() {
			// Kill the rest of the group only if the PID was not reused.
			reused := err == nil && st.StartTime != h.state.ProcStartTime
			h.finish(&driver.ExitResult{Err: why}, !reused)
			return
		}
		<-t.C
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
	if f := h.d.cfg.Flavor; f != nil && f.Cleanup != nil {
		f.Cleanup(h.state)
	}
	// The client has seen this run end: Adopt must not find it again.
	// (Its exit status stays: a client that dies before recording the
	// exit recovers it from the saved handle.)
	if h.sup.valid() {
		dir := filepath.Dir(h.sup.statusPath)
		if rec, err := readRunRecord(dir); err == nil && rec.TaskPID == h.state.PID && rec.TaskStartTime == h.state.ProcStartTime {
			_ = os.Remove(filepath.Join(dir, runFile))
		}
	}
	h.exit.Set(res)
}

// Wait implements driver.Handle.
func (h *handle) Wait(ctx context.Context) (*driver.ExitResult, error) { return h.exit.Wait(ctx) }

// Stop implements driver.Handle: signal the task's group, then SIGKILL it
// after timeout. The supervisor is never signalled: it records the exit
// the signals cause.
func (h *handle) Stop(signal string, timeout time.Duration) error {
	select {
	case <-h.exit.Done():
		return nil
	default:
	}
	sig, err := driverspec.ParseSignal(signal)
	if err != nil {
		return err
	}
	h.signalTask(sig)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.exit.Done():
		return nil
	case <-t.C:
	}
	h.d.logger.Debug("kill timeout reached; sending SIGKILL to the process group",
		"task_id", h.state.TaskID, "pid", h.state.PID, "kill_timeout", timeout)
	h.signalTask(syscall.SIGKILL)
	select {
	case <-h.exit.Done():
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("process %d did not exit after SIGKILL", h.state.PID)
	}
}

// Signal implements driver.Signaler: sig goes to the task's process
// group, as a stop's signal does.
func (h *handle) Signal(signal string) error {
	select {
	case <-h.exit.Done():
		return nil
	default:
	}
	sig, err := driverspec.ParseSignal(signal)
	if err != nil {
		return err
	}
	h.signalTask(sig)
	return nil
}

// signalTask sends sig to the task's process group (to the task alone if
// it left the group), unless its PID now names another process: then the
// task and its group are gone, and the signal could hit a stranger.
func (h *handle) signalTask(sig syscall.Signal) {
	if st, err := readProcStat(h.d.cfg.ProcRoot, h.state.PID); err == nil && st.StartTime != h.state.ProcStartTime {
		return
	}
	if err := syscall.Kill(-h.state.PID, sig); err != nil && errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(h.state.PID, sig)
	}
}

// State implements driver.Handle.
func (h *handle) State() *driver.HandleState { return h.state.Copy() }

// String names the handle in logs.
func (h *handle) String() string { return h.d.Name() + " pid " + strconv.Itoa(h.state.PID) }

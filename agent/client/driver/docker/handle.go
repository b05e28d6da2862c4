package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs/driverspec"
)

// errContainerGone: the container disappeared before its exit was seen.
var errContainerGone = fmt.Errorf("%w: the container was removed before its exit was seen", driver.ErrExitUnknown)

// handle is one container. Two goroutines serve it until the container
// exits or the driver is closed: wait (the daemon's wait, then the exit's
// details, cleanup and the result) and streamLogs.
type handle struct {
	d        *Driver
	state    *driver.HandleState
	id       string
	exit     *driver.Exit
	logsDone chan struct{}
}

type containerInfo = container.InspectResponse

// newHandle starts serving a container; since is where its log stream
// resumes (zero: from the start).
func (d *Driver) newHandle(st *driver.HandleState, since time.Time) *handle {
	h := &handle{d: d, state: st, id: st.Data[dataContainerID], exit: driver.NewExit(), logsDone: make(chan struct{})}
	d.wg.Add(2)
	go h.streamLogs(since)
	go h.wait()
	return h
}

// wait waits for the container to stop, then records its exit: the code,
// OOM kill, the daemon's error. It drains the log stream, removes the
// container (gc.container) and lets the image and cores go before waking
// waiters. A closed driver leaves everything as it is.
func (h *handle) wait() {
	defer h.d.wg.Done()
	ctx := h.d.ctx
	for {
		w := h.d.client.ContainerWait(ctx, h.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		var err error
		select {
		case <-w.Result:
		case err = <-w.Error:
		}
		if ctx.Err() != nil {
			return // detached
		}
		if err == nil {
			break
		}
		ins, ierr := h.d.inspect(h.id)
		if cerrdefs.IsNotFound(ierr) {
			h.finish(&driver.ExitResult{Err: errContainerGone})
			return
		}
		if ierr == nil && ins.State != nil && !ins.State.Running {
			break
		}
		h.d.logger.Warn("waiting for the container failed; retrying", "container_id", shortID(h.id), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	res := &driver.ExitResult{}
	ins, err := h.d.inspect(h.id)
	switch {
	case err != nil:
		res.Err = fmt.Errorf("%w: inspecting the exited container: %v", driver.ErrExitUnknown, err)
	case ins.State != nil:
		res.ExitCode = ins.State.ExitCode
		switch {
		case ins.State.OOMKilled:
			res.Err = ErrOOMKilled
		case ins.State.Error != "":
			res.Err = errors.New(ins.State.Error)
		}
	}
	select {
	case <-h.logsDone:
	case <-time.After(logDrainWait):
		h.d.logger.Warn("the container's log stream did not end; its last output may be missing", "container_id", shortID(h.id))
	case <-ctx.Done():
		return
	}
	h.finish(res)
}

// finish cleans up after the container and records res.
func (h *handle) finish(res *driver.ExitResult) {
	if h.d.cfg.GC.Container {
		h.d.removeContainer(h.id)
	}
	h.d.images.release(h.state.TaskID)
	h.d.cores.release(h.state.TaskID)
	h.exit.Set(res)
}

// Wait implements driver.Handle.
func (h *handle) Wait(ctx context.Context) (*driver.ExitResult, error) { return h.exit.Wait(ctx) }

// Stop implements driver.Handle: signal, then SIGKILL after timeout.
func (h *handle) Stop(signal string, timeout time.Duration) error {
	select {
	case <-h.exit.Done():
		return nil
	default:
	}
	if _, err := driverspec.ParseSignal(signal); err != nil {
		return err
	}
	if err := h.kill(signalName(signal)); err != nil {
		h.d.logger.Debug("sending the kill signal failed", "container_id", shortID(h.id), "error", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.exit.Done():
		return nil
	case <-t.C:
	}
	h.d.logger.Debug("kill timeout reached; sending SIGKILL", "container_id", shortID(h.id), "kill_timeout", timeout)
	if err := h.kill("SIGKILL"); err != nil {
		h.d.logger.Debug("sending SIGKILL failed", "container_id", shortID(h.id), "error", err)
	}
	select {
	case <-h.exit.Done():
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("container %s did not exit after SIGKILL", shortID(h.id))
	}
}

// Signal implements driver.Signaler.
func (h *handle) Signal(signal string) error {
	select {
	case <-h.exit.Done():
		return nil
	default:
	}
	if _, err := driverspec.ParseSignal(signal); err != nil {
		return err
	}
	return h.kill(signalName(signal))
}

func (h *handle) kill(sig string) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := h.d.client.ContainerKill(ctx, h.id, client.ContainerKillOptions{Signal: sig})
	return err
}

// State implements driver.Handle.
func (h *handle) State() *driver.HandleState { return h.state.Copy() }

// signalName is a signal as docker takes it: "SIGTERM" (empty: the
// default kill signal).
func signalName(s string) string {
	if s == "" {
		s = driverspec.DefaultKillSignal
	}
	sig, _ := driverspec.ParseSignal(s)
	return fmt.Sprintf("%d", int(sig))
}

package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/drover-project/drover/agent/client/cgroup"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/driver/rawexec"
	"github.com/drover-project/drover/structs/driverspec"
)

// How the supervisor and a task's init find each other (see doc.go).
const (
	supervisorArg0 = "drover-exec-supervisor"
	initArg0       = "drover-exec-init"
	initEnv        = "DROVER_EXEC_INIT"
	// initSyncFD: the init reads one byte once it is in its cgroup.
	initSyncFD = 3
	// initErrFD: the init writes why it could not exec the task; the
	// pipe closes empty (close-on-exec) when the exec succeeded.
	initErrFD = 4
)

// init turns this executable into an exec supervisor or a task's init
// when it was started as one. It never returns in either.
func init() {
	if rawexec.IsSupervisor(supervisorArg0) {
		os.Exit(rawexec.RunSupervisor(launcher{}))
	}
	if os.Getenv(initEnv) == "1" && len(os.Args) > 0 && os.Args[0] == initArg0 {
		os.Exit(runInit())
	}
}

// initSpec is what the init reads on stdin.
type initSpec struct {
	rawexec.LaunchSpec
	Launch launchConfig `json:"launch"`
}

// launcher starts exec tasks in a supervisor (rawexec.Launcher).
type launcher struct{}

// Start creates the task's cgroup, starts the init in new namespaces,
// moves it into the cgroup, lets it go on, and waits until it has
// exec'd the task or failed to.
func (launcher) Start(spec *rawexec.LaunchSpec, stdout, stderr *os.File) (*exec.Cmd, error) {
	var lc launchConfig
	if err := json.Unmarshal(spec.Config, &lc); err != nil {
		return nil, fmt.Errorf("exec: reading the launch config: %w", err)
	}
	// The task's cgroup is the node's to provide: a failure is a node
	// fault (driver.ErrNodeFault), reported as such by the supervisor.
	g, err := taskGroup(lc.Cgroup)
	if err != nil {
		return nil, driver.NodeFault(err)
	}
	if err := g.Create(lc.Limits); err != nil {
		return nil, driver.NodeFault(fmt.Errorf("creating the task's cgroup: %w", err))
	}
	in, err := json.Marshal(&initSpec{LaunchSpec: *spec, Launch: lc})
	if err != nil {
		_ = g.Destroy()
		return nil, err
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		_ = g.Destroy()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		syncR.Close()
		syncW.Close()
		_ = g.Destroy()
		return nil, err
	}
	defer errR.Close()
	defer syncW.Close()
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS)
	if lc.PidMode != driverspec.IsolationHost {
		flags |= syscall.CLONE_NEWPID
	}
	if lc.IpcMode != driverspec.IsolationHost {
		flags |= syscall.CLONE_NEWIPC
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{initArg0}, Env: []string{initEnv + "=1"}, Dir: "/",
		Stdin: bytes.NewReader(in), Stdout: stdout, Stderr: stderr,
		ExtraFiles:  []*os.File{syncR, errW}, // initSyncFD, initErrFD
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: flags, Setsid: true},
	}
	err = cmd.Start()
	syncR.Close()
	errW.Close()
	if err != nil {
		_ = g.Destroy()
		return nil, fmt.Errorf("starting the task's init: %w", err)
	}
	fail := func(err error) (*exec.Cmd, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = g.Destroy()
		return nil, err
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		return fail(err)
	}
	if _, err := syncW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("releasing the task's init: %w", err))
	}
	msg, err := io.ReadAll(errR)
	if err != nil {
		return fail(fmt.Errorf("reading the task's init: %w", err))
	}
	if len(msg) > 0 {
		return fail(errors.New(string(msg)))
	}
	return cmd, nil
}

// Exited explains an OOM kill and removes the task's cgroup with anything
// left in it (a task in the host's PID namespace may leave processes).
func (launcher) Exited(spec *rawexec.LaunchSpec, es *rawexec.ExitStatus) {
	var lc launchConfig
	if json.Unmarshal(spec.Config, &lc) != nil {
		return
	}
	g, err := taskGroup(lc.Cgroup)
	if err != nil {
		return
	}
	if n, err := g.OOMKills(); err == nil && n > 0 && es.Signal == int(syscall.SIGKILL) && es.Error == "" {
		es.Error, es.OOMKilled = OOMKilled, true
	}
	_ = g.Destroy()
}

// OOMKilled is the exit message of a task the kernel killed for going
// over its memory limit, as Nomad's.
const OOMKilled = "OOM Killed"

// taskGroup is the cgroup called name on this machine.
func taskGroup(name string) (*cgroup.Group, error) {
	h, err := cgroup.Detect()
	if err != nil {
		return nil, err
	}
	return h.Group(name)
}

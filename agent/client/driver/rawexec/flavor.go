package rawexec

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"

	"github.com/drover-project/drover/agent/client/driver"
)

// Flavor turns the driver into another driver built on the same
// supervisor, re-attachment and exit recording (the exec driver, which
// isolates its tasks): it names the driver, prepares each task's launch,
// and cleans up after runs. Its supervisor side is a Launcher, run by the
// flavor's package init through RunSupervisor when argv[0] is
// SupervisorArg0.
type Flavor struct {
	// Name is the driver's name (HandleState.Driver) and names the
	// supervisor directory "<task>@<Name>".
	Name string
	// SupervisorArg0 is argv[0] of the flavor's supervisors.
	SupervisorArg0 string
	// Prepare decodes a task's config into what its supervisor launches;
	// a config error is returned wrapped in driver.ErrUnrecoverable.
	Prepare func(cfg *driver.TaskConfig) (*LaunchSpec, error)
	// Cleanup removes what a run left behind once the client has seen it
	// end (the supervisor normally did already; it may have been killed).
	Cleanup func(st *driver.HandleState)
	// Stats reads a running task's usage and cumulative CPU times (the
	// driver turns them into percentages); nil: the task's process tree
	// in /proc.
	Stats func(st *driver.HandleState) (*driver.ResourceUsage, CPUTimes, error)
}

// LaunchSpec is the task a supervisor launches.
type LaunchSpec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Config is the flavor launcher's own (nil for raw_exec).
	Config json.RawMessage `json:"config,omitempty"`
}

// Launcher starts tasks in a supervisor.
type Launcher interface {
	// Start starts the task as a child of the calling process, in a
	// process group whose ID is the child's PID, with stdout and stderr
	// as its output, and returns once the child runs the task's command
	// or failed to (the error then says why, as the kernel did).
	Start(spec *LaunchSpec, stdout, stderr *os.File) (*exec.Cmd, error)
	// Exited runs after the task exited and the rest of its process group
	// was killed: it takes down whatever else the task left, and may
	// explain the exit by setting es.Error (an OOM kill).
	Exited(spec *LaunchSpec, es *ExitStatus)
}

// ExitStatus is how a task ended, as the supervisor records it.
type ExitStatus = exitStatus

// RunSupervisor runs this process as a supervisor whose tasks l starts,
// and returns its exit code. A flavor's package init calls it when
// IsSupervisor(arg0) holds.
func RunSupervisor(l Launcher) int { return runSupervisor(l) }

// IsSupervisor reports whether this process was started as a supervisor
// whose argv[0] is arg0.
func IsSupervisor(arg0 string) bool {
	return os.Getenv(supervisorEnv) == "1" && len(os.Args) > 0 && os.Args[0] == arg0
}

// plainLauncher is raw_exec's: the command as a plain child process.
type plainLauncher struct{}

func (plainLauncher) Start(spec *LaunchSpec, stdout, stderr *os.File) (*exec.Cmd, error) {
	cmd := &exec.Cmd{
		Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
		Stdout: stdout, Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	return cmd, cmd.Start()
}

func (plainLauncher) Exited(*LaunchSpec, *ExitStatus) {}

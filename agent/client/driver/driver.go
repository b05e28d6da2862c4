package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-project/drover/structs"
)

// Driver runs tasks of one kind. Implementations must be safe for
// concurrent use: one driver serves every task runner of the client.
type Driver interface {
	// Name is the name tasks use in their `driver` field.
	Name() string
	// Fingerprint reports whether the driver is usable on this machine;
	// its Attributes become node attributes ("driver.<name>" = "1" for a
	// healthy driver is added by the client).
	Fingerprint() *structs.DriverInfo
	// ValidateConfig checks a task's config block against the driver's
	// schema; the error is a *structs.ValidationError naming each field.
	ValidateConfig(cfg map[string]any) error
	// Start starts the task and returns once it runs (or failed to). A
	// start error wrapping ErrUnrecoverable is never retried; any other
	// start error is subject to the restart policy. ctx bounds the start
	// only: the task outlives it.
	Start(ctx context.Context, cfg *TaskConfig) (Handle, error)
	// Recover re-attaches to a task started by an earlier client from the
	// state its handle saved. A driver that knows how a task ended while
	// no client ran returns a handle whose Wait reports that exit at once.
	// Otherwise it returns an error wrapping ErrTaskGone when the task no
	// longer runs (including when its process ID now belongs to another
	// process). Recover must accept states saved by older clients.
	Recover(state *HandleState) (Handle, error)
}

// Adopter is a Driver whose tasks outlive the client. Adopt returns a
// handle to a run of the task (cfg as Start would get it) that an earlier
// client started but never recorded: it died between starting the task
// and saving the handle. The client calls it before starting a task it
// restored without a handle, so that run is not doubled. With no such run
// (or one the client saw end) it returns an error wrapping ErrTaskGone.
type Adopter interface {
	Adopt(cfg *TaskConfig) (Handle, error)
}

// Signaler is a Handle that can signal its running task (a template's
// change_signal). Signal sends signal (a name such as "SIGHUP") and
// returns at once; signalling a finished task is a no-op.
type Signaler interface {
	Signal(signal string) error
}

// Execer is a Driver that can run a command in a task's context, as
// Nomad's drivers' ExecTask does (a template's change_script): with the
// task's environment, in its directory. Exec returns the command's exit
// code once it exits; when ctx ends first, the command (and what it
// started) is killed and ctx's error returned.
type Execer interface {
	Exec(ctx context.Context, cfg *TaskConfig, command string, args []string) (int, error)
}

// Handle is a running (or finished) task.
type Handle interface {
	// Wait blocks until the task exits or ctx ends; many callers may wait.
	Wait(ctx context.Context) (*ExitResult, error)
	// Stop asks the task to exit with signal (a name such as "SIGINT";
	// empty means SIGINT) and kills it outright (with everything it
	// started) if it has not exited after timeout. It returns once the
	// task has exited. Stopping a finished task is a no-op.
	Stop(signal string, timeout time.Duration) error
	// State is what Recover needs to re-attach; the client persists it.
	State() *HandleState
}

// TaskConfig is everything a driver needs to start one task. The task
// runner builds it: directories exist, Env is complete (task variables
// included), and StdoutPath/StderrPath name FIFOs that the client drains
// into rotated log files.
type TaskConfig struct {
	// ID identifies the task run: "<alloc id>/<task name>".
	ID        string
	AllocID   string
	TaskName  string
	JobName   string
	GroupName string
	Namespace string
	// Config is the task's driver config block, a copy with the ${...}
	// references in its strings resolved (unknown ones left as written).
	Config map[string]any
	// Env is the complete environment of the task.
	Env map[string]string
	// User to run as (drivers that cannot switch users ignore it).
	User string
	// TaskDir is the task's own directory and its working directory;
	// AllocDir is the allocation's root (the shared "alloc" dir is inside).
	TaskDir  string
	AllocDir string
	// StdoutPath and StderrPath are where the task's output goes.
	StdoutPath string
	StderrPath string
	// Resources allocated to the task (may be nil in tests).
	Resources *structs.AllocatedTaskResources
	// Ports are the allocation's ports by label (the group network's, as
	// granted: host port in Value, the port inside the task's network in
	// To).
	Ports []structs.AllocatedPortMapping
	// Cores is the number of whole cores the task asked for; a driver
	// that pins tasks uses Resources.Cpu.ReservedCores when set, or picks
	// this many itself.
	Cores int
	// Mounts are the task's host volume mounts (nil: none). The client
	// has already bind mounted each at TaskDir/<TaskPath> (raw_exec and
	// chroot drivers see them there); a container driver mounts HostPath
	// at TaskPath inside the container.
	Mounts []*MountConfig
}

// MountConfig is one host volume mounted into a task.
type MountConfig struct {
	// TaskPath is the volume_mount destination as written ("/srv/data"):
	// a path inside the task's directory, or the container's root.
	TaskPath string
	// HostPath is the host volume's directory on the node.
	HostPath string
	// ReadOnly: the mount, the group's volume or the node's host volume
	// is read-only.
	ReadOnly bool
}

// HandleState is the serializable part of a handle: enough to find the task
// again after a client restart.
type HandleState struct {
	Driver string
	TaskID string
	// PID of the task's main process (0 for drivers without processes).
	PID int
	// ProcStartTime is the process start time in clock ticks since boot
	// (field 22 of /proc/<pid>/stat), so that a recycled PID is never
	// mistaken for the task.
	ProcStartTime uint64
	StartedAt     time.Time
	// Data holds driver-specific values.
	Data map[string]string
}

// Copy returns a deep copy.
func (s *HandleState) Copy() *HandleState {
	if s == nil {
		return nil
	}
	c := *s
	if s.Data != nil {
		c.Data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			c.Data[k] = v
		}
	}
	return &c
}

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode int
	// Signal that ended the task, 0 if none.
	Signal int
	// OOMKilled: the kernel killed the task for exceeding its memory
	// limit (Err then says "OOM Killed", as Nomad's).
	OOMKilled bool
	// Err is set when the driver could not observe the exit properly (for
	// example, a re-attached task whose exit code is unknowable).
	Err error
}

// Successful reports a clean exit: code 0, no signal, no error.
func (r *ExitResult) Successful() bool {
	return r != nil && r.ExitCode == 0 && r.Signal == 0 && r.Err == nil
}

func (r *ExitResult) String() string {
	if r == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("exit code %d", r.ExitCode)
	if r.Signal != 0 {
		s += fmt.Sprintf(", signal %d", r.Signal)
	}
	if r.Err != nil {
		s += ", " + r.Err.Error()
	}
	return s
}

var (
	// ErrTaskGone is returned by Recover when the task is no longer
	// running, or its process ID was reused by another process.
	ErrTaskGone = errors.New("task is no longer running")
	// ErrUnrecoverable marks a start error that retrying cannot fix.
	ErrUnrecoverable = errors.New("unrecoverable")
	// ErrExitUnknown is set (wrapped, with the reason) on the ExitResult of
	// a task whose exit status could not be observed, for example a
	// re-attached task that nothing recorded the exit of.
	ErrExitUnknown = errors.New("exit status unknown")
	// ErrDisabled is returned by Start when the driver is not enabled.
	ErrDisabled = errors.New("driver is disabled")
)

// Unrecoverable wraps err so that the task runner never retries it.
func Unrecoverable(err error) error {
	return fmt.Errorf("%w: %w", ErrUnrecoverable, err)
}

// ErrNodeFault marks a start (or set-up) error that is the node's fault,
// not the task's: the driver or the client could not do its part on this
// machine (its own directories, files or processes, cgroups), whatever
// the task asked for. The task runner reports such a failure as a node
// fault (kind driver-start, or setup for the task's set-up), counted
// toward the node's quarantine. A task that cannot run as written (a
// missing command, a bad config) is never one.
var ErrNodeFault = errors.New("node fault")

// NodeFault marks err as the node's fault: errors.Is(result, ErrNodeFault)
// holds, and the message is err's.
func NodeFault(err error) error {
	if err == nil {
		return nil
	}
	return nodeFaultError{err}
}

type nodeFaultError struct{ err error }

func (e nodeFaultError) Error() string   { return e.err.Error() }
func (e nodeFaultError) Unwrap() []error { return []error{e.err, ErrNodeFault} }

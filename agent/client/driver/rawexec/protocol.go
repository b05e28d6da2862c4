package rawexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// What passes between the client and a task's supervisor:
//
//	client -> supervisor  stdin: supervisorSpec (JSON), then EOF
//	                      fd 3: write end of the report pipe
//	                      fd 4, fd 5: the task's stdout and stderr
//	supervisor -> client  fd 3: supervisorReport (JSON), then close
//	supervisor -> disk    <alloc dir>/<task>@raw_exec/run.json, once the
//	                      task runs; exit_status.json once it exited
//
// The exit status file outlives both processes: it is how a client that
// was away when the task ended learns its exit code. The run record is
// how a client that died before saving the task's handle finds the task
// again (Driver.Adopt) instead of starting a second copy; the client
// removes it once it has seen the run end.
const (
	// supervisorEnv, set to "1" together with argv[0] == supervisorArg0,
	// makes the executable run as a supervisor (see init in supervisor.go).
	supervisorEnv  = "DROVER_RAW_EXEC_SUPERVISOR"
	supervisorArg0 = "drover-raw_exec-supervisor"

	reportFD = 3
	stdoutFD = 4
	stderrFD = 5

	// supervisorDirSuffix names the per-task directory of the supervisor
	// inside the allocation directory: "<task>@raw_exec". '@' is not
	// allowed in task names, so no task's own directory can be this one.
	supervisorDirSuffix = "@raw_exec"
	exitStatusFile      = "exit_status.json"
	runFile             = "run.json"
	supervisorLogFile   = "supervisor.log"
)

// Keys of driver.HandleState.Data that locate the supervisor again after
// a client restart. A state without them was saved by a client that ran
// tasks without supervisors; it recovers by watching the task's PID alone.
const (
	dataSupervisorPID       = "supervisor_pid"
	dataSupervisorStartTime = "supervisor_start_time"
	dataExitStatusPath      = "exit_status_path"
)

// supervisorSpec is the task the supervisor starts.
type supervisorSpec struct {
	LaunchSpec
	// StatusPath is where the exit status goes.
	StatusPath string `json:"status_path"`
}

// supervisorReport is the supervisor's answer once the task runs (or
// failed to start: Error).
type supervisorReport struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Error     string `json:"error,omitempty"`
	// NodeFault says Error is the node's fault (the launcher's error
	// wrapped driver.ErrNodeFault: a cgroup that could not be made), not
	// the task's.
	NodeFault bool `json:"node_fault,omitempty"`
}

// exitStatus is the status file. TaskPID and TaskStartTime say which run
// of the task it describes, so a file left by an earlier run is never
// taken for the current one.
type exitStatus struct {
	TaskPID       int       `json:"task_pid"`
	TaskStartTime uint64    `json:"task_start_time"`
	ExitCode      int       `json:"exit_code"`
	Signal        int       `json:"signal"`
	Error         string    `json:"error,omitempty"`
	OOMKilled     bool      `json:"oom_killed,omitempty"`
	ExitedAt      time.Time `json:"exited_at"`
}

// runRecord is the run file: which supervisor runs which task process.
type runRecord struct {
	SupervisorPID       int    `json:"supervisor_pid"`
	SupervisorStartTime uint64 `json:"supervisor_start_time"`
	TaskPID             int    `json:"task_pid"`
	TaskStartTime       uint64 `json:"task_start_time"`
}

// supervisorRef locates a task's supervisor. The zero value means the task
// has none (a state saved before supervisors existed).
type supervisorRef struct {
	pid        int
	startTime  uint64
	statusPath string
}

func (s supervisorRef) valid() bool { return s.pid > 0 && s.startTime != 0 && s.statusPath != "" }

// supervisorDir is raw_exec's supervisor directory for the task: beside
// the task's directory, never inside a directory the task is given.
func supervisorDir(cfg *driver.TaskConfig) string { return supervisorDirOf(cfg, supervisorDirSuffix) }

// supervisorDirOf is the supervisor directory "<task><suffix>".
func supervisorDirOf(cfg *driver.TaskConfig, suffix string) string {
	allocDir := cfg.AllocDir
	if allocDir == "" {
		allocDir = filepath.Dir(cfg.TaskDir)
	}
	return filepath.Join(allocDir, cfg.TaskName+suffix)
}

// saveSupervisor records ref in the handle state.
func saveSupervisor(st *driver.HandleState, ref supervisorRef) {
	if st.Data == nil {
		st.Data = map[string]string{}
	}
	st.Data[dataSupervisorPID] = strconv.Itoa(ref.pid)
	st.Data[dataSupervisorStartTime] = strconv.FormatUint(ref.startTime, 10)
	st.Data[dataExitStatusPath] = ref.statusPath
}

// loadSupervisor reads what saveSupervisor recorded; ok is false when the
// state has no (usable) supervisor.
func loadSupervisor(st *driver.HandleState) (supervisorRef, bool) {
	if st.Data == nil {
		return supervisorRef{}, false
	}
	pid, err1 := strconv.Atoi(st.Data[dataSupervisorPID])
	start, err2 := strconv.ParseUint(st.Data[dataSupervisorStartTime], 10, 64)
	ref := supervisorRef{pid: pid, startTime: start, statusPath: st.Data[dataExitStatusPath]}
	if err1 != nil || err2 != nil || !ref.valid() {
		return supervisorRef{}, false
	}
	return ref, true
}

// withoutSupervisor returns a copy of st that names no supervisor.
func withoutSupervisor(st *driver.HandleState) *driver.HandleState {
	c := st.Copy()
	for _, k := range []string{dataSupervisorPID, dataSupervisorStartTime, dataExitStatusPath} {
		delete(c.Data, k)
	}
	return c
}

// writeExitStatus writes the status file atomically: a reader sees the
// whole file or none.
func writeExitStatus(path string, st *exitStatus) error { return writeJSONFile(path, st) }

// writeJSONFile writes v to path atomically and durably.
func writeJSONFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// errNoExitStatus: the status file is absent.
var errNoExitStatus = errors.New("no exit status recorded")

// readExitStatus reads the status file and checks that it describes the
// run of the task that st names.
func readExitStatus(path string, st *driver.HandleState) (*driver.ExitResult, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoExitStatus
	}
	if err != nil {
		return nil, err
	}
	var es exitStatus
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, fmt.Errorf("malformed exit status %s: %w", path, err)
	}
	if es.TaskPID != st.PID || es.TaskStartTime != st.ProcStartTime {
		return nil, fmt.Errorf("exit status %s describes process %d (start %d), not %d (start %d)",
			path, es.TaskPID, es.TaskStartTime, st.PID, st.ProcStartTime)
	}
	res := &driver.ExitResult{ExitCode: es.ExitCode, Signal: es.Signal, OOMKilled: es.OOMKilled}
	if es.Error != "" {
		res.Err = errors.New(es.Error)
	}
	return res, nil
}

// readRunRecord reads the run file of the supervisor directory dir.
func readRunRecord(dir string) (*runRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, runFile))
	if err != nil {
		return nil, err
	}
	var r runRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("malformed run record in %s: %w", dir, err)
	}
	if r.SupervisorPID <= 0 || r.SupervisorStartTime == 0 || r.TaskPID <= 0 || r.TaskStartTime == 0 {
		return nil, fmt.Errorf("incomplete run record in %s: %+v", dir, r)
	}
	return &r, nil
}

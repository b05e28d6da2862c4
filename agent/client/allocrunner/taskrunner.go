package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/logs"
	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/agent/client/template"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// maxTaskEvents is how many events a task state keeps (the oldest go), as
// Nomad.
const maxTaskEvents = 10

// startTimeout bounds a driver's Start.
const startTimeout = time.Minute

// taskRunner runs one task through its life: setup, start, wait, restart
// per policy, kill. Its run goroutine is the only writer of the task
// state; other goroutines read it under mu and signal through killCh and
// detachCh.
type taskRunner struct {
	ar      *AllocRunner
	task    *structs.Task
	tg      *structs.TaskGroup
	drv     driver.Driver // nil: the driver is not available here
	taskDir *allocdir.TaskDir
	logger  hclog.Logger
	restart *restartTracker
	// gate, when not nil, closes when the task's lifecycle phase may
	// start (see coordinator).
	gate <-chan struct{}

	killCh     chan struct{} // closed by kill
	killOnce   sync.Once
	detachCh   chan struct{} // closed by detach
	detachOnce sync.Once
	// restartCh asks the running task to restart (check_restart, a
	// re-rendered template); it holds at most one request.
	restartCh chan restartRequest
	doneCh    chan struct{} // closed when run returns

	mu    sync.Mutex
	state *structs.TaskState // guarded by mu
	// latest is the group and task of the allocation's newest job version
	// (in-place updates replace it); guarded by mu. What the task is
	// started with (task, tg) cannot change in place, but its kill timeout
	// and signal and the group's restart policy can, and are read here.
	latest     taskSpec
	killReason string              // guarded by mu; set before killCh closes
	saved      *driver.HandleState // handle of the running task; guarded by mu

	// Owned by the run goroutine.
	restored *clientstate.TaskRunnerState
	pumps    []*logs.Pump
	// identity is the task's workload identity token when its identity
	// block exposes it (env or file); set by setup.
	identity string
	tmpl     *template.Manager // the task's templates, once rendered
	// artifactsDone: every artifact was fetched; fetched marks each one
	// fetched so far (a retry skips them).
	artifactsDone bool
	fetched       []bool

	handle    driver.Handle     // the running task's handle; guarded by mu
	killFails bool              // the kill fails the task; guarded by mu
	tmplEnv   map[string]string // env templates' variables; guarded by mu
}

// setHandle records the running task's handle state (nil once it exited);
// the next update saves it.
func (tr *taskRunner) setHandle(h *driver.HandleState) {
	tr.mu.Lock()
	tr.saved = h
	if h == nil {
		tr.handle = nil
	}
	tr.mu.Unlock()
}

// setLive records the handle of the task now running.
func (tr *taskRunner) setLive(h driver.Handle) {
	tr.setHandle(h.State())
	tr.mu.Lock()
	tr.handle = h
	tr.mu.Unlock()
}

// handleState returns the running task's handle state, or nil.
func (tr *taskRunner) handleState() *driver.HandleState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.saved.Copy()
}

func newTaskRunner(ar *AllocRunner, tg *structs.TaskGroup, task *structs.Task, td *allocdir.TaskDir,
	restored *clientstate.TaskRunnerState) *taskRunner {
	tr := &taskRunner{
		ar: ar, task: task, tg: tg, taskDir: td, latest: taskSpec{tg: tg, task: task},
		logger:    ar.logger.With("task", task.Name),
		restart:   newRestartTracker(structs.EffectiveRestartPolicy(tg, task), jobType(ar.alloc)),
		killCh:    make(chan struct{}),
		detachCh:  make(chan struct{}),
		doneCh:    make(chan struct{}),
		restartCh: make(chan restartRequest, 1),
		state:     &structs.TaskState{State: structs.TaskStatePending},
		restored:  restored,
		gate:      ar.coord.gate(task.Lifecycle),
	}
	if l := task.Lifecycle; !l.IsMain() && (!l.Sidecar || l.HookIs(structs.TaskLifecycleHookPoststop)) {
		// An ephemeral lifecycle task is done when it succeeds, whatever
		// the job type (a service job's main tasks restart instead).
		tr.restart.batch = true
	}
	if ar.cfg.Drivers != nil {
		tr.drv = ar.cfg.Drivers.Driver(task.Driver)
	}
	if restored != nil && restored.State != nil {
		tr.state = restored.State.Copy()
	}
	return tr
}

// taskSpec is a task with its group, from one job version.
type taskSpec struct {
	tg   *structs.TaskGroup
	task *structs.Task
}

// setLatest takes the task and group of an in-place update.
func (tr *taskRunner) setLatest(tg *structs.TaskGroup, task *structs.Task) {
	tr.mu.Lock()
	tr.latest = taskSpec{tg: tg, task: task}
	tr.mu.Unlock()
}

func (tr *taskRunner) latestSpec() taskSpec {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.latest
}

func jobType(a *structs.Allocation) string {
	if a.Job != nil {
		return a.Job.Type
	}
	return structs.JobTypeService
}

// State returns a copy of the task state.
func (tr *taskRunner) State() *structs.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.state.Copy()
}

// isPoststop reports whether the task is a poststop task.
func (tr *taskRunner) isPoststop() bool {
	return tr.task.Lifecycle.HookIs(structs.TaskLifecycleHookPoststop)
}

// kill asks the task to stop for good (non-blocking).
func (tr *taskRunner) kill(reason string) {
	tr.killOnce.Do(func() {
		tr.mu.Lock()
		tr.killReason = reason
		tr.mu.Unlock()
		close(tr.killCh)
	})
}

// detach makes run return without touching the task (client shutdown).
func (tr *taskRunner) detach() { tr.detachOnce.Do(func() { close(tr.detachCh) }) }

func (tr *taskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *taskRunner) detached() bool {
	select {
	case <-tr.detachCh:
		return true
	default:
		return false
	}
}

// newEvent returns an event stamped now.
func newEvent(typ, display string) *structs.TaskEvent {
	return &structs.TaskEvent{Type: typ, Time: time.Now().UnixNano(), DisplayMessage: display}
}

// fillDetails sets an event's Details from its fields, under the keys
// Nomad's client uses (Nomad's TaskEvent setters write both), so tools
// that read Details see what Nomad would show. An event that already has
// Details keeps them.
func fillDetails(ev *structs.TaskEvent) {
	if ev.Details != nil {
		return
	}
	d := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			d[k] = v
		}
	}
	switch ev.Type {
	case structs.TaskSetupFailure:
		set("setup_error", ev.Message)
	case structs.TaskFailedValidate:
		set("validation_error", ev.Message)
	case structs.TaskArtifactDownloadFailed:
		set("download_error", ev.DownloadError)
	case structs.TaskTerminated:
		d["exit_code"] = strconv.Itoa(ev.ExitCode)
		d["signal"] = strconv.Itoa(ev.Signal)
		set("exit_message", ev.Message)
	default:
		set("message", ev.Message)
	}
	set("driver_error", ev.DriverError)
	set("kill_error", ev.KillError)
	set("kill_reason", ev.KillReason)
	set("restart_reason", ev.RestartReason)
	set("task_signal", ev.TaskSignal)
	if ev.FailsTask {
		d["fails_task"] = "true"
	}
	if ev.KillTimeout != 0 {
		d["kill_timeout"] = ev.KillTimeout.String()
	}
	if ev.StartDelay != 0 {
		d["start_delay"] = strconv.FormatInt(ev.StartDelay, 10)
	}
	ev.Details = d
}

// update applies fn and appends events to the task state, saves it with
// the current handle state, and tells the alloc runner.
func (tr *taskRunner) update(fn func(ts *structs.TaskState), events ...*structs.TaskEvent) {
	tr.mu.Lock()
	if fn != nil {
		fn(tr.state)
	}
	for _, ev := range events {
		fillDetails(ev)
	}
	tr.state.Events = append(tr.state.Events, events...)
	if n := len(tr.state.Events); n > maxTaskEvents {
		tr.state.Events = append([]*structs.TaskEvent(nil), tr.state.Events[n-maxTaskEvents:]...)
	}
	snap := tr.state.Copy()
	saved := tr.saved.Copy()
	tr.mu.Unlock()
	if db := tr.ar.cfg.StateDB; db != nil {
		if err := db.PutTaskState(tr.ar.id, tr.task.Name, &clientstate.TaskRunnerState{State: snap, Handle: saved}); err != nil {
			tr.logger.Error("failed to save task state", "error", err)
		}
	}
	tr.ar.taskChanged(tr)
}

// run is the task's life. It returns when the task is dead, or at once
// when detached.
func (tr *taskRunner) run() {
	defer close(tr.doneCh)
	defer tr.stopTemplates()
	if tr.State().State == structs.TaskStateDead {
		return // restored after it finished
	}
	if tr.restored == nil {
		tr.update(nil, newEvent(structs.TaskReceived, "Task received by client"))
	}
	if !tr.waitGate() {
		return
	}
	if err := tr.setup(); err != nil {
		ev := newEvent(structs.TaskSetupFailure, "Task setup failed: "+err.Error())
		ev.Message, ev.FailsTask = err.Error(), true
		if errors.Is(err, driver.ErrNodeFault) {
			ev.NodeFault = structs.NodeFaultSetup
			tr.ar.reportNodeFault(ev.NodeFault, tr.task.Name, tr.task.Driver)
		}
		tr.finish(true, ev)
		return
	}

	var h driver.Handle
	switch {
	case tr.restored != nil && tr.restored.Handle != nil:
		var res *driver.ExitResult
		h, res = tr.recover(tr.restored.Handle)
		if h == nil && !tr.afterExit(res, nil) {
			return
		}
	case tr.restored != nil:
		// The previous client may have died after starting the task and
		// before saving its handle: find that run instead of starting a
		// second one.
		h = tr.adopt()
	}
	if h != nil {
		tr.artifactsDone = true // fetched before the task first started
		tr.watchRestoredTemplates()
	}
	for {
		if h == nil {
			if tr.detached() {
				tr.detachLogs()
				return
			}
			if tr.killed() {
				tr.finish(tr.killFailing(), tr.killedEvent())
				return
			}
			if err := tr.fetchArtifacts(); err != nil {
				if tr.detached() {
					tr.detachLogs()
					return
				}
				if tr.killed() {
					tr.finish(tr.killFailing(), tr.killedEvent())
					return
				}
				if !tr.afterArtifactFailure(err) {
					return
				}
				continue
			}
			if err := tr.renderTemplates(); err != nil {
				if tr.detached() {
					tr.detachLogs()
					return
				}
				if tr.killed() {
					tr.finish(tr.killFailing(), tr.killedEvent())
					return
				}
				if !tr.afterTemplateFailure(err) {
					return
				}
				continue
			}
			select { // a restart asked for before this start is moot
			case <-tr.restartCh:
			default:
			}
			var err error
			if h, err = tr.start(); err != nil {
				if errors.Is(err, errInvalidConfig) {
					return // finished inside start
				}
				if tr.killed() { // the kill cancelled the start
					tr.finish(false, tr.killedEvent())
					return
				}
				if !tr.afterExit(nil, err) {
					return
				}
				continue
			}
		}
		exitCh := make(chan *driver.ExitResult, 1)
		go func(h driver.Handle) {
			res, _ := h.Wait(context.Background())
			exitCh <- res
		}(h)
		select {
		case res := <-exitCh:
			h = nil
			if !tr.afterExit(res, nil) {
				return
			}
		case <-tr.killCh:
			tr.stop(h, exitCh)
			return
		case <-tr.detachCh:
			tr.detachLogs()
			return
		case req := <-tr.restartCh:
			if !req.policy {
				tr.restartNow(h, exitCh, req.ev)
				h = nil
				continue
			}
			res := tr.stopForRestart(h, exitCh, req.ev)
			h = nil
			if !tr.afterExit(res, nil) {
				return
			}
		}
	}
}

// restartRequest asks the run loop to restart the running task: ev is
// the event recorded; with policy the exit goes through the restart
// policy as a failure (check_restart, as Nomad), without it the task
// starts again at once, uncounted (a re-rendered template).
type restartRequest struct {
	ev     *structs.TaskEvent
	policy bool
}

// restartForCheck asks the task to restart because a check with
// check_restart stayed unhealthy; a request while one is pending, or
// while the task does not run, is dropped.
func (tr *taskRunner) restartForCheck(reason string) {
	ev := newEvent(structs.TaskRestartSignal, "Restart Signaled: "+reason)
	ev.RestartReason = reason
	select {
	case tr.restartCh <- restartRequest{ev: ev, policy: true}:
	default:
	}
}

// stopForRestart records ev and stops the running task with its kill
// signal and timeout, for a restart through the restart policy.
func (tr *taskRunner) stopForRestart(h driver.Handle, exitCh <-chan *driver.ExitResult, ev *structs.TaskEvent) *driver.ExitResult {
	tr.update(nil, ev)
	sig, timeout := tr.killSpec()
	res, err := tr.stopHandle(h, exitCh, sig, timeout)
	if res == nil {
		res = &driver.ExitResult{Err: err}
	}
	return res
}

// setup builds the task directory and starts draining its output.
func (tr *taskRunner) setup() error {
	if tr.restored == nil {
		tr.update(nil, newEvent(structs.TaskSetup, "Building Task Directory"))
	}
	// The task directory, the node's host volumes and the log files are
	// the node's to provide: their failures are node faults (disk).
	if err := tr.taskDir.Build(); err != nil {
		return driver.NodeFault(err)
	}
	if err := tr.mountVolumes(); err != nil {
		return driver.NodeFault(err)
	}
	if err := tr.writePayload(); err != nil {
		return err
	}
	ad := tr.ar.allocDir
	maxFiles, maxSize := tr.ar.cfg.LogMaxFiles, tr.ar.cfg.LogMaxFileSize
	lc := tr.task.LogConfig
	if lc != nil {
		maxFiles, maxSize = lc.MaxFiles, int64(lc.MaxFileSizeMB)<<20
	}
	for _, typ := range []string{allocdir.Stdout, allocdir.Stderr} {
		var w io.WriteCloser = logs.Discard
		if lc == nil || !lc.Disabled {
			r, err := logs.NewRotator(ad.LogDir, allocdir.LogBase(tr.task.Name, typ), maxFiles, maxSize)
			if err != nil {
				return driver.NodeFault(fmt.Errorf("opening %s log: %w", typ, err))
			}
			w = r
		}
		p, err := logs.StartPump(ad.LogFIFO(tr.task.Name, typ), w)
		if err != nil {
			w.Close()
			return driver.NodeFault(fmt.Errorf("opening %s fifo: %w", typ, err))
		}
		tr.pumps = append(tr.pumps, p)
	}
	return tr.setupIdentity()
}

// identityFile is the workload identity's file in the secrets directory.
const identityFile = "nomad_token"

// setupIdentity fetches the task's workload identity when its identity
// block asks for it, and writes it to secrets/nomad_token (mode 0600)
// with file = true. A task restored after a client restart reuses the
// file it already has.
func (tr *taskRunner) setupIdentity() error {
	id := tr.task.Identity
	if id == nil || (!id.Env && !id.File) {
		return nil
	}
	path := filepath.Join(tr.taskDir.SecretsDir, identityFile)
	if tr.restored != nil {
		if buf, err := os.ReadFile(path); err == nil && len(buf) > 0 {
			tr.identity = string(buf)
			return nil
		}
	}
	if tr.ar.cfg.Identity == nil {
		return errors.New("workload identity: this client cannot fetch identities")
	}
	tok, err := tr.ar.cfg.Identity(tr.ar.id, tr.task.Name)
	if err != nil {
		return fmt.Errorf("workload identity: %w", err)
	}
	tr.identity = tok
	if id.File {
		if err := os.WriteFile(path, []byte(tok), 0o600); err != nil {
			return fmt.Errorf("workload identity: %w", err)
		}
	}
	return nil
}

// drainLogs copies what is left of the task's output, then stops.
func (tr *taskRunner) drainLogs() {
	for _, p := range tr.pumps {
		if err := p.Stop(); err != nil {
			tr.logger.Warn("writing task log failed", "error", err)
		}
	}
	tr.pumps = nil
}

// detachLogs leaves unread output in the FIFOs for the next client.
func (tr *taskRunner) detachLogs() {
	for _, p := range tr.pumps {
		p.Detach()
	}
	tr.pumps = nil
}

// errInvalidConfig: start failed validation and already finished the task.
var errInvalidConfig = errors.New("invalid task config")

// start validates the config and starts the task.
func (tr *taskRunner) start() (driver.Handle, error) {
	if tr.drv == nil {
		// The node was placed on because it offered the driver.
		return nil, driver.Unrecoverable(driver.NodeFault(fmt.Errorf("driver %q is not available on this client", tr.task.Driver)))
	}
	cfg := tr.taskConfig()
	if err := tr.drv.ValidateConfig(cfg.Config); err != nil {
		ev := newEvent(structs.TaskFailedValidate, "Task config is invalid: "+err.Error())
		ev.Message, ev.DriverError, ev.FailsTask = err.Error(), err.Error(), true
		tr.finish(true, ev)
		return nil, errInvalidConfig
	}
	// A kill while the driver is starting cancels the start.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go func() {
		select {
		case <-tr.killCh:
			cancel()
		case <-stopWatch:
		}
	}()
	h, err := tr.drv.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tr.started(h)
	return h, nil
}

// started records a run of the task: its handle (saved with the state)
// and the Started event.
func (tr *taskRunner) started(h driver.Handle) {
	tr.setLive(h)
	now := time.Now()
	tr.update(func(ts *structs.TaskState) {
		ts.State = structs.TaskStateRunning
		ts.StartedAt = now
		ts.FinishedAt = time.Time{}
	}, newEvent(structs.TaskStarted, "Task started by client"))
}

// taskConfig is what the driver gets to start the task: its environment,
// and its driver config with the ${...} references resolved against it.
func (tr *taskRunner) taskConfig() *driver.TaskConfig {
	ad := tr.ar.allocDir
	alloc := tr.ar.Alloc()
	te := buildTaskEnv(alloc, tr.tg, tr.task, ad, tr.taskDir, tr.ar.cfg.Node)
	if tr.identity != "" && tr.task.Identity != nil && tr.task.Identity.Env {
		te.env[envNomadToken] = tr.identity
	}
	tr.mu.Lock()
	for k, v := range tr.tmplEnv { // env templates win, as in Nomad
		te.env[k] = v
	}
	tr.mu.Unlock()
	cfg := &driver.TaskConfig{
		ID: tr.ar.id + "/" + tr.task.Name, AllocID: tr.ar.id, TaskName: tr.task.Name,
		GroupName: tr.tg.Name, Namespace: alloc.Namespace,
		Config:  te.interpolate(tr.task.Config),
		Env:     te.env,
		User:    tr.task.User,
		TaskDir: tr.taskDir.Dir, AllocDir: ad.Dir,
		StdoutPath: ad.LogFIFO(tr.task.Name, allocdir.Stdout),
		StderrPath: ad.LogFIFO(tr.task.Name, allocdir.Stderr),
	}
	if alloc.Job != nil {
		cfg.JobName = alloc.Job.Name
	}
	if r := alloc.AllocatedResources; r != nil {
		cfg.Resources = r.Tasks[tr.task.Name]
		cfg.Ports = r.Shared.Ports
	}
	if tr.task.Resources != nil {
		cfg.Cores = tr.task.Resources.Cores
	}
	cfg.Mounts = tr.mountConfigs()
	return cfg
}

// adopt asks the driver for a run of the task that the previous client
// started and never recorded (see driver.Adopter), and takes it over: the
// task is running (or its exit is at hand) without a second start.
func (tr *taskRunner) adopt() driver.Handle {
	a, ok := tr.drv.(driver.Adopter)
	if !ok || tr.drv == nil {
		return nil
	}
	h, err := a.Adopt(tr.taskConfig())
	if err != nil {
		if !errors.Is(err, driver.ErrTaskGone) {
			tr.logger.Warn("cannot look for a run of the task the previous client started", "error", err)
		}
		return nil
	}
	tr.logger.Info("took over a run of the task the previous client started but did not record", "pid", h.State().PID)
	tr.started(h)
	return h
}

// recover re-attaches to a task a previous client started. When the task
// is gone, it returns the exit to report instead.
func (tr *taskRunner) recover(st *driver.HandleState) (driver.Handle, *driver.ExitResult) {
	if tr.drv != nil {
		h, err := tr.drv.Recover(st)
		if err == nil {
			tr.setLive(h)
			tr.logger.Info("re-attached to task", "pid", st.PID)
			tr.update(func(ts *structs.TaskState) { ts.State = structs.TaskStateRunning })
			return h, nil
		}
		tr.logger.Info("task did not survive the client restart", "error", err)
	}
	return nil, &driver.ExitResult{Err: fmt.Errorf("%w: the task did not survive the client restart", driver.ErrExitUnknown)}
}

// afterExit reports an exit (or a failed start) and applies the restart
// policy. It returns true when the task should start again.
func (tr *taskRunner) afterExit(res *driver.ExitResult, startErr error) bool {
	var ev *structs.TaskEvent
	if startErr != nil {
		ev = newEvent(structs.TaskDriverFailure, "Failed to start task: "+startErr.Error())
		ev.DriverError, ev.Message = startErr.Error(), startErr.Error()
		if errors.Is(startErr, driver.ErrNodeFault) {
			ev.NodeFault = structs.NodeFaultDriverStart
			tr.ar.reportNodeFault(ev.NodeFault, tr.task.Name, tr.task.Driver)
		}
	} else {
		ev = newEvent(structs.TaskTerminated, fmt.Sprintf("Exit Code: %d", res.ExitCode))
		ev.ExitCode, ev.Signal = res.ExitCode, res.Signal
		if res.Signal != 0 {
			ev.DisplayMessage += fmt.Sprintf(", Signal: %d", res.Signal)
		}
		if res.Err != nil {
			ev.Message = res.Err.Error()
			ev.DisplayMessage += ", Exit Message: " + res.Err.Error()
		}
		if res.OOMKilled {
			fillDetails(ev)
			ev.Details["oom_killed"] = "true" // Nomad's key
		}
	}
	return tr.afterExitEvent(ev, res, startErr)
}

// afterExitEvent records ev, the end of a run (or of an attempt to start
// one), and applies the restart policy: true when the task should start
// again.
func (tr *taskRunner) afterExitEvent(ev *structs.TaskEvent, res *driver.ExitResult, startErr error) bool {
	tr.setHandle(nil)
	latest := tr.latestSpec()
	tr.restart.setPolicy(structs.EffectiveRestartPolicy(latest.tg, latest.task))
	d := tr.restart.afterExit(res, startErr)
	if !d.restart {
		if !d.failed {
			tr.finish(false, ev)
			return false
		}
		nr := newEvent(structs.TaskNotRestarting, d.reason)
		nr.RestartReason, nr.FailsTask = d.reason, true
		tr.finish(true, ev, nr)
		return false
	}
	if rp := structs.EffectiveRestartPolicy(latest.tg, latest.task); rp != nil && rp.RenderTemplates {
		tr.stopTemplates() // the next start renders them afresh
	}
	rs := newEvent(structs.TaskRestarting, fmt.Sprintf("Task restarting in %v", d.delay.Round(time.Millisecond)))
	rs.StartDelay, rs.RestartReason = int64(d.delay), d.reason
	now := time.Now()
	tr.update(func(ts *structs.TaskState) {
		ts.State = structs.TaskStatePending
		ts.Restarts++
		ts.LastRestart = now
		ts.FinishedAt = now
	}, ev, rs)
	t := time.NewTimer(d.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-tr.killCh:
		return true // the loop sees the kill and finishes
	case <-tr.detachCh:
		return true // the loop sees the detach and returns
	}
}

// killedEvent is the event for a task killed while nothing ran.
func (tr *taskRunner) killedEvent() *structs.TaskEvent {
	tr.mu.Lock()
	reason := tr.killReason
	tr.mu.Unlock()
	ev := newEvent(structs.TaskKilled, "Task successfully killed")
	ev.KillReason = reason
	return ev
}

// killSpec returns the kill signal and timeout of the latest job version.
func (tr *taskRunner) killSpec() (string, time.Duration) {
	task := tr.latestSpec().task
	timeout := task.KillTimeout
	if timeout <= 0 {
		timeout = structs.DefaultKillTimeout
	}
	if max := tr.ar.cfg.MaxKillTimeout; max > 0 && timeout > max {
		timeout = max
	}
	sig := task.KillSignal
	if sig == "" {
		sig = driverspec.DefaultKillSignal
	}
	return sig, timeout
}

// stop kills a running task with the kill signal and timeout of the
// latest job version.
func (tr *taskRunner) stop(h driver.Handle, exitCh chan *driver.ExitResult) {
	sig, timeout := tr.killSpec()
	tr.mu.Lock()
	reason := tr.killReason
	tr.mu.Unlock()
	if !tr.waitShutdownDelay(reason, exitCh) {
		tr.detachLogs()
		return
	}
	ev := newEvent(structs.TaskKilling, fmt.Sprintf("Sent %s. Waiting %v before force killing", sig, timeout))
	ev.KillTimeout, ev.KillReason = timeout, reason
	tr.update(nil, ev)
	killed := tr.killedEvent()
	res, err := tr.stopHandle(h, exitCh, sig, timeout)
	if err != nil {
		killed.KillError = err.Error()
	}
	if res != nil {
		killed.ExitCode, killed.Signal = res.ExitCode, res.Signal
	}
	tr.setHandle(nil)
	tr.finish(tr.killFailing(), killed)
}

// waitShutdownDelay waits the task's shutdown_delay, once the kill has
// deregistered its services (the service hook skips tasks being killed),
// as Nomad does: clients of the service stop finding it before the task
// gets its kill signal. A task that exits meanwhile ends the wait (its
// exit stays in exitCh). It returns false when the client detached
// meanwhile (the task is left running). A destroyed allocation does not
// wait.
func (tr *taskRunner) waitShutdownDelay(reason string, exitCh chan *driver.ExitResult) bool {
	delay := tr.latestSpec().task.ShutdownDelay
	if delay <= 0 || reason == ReasonDestroyed {
		return true
	}
	tr.ar.servicesChanged()
	ev := newEvent(structs.TaskWaitingShuttingDownDelay, fmt.Sprintf("Waiting for shutdown_delay of %s before killing the task.", delay))
	tr.update(nil, ev)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case res := <-exitCh:
		exitCh <- res // for stopHandle
	case <-tr.detachCh:
		return false
	}
	return true
}

// stopHandle stops a running task and returns its exit (nil when it
// could not be seen).
func (tr *taskRunner) stopHandle(h driver.Handle, exitCh <-chan *driver.ExitResult, sig string, timeout time.Duration) (*driver.ExitResult, error) {
	var res *driver.ExitResult
	err := h.Stop(sig, timeout)
	if err != nil {
		tr.logger.Error("failed to kill task", "error", err)
		select { // it may never exit; do not wait forever
		case res = <-exitCh:
		case <-time.After(time.Second):
		}
	} else {
		res = <-exitCh
	}
	return res, err
}

// finish drains the task's output, undoes its volume mounts and marks
// it dead.
func (tr *taskRunner) finish(failed bool, events ...*structs.TaskEvent) {
	tr.setHandle(nil)
	tr.drainLogs()
	tr.unmountVolumes()
	now := time.Now()
	tr.update(func(ts *structs.TaskState) {
		ts.State = structs.TaskStateDead
		ts.Failed = failed
		ts.FinishedAt = now
	}, events...)
}

// writePayload writes a dispatched job's payload to the file the task's
// dispatch_payload block names, under local/, before the task starts (as
// Nomad's dispatch hook does). A task without the block, or a job without
// a payload, writes nothing.
func (tr *taskRunner) writePayload() error {
	dp := tr.task.DispatchPayload
	alloc := tr.ar.Alloc()
	if dp == nil || dp.File == "" || alloc.Job == nil || len(alloc.Job.Payload) == 0 {
		return nil
	}
	path := filepath.Join(tr.taskDir.LocalDir, dp.File)
	if rel, err := filepath.Rel(tr.taskDir.LocalDir, path); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("dispatch_payload file %q escapes the task's local directory", dp.File)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the dispatch payload: %w", err)
	}
	if err := os.WriteFile(path, alloc.Job.Payload, 0o644); err != nil {
		return fmt.Errorf("writing the dispatch payload: %w", err)
	}
	return nil
}

// mountConfigs lists the task's host volume mounts for its driver (nil
// without volume_mount blocks; a mount whose volume is missing here is
// left out: setup already failed on it).
func (tr *taskRunner) mountConfigs() []*driver.MountConfig {
	if len(tr.task.VolumeMounts) == 0 {
		return nil
	}
	out := make([]*driver.MountConfig, 0, len(tr.task.VolumeMounts))
	for _, vm := range tr.task.VolumeMounts {
		if vm == nil || tr.tg.Volumes[vm.Volume] == nil {
			continue
		}
		vr := tr.tg.Volumes[vm.Volume]
		hv := tr.ar.cfg.Node.HostVolumes[vr.Source]
		if hv == nil {
			continue
		}
		out = append(out, &driver.MountConfig{TaskPath: vm.Destination, HostPath: hv.Path,
			ReadOnly: vm.ReadOnly || vr.ReadOnly || hv.ReadOnly})
	}
	return out
}

// mountVolumes mounts the group volumes the task's volume_mount blocks
// name at their destinations inside the task directory (allocdir.
// MountVolume: a bind mount, read-only when the mount, the group's
// volume or the node's host volume says so; a symlink where the client
// cannot bind mount). It runs before every start of the task's run loop,
// and leaves a mount that is already there (a restored task).
func (tr *taskRunner) mountVolumes() error {
	for _, vm := range tr.task.VolumeMounts {
		if vm == nil {
			continue
		}
		vr := tr.tg.Volumes[vm.Volume]
		if vr == nil {
			return fmt.Errorf("volume_mount: the group has no volume %q", vm.Volume)
		}
		hv := tr.ar.cfg.Node.HostVolumes[vr.Source]
		if hv == nil {
			return fmt.Errorf("volume %q: this node has no host volume %q", vm.Volume, vr.Source)
		}
		rel := structs.MountDestination(vm.Destination)
		if rel == "" {
			return fmt.Errorf("volume_mount %q: destination %q is not inside the task directory", vm.Volume, vm.Destination)
		}
		ro := vm.ReadOnly || vr.ReadOnly || hv.ReadOnly
		kind, err := allocdir.MountVolume(tr.taskDir.Dir, rel, hv.Path, ro)
		if err != nil {
			return fmt.Errorf("volume %q at %s: %w", vm.Volume, vm.Destination, err)
		}
		tr.logger.Debug("mounted host volume", "volume", vm.Volume, "source", hv.Path, "destination", rel, "read_only", ro, "kind", kind)
	}
	return nil
}

// unmountVolumes undoes the task's bind mounts once it is dead for good
// (the allocation directory's removal would otherwise reach the host
// directory through them).
func (tr *taskRunner) unmountVolumes() {
	if len(tr.task.VolumeMounts) == 0 {
		return
	}
	if err := allocdir.UnmountUnder(tr.taskDir.Dir); err != nil {
		tr.logger.Error("unmounting the task's volumes failed", "error", err)
	}
}

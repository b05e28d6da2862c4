package allocrunner

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/artifact"
	"github.com/drover-project/drover/agent/client/driver"
	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/agent/client/template"
	"github.com/drover-project/drover/structs"
)

// Kill reasons reported in Killing/Killed events.
const (
	ReasonAllocStopped  = "alloc was stopped by the servers"
	ReasonSiblingFailed = "Sibling task failed"
	ReasonLeaderDead    = "Leader task dead"
	ReasonDestroyed     = "alloc is being removed from the client"
)

// DriverCatalog finds a driver by name (nil when not available).
type DriverCatalog interface {
	Driver(name string) driver.Driver
}

// StateDB is where runners save their state (*clientstate.DB).
type StateDB interface {
	PutAlloc(a *structs.Allocation) error
	PutTaskState(allocID, task string, s *clientstate.TaskRunnerState) error
	DeleteAlloc(id string) error
}

// Config configures one AllocRunner.
type Config struct {
	// Alloc is the allocation as the servers sent it (or as restored);
	// the runner keeps it and never modifies it.
	Alloc     *structs.Allocation
	Logger    hclog.Logger
	AllocRoot string
	Drivers   DriverCatalog
	// StateDB may be nil (nothing is saved).
	StateDB StateDB
	// Updater receives a fresh copy of the allocation (client status and
	// task states) after every change. It must not block or call back
	// into the runner.
	Updater func(*structs.Allocation)
	Node    NodeInfo
	// Log rotation for task output (0: defaults).
	LogMaxFiles    int
	LogMaxFileSize int64
	// MaxKillTimeout caps a task's kill_timeout (0: no cap).
	MaxKillTimeout time.Duration
	// Restored holds the saved task states of an allocation being
	// restored after a client restart; nil for a new allocation.
	Restored map[string]*clientstate.TaskRunnerState
	// Identity fetches a task's workload identity token, for tasks whose
	// identity block asks for it in their environment or secrets
	// directory. nil: such a task fails setup.
	Identity func(allocID, task string) (string, error)
	// Services registers the allocation's native services (nil: they
	// are neither registered nor checked).
	Services ServiceRegistrar
	// NomadAddr is the agent's HTTP API ("http://127.0.0.1:4646"), which
	// templates' Nomad functions query (services, variables).
	NomadAddr string
	// NomadTLS is what templates need to reach an HTTPS NomadAddr.
	NomadTLS *template.TLSFiles
	// TemplateToken returns the token a task's templates query with (its
	// workload identity); nil, or "", queries without one (enough while
	// ACLs are off).
	TemplateToken func(allocID, task string) (string, error)
	// Artifacts fetches the tasks' artifact blocks (nil: a Getter with
	// Nomad's default limits).
	Artifacts *artifact.Getter
	// Previous is the runner of the allocation this one replaces on this
	// node when the group's ephemeral disk is sticky (nil otherwise): Run
	// waits for its tasks to finish and moves its data (alloc/data and
	// the tasks' local directories) over before the tasks start.
	Previous *AllocRunner
	// NodeFault receives each failure the runner attributes to the node,
	// not the job (the allocation or task directory, logs or cgroup could
	// not be set up; a driver failed for the node's reasons), for the
	// servers' flaky-node quarantine. It must not block. nil: not
	// reported (the task event still carries its NodeFault kind).
	NodeFault func(*structs.NodeFault)
}

// AllocRunner runs one allocation's tasks. Create with New, then Run.
type AllocRunner struct {
	cfg      Config
	id       string
	logger   hclog.Logger
	allocDir *allocdir.AllocDir

	// tasks is fixed after New.
	tasks     map[string]*taskRunner
	taskOrder []string

	doneCh chan struct{} // closed when every task runner has returned

	// stateMu orders saving the allocation against deleting it, so a late
	// save never brings a destroyed allocation back.
	stateMu   sync.Mutex
	destroyed bool // guarded by stateMu

	mu           sync.Mutex
	alloc        *structs.Allocation // latest server view; guarded by mu
	clientStatus string              // guarded by mu
	clientDesc   string              // guarded by mu
	setupErr     string              // guarded by mu
	terminalAt   time.Time           // guarded by mu
	killing      bool                // guarded by mu
	delayedKill  bool                // a kill waits for the group's shutdown_delay; guarded by mu
	detached     bool                // guarded by mu
	started      bool                // Run was called; guarded by mu

	// svc registers services and runs checks; nil when the group has no
	// service (set in New or by the first Update that brings one).
	svc *serviceHook // guarded by mu

	// coord orders lifecycle tasks; nil when the group has none. Fixed
	// after New.
	coord *coordinator

	// health watches the allocation's health for its deployment (nil:
	// not watching); healthVerdict is the verdict reached for deployment
	// healthFor (health.go). Guarded by mu.
	health        *healthWatch
	healthVerdict *structs.AllocDeploymentStatus
	healthFor     string
}

// New prepares a runner (nothing runs until Run).
func New(cfg Config) (*AllocRunner, error) {
	a := cfg.Alloc
	if a == nil || a.ID == "" {
		return nil, fmt.Errorf("allocrunner: allocation without ID")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Updater == nil {
		cfg.Updater = func(*structs.Allocation) {}
	}
	ad, err := allocdir.New(cfg.AllocRoot, a.ID)
	if err != nil {
		return nil, err
	}
	ar := &AllocRunner{
		cfg: cfg, id: a.ID, allocDir: ad, alloc: a,
		logger: cfg.Logger.Named("alloc_runner").With("alloc_id", a.ID),
		tasks:  map[string]*taskRunner{}, doneCh: make(chan struct{}),
		clientStatus: structs.AllocClientStatusPending,
	}
	var tg *structs.TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	if tg == nil {
		ar.setupErr = fmt.Sprintf("task group %q not found in the allocation's job", a.TaskGroup)
		return ar, nil
	}
	if tg.HasLifecycleTasks() {
		ar.coord = newCoordinator()
	}
	for _, t := range tg.Tasks {
		td, err := ad.TaskDir(t.Name)
		if err != nil {
			ar.setupErr = err.Error()
			ar.tasks = map[string]*taskRunner{}
			ar.taskOrder = nil
			return ar, nil
		}
		ar.tasks[t.Name] = newTaskRunner(ar, tg, t, td, cfg.Restored[t.Name])
		ar.taskOrder = append(ar.taskOrder, t.Name)
	}
	if cfg.Services != nil && tg.HasServices() {
		ar.svc = newServiceHook(ar, cfg.Services)
	}
	return ar, nil
}

// services returns the service hook, starting one when the allocation's
// job (after an in-place update) has services and Run was called.
func (ar *AllocRunner) services() *serviceHook {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.svc == nil && ar.cfg.Services != nil && ar.started && ar.alloc.Job != nil {
		if tg := ar.alloc.Job.LookupTaskGroup(ar.alloc.TaskGroup); tg != nil && tg.HasServices() {
			ar.svc = newServiceHook(ar, ar.cfg.Services)
			go ar.svc.loop()
		}
	}
	return ar.svc
}

// servicesChanged tells the service hook, if any, to look again.
func (ar *AllocRunner) servicesChanged() {
	ar.mu.Lock()
	h := ar.svc
	ar.mu.Unlock()
	if h != nil {
		h.changed()
	}
}

// ID returns the allocation ID.
func (ar *AllocRunner) ID() string { return ar.id }

// reportNodeFault hands a node fault of kind (of task and its driver,
// when known) to Config.NodeFault.
func (ar *AllocRunner) reportNodeFault(kind, task, drv string) {
	if ar.cfg.NodeFault == nil {
		return
	}
	ar.cfg.NodeFault(&structs.NodeFault{NodeID: ar.cfg.Node.ID, Kind: kind, AllocID: ar.id, TaskName: task, Driver: drv, Time: time.Now()})
}

// AllocDir returns the allocation's directory layout.
func (ar *AllocRunner) AllocDir() *allocdir.AllocDir { return ar.allocDir }

// Run builds the allocation directory and starts the task runners. It
// returns at once; DoneCh closes when every task is dead (or detached).
func (ar *AllocRunner) Run() {
	fail := func(msg string) {
		ar.mu.Lock()
		// setupErr keeps publish from deriving the status from the
		// tasks, which never started (they would say pending).
		ar.setupErr = msg
		ar.clientStatus = structs.AllocClientStatusFailed
		ar.clientDesc = msg
		ar.terminalAt = time.Now()
		ar.mu.Unlock()
		ar.logger.Error("allocation failed before its tasks started", "error", msg)
		ar.publish()
		close(ar.doneCh)
	}
	ar.mu.Lock()
	if ar.started {
		ar.mu.Unlock()
		return
	}
	ar.started = true
	setupErr := ar.setupErr
	ar.mu.Unlock()
	if setupErr != "" {
		fail(setupErr)
		return
	}
	if err := ar.allocDir.Build(); err != nil {
		ar.reportNodeFault(structs.NodeFaultSetup, "", "")
		fail("building the allocation directory: " + err.Error())
		return
	}
	if ar.cfg.Restored == nil {
		ar.saveAlloc()
	}
	ar.mu.Lock()
	svc := ar.svc
	ar.mu.Unlock()
	if svc != nil {
		go svc.loop()
	}
	ar.coordinate() // a restored allocation reopens the gates it had reached
	var wg sync.WaitGroup
	startTasks := func() {
		for _, name := range ar.taskOrder {
			tr := ar.tasks[name]
			wg.Add(1)
			go func() {
				defer wg.Done()
				tr.run()
			}()
		}
	}
	if prev := ar.cfg.Previous; prev != nil && ar.cfg.Restored == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ar.takeData(prev)
			startTasks()
		}()
	} else {
		startTasks()
	}
	go func() {
		wg.Wait()
		ar.mu.Lock()
		if ar.terminalAt.IsZero() && !ar.detached {
			ar.terminalAt = time.Now()
		}
		ar.mu.Unlock()
		close(ar.doneCh)
		ar.servicesChanged()
	}()
	ar.mu.Lock()
	stop := ar.alloc.ServerTerminalStatus()
	ar.mu.Unlock()
	if stop {
		ar.killAll(ReasonAllocStopped)
	}
	ar.publish()
	ar.watchHealth()
}

// DoneCh is closed once the runner has nothing left running.
func (ar *AllocRunner) DoneCh() <-chan struct{} { return ar.doneCh }

// Update takes a newer server version of the allocation. A desired status
// of stop or evict kills the tasks. A newer job version is an in-place
// update: the tasks keep running, and their kill timeout and signal and
// the restart policy come from the new version from now on.
func (ar *AllocRunner) Update(a *structs.Allocation) {
	ar.mu.Lock()
	if a.Job == nil {
		c := *a
		c.Job = ar.alloc.Job
		a = &c
	}
	ar.alloc = a
	ar.mu.Unlock()
	ar.updateTasks(a)
	ar.saveAlloc()
	if a.ServerTerminalStatus() {
		ar.killAll(ReasonAllocStopped)
	} else {
		ar.watchHealth() // an in-place update may move it to a new deployment
	}
	if h := ar.services(); h != nil {
		h.changed()
	}
}

// updateTasks hands each task runner its task and group from a's job.
func (ar *AllocRunner) updateTasks(a *structs.Allocation) {
	if a.Job == nil {
		return
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return
	}
	for name, tr := range ar.tasks {
		if t := tg.LookupTask(name); t != nil {
			tr.setLatest(tg, t)
		}
	}
}

// saveAlloc saves the allocation, unless it was destroyed.
func (ar *AllocRunner) saveAlloc() {
	if ar.cfg.StateDB == nil {
		return
	}
	ar.stateMu.Lock()
	defer ar.stateMu.Unlock()
	if ar.destroyed {
		return
	}
	if err := ar.cfg.StateDB.PutAlloc(ar.Alloc()); err != nil {
		ar.logger.Error("failed to save allocation", "error", err)
	}
}

// killAll asks every task to stop. Poststop tasks are spared, as in
// Nomad, unless the allocation is being destroyed: they run once the
// others are dead.
func (ar *AllocRunner) killAll(reason string) {
	ar.mu.Lock()
	ar.killing = true
	svc := ar.svc
	delay := ar.groupShutdownDelayLocked()
	waiting := ar.delayedKill
	if reason != ReasonDestroyed && delay > 0 {
		ar.delayedKill = true
	}
	ar.mu.Unlock()
	if svc != nil {
		svc.changed() // group services go first
	}
	if reason != ReasonDestroyed && delay > 0 {
		if !waiting {
			go ar.killAfter(delay, reason)
		}
		return
	}
	ar.killTasks(reason)
}

// groupShutdownDelayLocked is the group's shutdown_delay in the latest
// job version (0: none).
func (ar *AllocRunner) groupShutdownDelayLocked() time.Duration {
	if ar.alloc.Job == nil {
		return 0
	}
	if tg := ar.alloc.Job.LookupTaskGroup(ar.alloc.TaskGroup); tg != nil && tg.ShutdownDelay != nil {
		return *tg.ShutdownDelay
	}
	return 0
}

// killAfter kills the tasks once the group's shutdown_delay has passed
// since its services were deregistered, as Nomad does; tasks that all
// ended meanwhile end the wait.
func (ar *AllocRunner) killAfter(delay time.Duration, reason string) {
	ar.logger.Debug("waiting for the group's shutdown_delay before killing the tasks", "delay", delay)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ar.doneCh:
	}
	ar.killTasks(reason)
}

// killTasks asks every task to stop (see killAll).
func (ar *AllocRunner) killTasks(reason string) {
	for _, tr := range ar.tasks {
		if reason == ReasonDestroyed || !tr.isPoststop() {
			tr.kill(reason)
		}
	}
}

// Kill stops every task; it does not wait (see DoneCh).
func (ar *AllocRunner) Kill(reason string) { ar.killAll(reason) }

// Destroy kills the tasks, waits for them, and removes the allocation's
// directory and saved state.
func (ar *AllocRunner) Destroy() error {
	ar.killAll(ReasonDestroyed)
	ar.waitIfStarted()
	ar.mu.Lock()
	svc := ar.svc
	ar.mu.Unlock()
	if svc != nil {
		svc.checks.stopAll() // no script runs in a directory being removed
	}
	var err error
	ar.stateMu.Lock()
	ar.destroyed = true
	if ar.cfg.StateDB != nil {
		err = ar.cfg.StateDB.DeleteAlloc(ar.id)
	}
	ar.stateMu.Unlock()
	if rerr := ar.allocDir.Destroy(); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// Shutdown stops the runner without stopping its tasks (the client is
// shutting down; a later client re-attaches). It waits for the task
// runners to return.
func (ar *AllocRunner) Shutdown() {
	ar.mu.Lock()
	ar.detached = true
	ar.mu.Unlock()
	for _, tr := range ar.tasks {
		tr.detach()
	}
	ar.waitIfStarted()
	ar.mu.Lock()
	svc, started := ar.svc, ar.started
	ar.mu.Unlock()
	if svc != nil && started {
		svc.detach()
	}
}

// waitIfStarted waits for DoneCh if Run was called.
func (ar *AllocRunner) waitIfStarted() {
	ar.mu.Lock()
	started := ar.started
	ar.mu.Unlock()
	if started {
		<-ar.doneCh
	}
}

// IsTerminal reports whether the client is done with the allocation, and
// since when.
func (ar *AllocRunner) IsTerminal() (bool, time.Time) {
	select {
	case <-ar.doneCh:
	default:
		return false, time.Time{}
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return !ar.detached, ar.terminalAt
}

// TaskDone reports whether the named task is dead (no more output will
// come), and whether the task exists.
func (ar *AllocRunner) TaskDone(task string) (done, ok bool) {
	tr := ar.tasks[task]
	if tr == nil {
		return false, false
	}
	select {
	case <-tr.doneCh:
		return true, true
	default:
		return tr.State().State == structs.TaskStateDead, true
	}
}

// Alloc returns a copy of the allocation with the client's view filled in:
// client status, description and task states.
func (ar *AllocRunner) Alloc() *structs.Allocation {
	states := make(map[string]*structs.TaskState, len(ar.tasks))
	for name, tr := range ar.tasks {
		states[name] = tr.State()
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	c := *ar.alloc
	c.TaskStates = structs.NewTaskStates(states)
	c.ClientStatus, c.ClientDescription = ar.clientStatus, ar.clientDesc
	ar.withHealthLocked(&c)
	return &c
}

// taskChanged is called by a task runner after each change of its state:
// it kills siblings when a task failed or the leader died, recomputes the
// client status and publishes the allocation.
func (ar *AllocRunner) taskChanged(changed *taskRunner) {
	st := changed.State()
	if st.State == structs.TaskStateDead {
		ar.mu.Lock()
		killing := ar.killing
		ar.mu.Unlock()
		switch {
		case killing:
		case st.Failed:
			ar.killOthers(changed, ReasonSiblingFailed)
		case changed.task.Leader:
			ar.killOthers(changed, ReasonLeaderDead)
		}
	}
	ar.coordinate()
	ar.publish()
	ar.servicesChanged()
}

// killOthers kills every task but except, and but the poststop tasks,
// which run once the others are dead.
func (ar *AllocRunner) killOthers(except *taskRunner, reason string) {
	for _, tr := range ar.tasks {
		if tr != except && !tr.isPoststop() {
			tr.kill(reason)
		}
	}
}

// publish recomputes the client status and hands a copy to the Updater.
func (ar *AllocRunner) publish() {
	states := make(map[string]*structs.TaskState, len(ar.tasks))
	for name, tr := range ar.tasks {
		states[name] = tr.State()
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.setupErr == "" && len(states) > 0 {
		ar.clientStatus, ar.clientDesc = clientStatus(states)
	}
	c := *ar.alloc
	c.TaskStates = structs.NewTaskStates(states)
	c.ClientStatus, c.ClientDescription = ar.clientStatus, ar.clientDesc
	ar.withHealthLocked(&c)
	// Called under mu so that updates reach the Updater in order.
	ar.cfg.Updater(&c)
}

// clientStatus derives the allocation's status from its tasks, as Nomad:
// any failed task fails it; else any running task makes it running; else
// any pending task keeps it pending; else it is complete.
func clientStatus(states map[string]*structs.TaskState) (string, string) {
	var failed, running, pending int
	for _, s := range states {
		switch {
		case s.State == structs.TaskStateDead && s.Failed:
			failed++
		case s.State == structs.TaskStateRunning:
			running++
		case s.State == structs.TaskStatePending:
			pending++
		}
	}
	switch {
	case failed > 0:
		return structs.AllocClientStatusFailed, "Failed tasks"
	case running > 0:
		return structs.AllocClientStatusRunning, "Tasks are running"
	case pending > 0:
		return structs.AllocClientStatusPending, "No tasks have started"
	}
	return structs.AllocClientStatusComplete, "All tasks have completed"
}

// takeData waits for the previous allocation's tasks to finish and moves
// its data into this allocation's directory (a sticky ephemeral disk). A
// kill or detach of this runner ends the wait and moves nothing; a
// failed move is logged and the tasks start without the data, as in
// Nomad.
func (ar *AllocRunner) takeData(prev *AllocRunner) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-prev.DoneCh():
			waiting = false
		case <-tick.C:
			ar.mu.Lock()
			stop := ar.killing || ar.detached
			ar.mu.Unlock()
			if stop {
				return
			}
		}
	}
	if err := ar.allocDir.MoveData(prev.allocDir, ar.taskOrder); err != nil {
		ar.logger.Error("the previous allocation's data was not moved", "previous_alloc", prev.id, "error", err)
		return
	}
	ar.logger.Info("moved the previous allocation's data (sticky ephemeral disk)", "previous_alloc", prev.id)
}

package allocrunner

import (
	"sync"

	"github.com/drover-project/drover/structs"
)

// ReasonMainTasksDead is the kill reason of sidecars stopped because every
// main task of their allocation is dead.
const ReasonMainTasksDead = "Main tasks are dead"

// coordinator holds back a group's tasks by lifecycle phase, as Nomad's
// task coordinator: main tasks start once every prestart task completed
// successfully (prestart sidecars: once they started); poststart tasks
// once every main task started; poststop tasks once every other task is
// dead. Sidecars are killed once every non-sidecar task (poststop aside)
// is dead. A gate, once open, stays open. Groups without lifecycle tasks
// have no coordinator and pay nothing.
//
// The gates are derived from the task states alone, so an allocation
// restored after a client restart opens the gates its tasks had reached.
type coordinator struct {
	main, poststart, poststop chan struct{} // closed when the phase may start

	mu           sync.Mutex
	mainOpen     bool // guarded by mu
	postOpen     bool // guarded by mu
	stopOpen     bool // guarded by mu
	sidecarsDone bool // sidecars were killed; guarded by mu
}

func newCoordinator() *coordinator {
	return &coordinator{main: make(chan struct{}), poststart: make(chan struct{}), poststop: make(chan struct{})}
}

// gate is the channel a task with lifecycle l waits on before its first
// start; nil: it starts at once.
func (c *coordinator) gate(l *structs.TaskLifecycleConfig) <-chan struct{} {
	switch {
	case c == nil || l.HookIs(structs.TaskLifecycleHookPrestart):
		return nil
	case l.IsMain():
		return c.main
	case l.HookIs(structs.TaskLifecycleHookPoststart):
		return c.poststart
	default:
		return c.poststop
	}
}

// phaseView is what the coordinator reads of one task.
type phaseView struct {
	life    *structs.TaskLifecycleConfig
	dead    bool
	failed  bool
	started bool // it started at least once
}

// coordinate opens the gates the tasks' states allow and kills sidecars
// whose main tasks are all dead.
func (ar *AllocRunner) coordinate() {
	c := ar.coord
	if c == nil {
		return
	}
	prestartDone, mainStarted, othersDead, nonSidecarsDead := true, true, true, true
	for _, tr := range ar.tasks {
		v := tr.phaseView()
		switch {
		case v.life.HookIs(structs.TaskLifecycleHookPrestart) && v.life.Sidecar:
			prestartDone = prestartDone && v.started
		case v.life.HookIs(structs.TaskLifecycleHookPrestart):
			prestartDone = prestartDone && v.dead && !v.failed
		case v.life.IsMain():
			mainStarted = mainStarted && v.started
		}
		if !v.life.HookIs(structs.TaskLifecycleHookPoststop) {
			othersDead = othersDead && v.dead
			if !v.life.IsSidecar() {
				nonSidecarsDead = nonSidecarsDead && v.dead
			}
		}
	}
	c.mu.Lock()
	openMain := prestartDone && !c.mainOpen
	c.mainOpen = c.mainOpen || prestartDone
	openPost := c.mainOpen && mainStarted && !c.postOpen
	c.postOpen = c.postOpen || (c.mainOpen && mainStarted)
	openStop := othersDead && !c.stopOpen
	c.stopOpen = c.stopOpen || othersDead
	killSidecars := nonSidecarsDead && !othersDead && !c.sidecarsDone
	c.sidecarsDone = c.sidecarsDone || killSidecars
	c.mu.Unlock()
	if openMain {
		close(c.main)
	}
	if openPost {
		close(c.poststart)
	}
	if openStop {
		close(c.poststop)
	}
	if killSidecars {
		for _, tr := range ar.tasks {
			if tr.task.Lifecycle.IsSidecar() && !tr.isPoststop() { // a poststop "sidecar" runs as any poststop task
				tr.kill(ReasonMainTasksDead)
			}
		}
	}
}

// phaseView returns what the coordinator needs of the task's state.
func (tr *taskRunner) phaseView() phaseView {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return phaseView{
		life:    tr.task.Lifecycle,
		dead:    tr.state.State == structs.TaskStateDead,
		failed:  tr.state.Failed,
		started: !tr.state.StartedAt.IsZero(),
	}
}

// waitGate holds the task back until its lifecycle phase may start. It
// reports false when the task was killed (it is finished) or detached
// while it waited.
func (tr *taskRunner) waitGate() bool {
	if tr.gate == nil {
		return true
	}
	select {
	case <-tr.gate:
		return true
	default:
	}
	select {
	case <-tr.gate:
		return true
	case <-tr.killCh:
		tr.finish(tr.killFailing(), tr.killedEvent())
		return false
	case <-tr.detachCh:
		return false
	}
}

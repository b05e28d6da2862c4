package sim

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// allocState is where a simulated allocation is in its life.
type allocState uint8

const (
	allocPending  allocState = iota // seen; running is reported after ReportDelay
	allocRunning                    // reported running
	allocComplete                   // finished with exit code 0
	allocFailed                     // finished with a non-zero exit code
	allocStopped                    // stopped by the servers; reported complete
)

func (s allocState) terminal() bool { return s >= allocComplete }

// simAlloc is one allocation on a simulated node. Its fields are guarded
// by the node's mu.
type simAlloc struct {
	id        string
	group     *groupInfo
	state     allocState
	startedAt time.Time
	timer     clock.Timer
	gone      bool // no longer the node's (removeLocked)
}

// groupInfo is what the simulator needs of a job's task group, decoded
// once per job version.
type groupInfo struct {
	name  string
	tasks []string
	batch bool
	// jobID and namespace are the group's job's; services are the names
	// of the group's native services and its tasks', registered when an
	// allocation runs (services.go).
	jobID, namespace string
	services         []string
	// runFor and exitCode: the group finishes when its longest task does,
	// failed if any task exits non-zero.
	runFor   time.Duration
	exitCode int
}

// groupCache holds decoded groups by job version and group name.
type groupCache struct {
	// decode reads an allocation's encoded job (nil: structs.Decode; the
	// Nomad target reads Nomad's job shape).
	decode func(b []byte, out *structs.Job) error

	mu     sync.Mutex
	groups map[string]*groupInfo // guarded by mu
}

// maxCachedGroups bounds the cache (churn creates many job versions).
const maxCachedGroups = 100000

func newGroupCache() *groupCache { return &groupCache{groups: map[string]*groupInfo{}} }

// lookup returns the group of a; defaultRunFor applies to batch tasks
// whose mock_driver config sets no run_for. Only a job version and group
// not seen before costs decoding the allocation's job.
func (c *groupCache) lookup(a *wireAlloc, defaultRunFor time.Duration) (*groupInfo, error) {
	if a.job == nil {
		return nil, errNoJob
	}
	var scratch [128]byte
	key := append(scratch[:0], a.namespace...)
	key = append(append(key, 0), a.jobID...)
	key = strconv.AppendUint(append(key, 0), a.jobModifyIndex, 10)
	key = append(append(key, 0), a.taskGroup...)
	c.mu.Lock()
	g := c.groups[string(key)]
	c.mu.Unlock()
	if g != nil {
		return g, nil
	}
	var job structs.Job
	decode := c.decode
	if decode == nil {
		decode = func(b []byte, out *structs.Job) error { return structs.Decode(b, out) }
	}
	if err := decode(a.job, &job); err != nil {
		return nil, fmt.Errorf("decoding the allocation's job: %w", err)
	}
	g = newGroupInfo(&job, string(a.taskGroup), defaultRunFor)
	c.mu.Lock()
	if len(c.groups) >= maxCachedGroups {
		c.groups = map[string]*groupInfo{}
	}
	c.groups[string(key)] = g
	c.mu.Unlock()
	return g, nil
}

// newGroupInfo reads what the simulator needs of a job's task group.
func newGroupInfo(job *structs.Job, group string, defaultRunFor time.Duration) *groupInfo {
	g := &groupInfo{name: group, batch: structs.IsBatchType(job.Type), jobID: job.ID, namespace: job.Namespace}
	if g.namespace == "" {
		g.namespace = structs.DefaultNamespace
	}
	for _, tg := range job.TaskGroups {
		if tg.Name != group {
			continue
		}
		for _, s := range tg.Services {
			g.services = append(g.services, s.Name)
		}
		for _, t := range tg.Tasks {
			for _, s := range t.Services {
				g.services = append(g.services, s.Name)
			}
			g.tasks = append(g.tasks, t.Name)
			runFor, exitCode, set := mockPlan(t)
			if !set {
				runFor = defaultRunFor
			}
			g.runFor = max(g.runFor, runFor)
			if g.exitCode == 0 {
				g.exitCode = exitCode
			}
		}
	}
	return g
}

// mockPlan reads run_for and exit_code from a mock_driver task's config;
// set reports whether run_for was given. Other drivers' tasks are taken as
// mock tasks with no config.
func mockPlan(t *structs.Task) (runFor time.Duration, exitCode int, set bool) {
	if t.Driver != driverspec.MockName && t.Driver != driverspec.MockAlias {
		return 0, 0, false
	}
	cfg, err := driverspec.MockSpec.Decode(t.Config)
	if err != nil {
		return 0, 0, false
	}
	d, set := cfg["run_for"].(time.Duration)
	code, _ := cfg["exit_code"].(int64)
	return d, int(code), set
}

// startLocked records a new allocation and arms its running report.
func (n *simNode) startLocked(id string, g *groupInfo) {
	sa := &simAlloc{id: id, group: g, state: allocPending}
	n.allocs[id] = sa
	n.s.counters.allocsPending.Add(1)
	sa.timer = n.s.clock.AfterFunc(n.s.cfg.ReportDelay, func() { n.onTimer(sa, n.runLocked) })
}

// onTimer runs f(sa) under the node's lock if sa is still the node's.
func (n *simNode) onTimer(sa *simAlloc, f func(*simAlloc)) {
	if !n.s.enter() {
		return
	}
	defer n.s.wg.Done()
	n.mu.Lock()
	defer n.mu.Unlock()
	if sa.gone || n.s.stopping() {
		return
	}
	f(sa)
}

// runLocked reports a pending allocation running and, for batch work,
// arms its end.
func (n *simNode) runLocked(sa *simAlloc) {
	if sa.state != allocPending {
		return
	}
	now := n.s.clock.Now()
	sa.state, sa.startedAt = allocRunning, now
	n.s.counters.allocsPending.Add(-1)
	n.s.counters.allocsRunning.Add(1)
	n.s.updates.add(n.node, n.update(sa, now))
	if len(sa.group.services) > 0 {
		n.s.services.addLocked(n, sa)
	}
	if !sa.group.batch {
		return
	}
	if sa.group.runFor <= 0 {
		n.finishLocked(sa)
		return
	}
	sa.timer = n.s.clock.AfterFunc(sa.group.runFor, func() { n.onTimer(sa, n.finishLocked) })
}

// finishLocked ends a running batch allocation with its exit code.
func (n *simNode) finishLocked(sa *simAlloc) {
	if sa.state != allocRunning {
		return
	}
	n.s.counters.allocsRunning.Add(-1)
	if sa.group.exitCode != 0 {
		sa.state = allocFailed
		n.s.counters.allocsFailed.Add(1)
	} else {
		sa.state = allocComplete
		n.s.counters.allocsComplete.Add(1)
	}
	n.s.updates.add(n.node, n.update(sa, n.s.clock.Now()))
}

// stopLocked handles a stop from the servers: the allocation is reported
// complete after ReportDelay (the time its tasks take to be killed).
func (n *simNode) stopLocked(sa *simAlloc) {
	if sa.timer != nil {
		sa.timer.Stop()
	}
	sa.timer = n.s.clock.AfterFunc(n.s.cfg.ReportDelay, func() {
		n.onTimer(sa, func(sa *simAlloc) {
			if sa.state.terminal() {
				return
			}
			n.leaveStateLocked(sa)
			if sa.startedAt.IsZero() {
				sa.startedAt = n.s.clock.Now()
			}
			sa.state = allocStopped
			n.s.counters.allocsStopped.Add(1)
			n.s.updates.add(n.node, n.update(sa, n.s.clock.Now()))
		})
	})
}

// removeLocked forgets an allocation the servers no longer list.
func (n *simNode) removeLocked(sa *simAlloc) {
	if sa.timer != nil {
		sa.timer.Stop()
	}
	n.leaveStateLocked(sa)
	delete(n.allocs, sa.id)
	sa.gone = true
}

// leaveStateLocked takes sa out of the pending/running gauges.
func (n *simNode) leaveStateLocked(sa *simAlloc) {
	switch sa.state {
	case allocPending:
		n.s.counters.allocsPending.Add(-1)
	case allocRunning:
		n.s.counters.allocsRunning.Add(-1)
	}
}

// update builds the client update for sa's current state, with the task
// states and events a real client would send, and only the fields a
// client owns.
func (n *simNode) update(sa *simAlloc, now time.Time) *structs.Allocation {
	u := &structs.Allocation{ID: sa.id, ModifyTime: now.UnixNano()}
	states := make(map[string]*structs.TaskState, len(sa.group.tasks))
	if n.s.cfg.Target == TargetNomad {
		u.NodeID = n.node.ID // Nomad checks the batch's first node
	}
	started := sa.startedAt
	received := &structs.TaskEvent{Type: structs.TaskReceived, Time: started.UnixNano(), DisplayMessage: "Task received by client"}
	start := &structs.TaskEvent{Type: structs.TaskStarted, Time: started.UnixNano(), DisplayMessage: "Task started by client"}
	for _, name := range sa.group.tasks {
		ts := &structs.TaskState{StartedAt: started}
		switch sa.state {
		case allocRunning:
			u.ClientStatus, u.ClientDescription = structs.AllocClientStatusRunning, "Tasks are running"
			ts.State = structs.TaskStateRunning
			ts.Events = []*structs.TaskEvent{received, start}
		case allocComplete, allocFailed:
			u.ClientStatus, u.ClientDescription = structs.AllocClientStatusComplete, "All tasks have completed"
			ts.State, ts.FinishedAt = structs.TaskStateDead, now
			end := &structs.TaskEvent{Type: structs.TaskTerminated, Time: now.UnixNano(),
				ExitCode: sa.group.exitCode, DisplayMessage: "Exit Code: " + strconv.Itoa(sa.group.exitCode)}
			if sa.state == allocFailed {
				u.ClientStatus, u.ClientDescription = structs.AllocClientStatusFailed, "Failed tasks"
				ts.Failed = true
			}
			ts.Events = []*structs.TaskEvent{received, start, end}
		case allocStopped:
			u.ClientStatus, u.ClientDescription = structs.AllocClientStatusComplete, "All tasks have completed"
			ts.State, ts.FinishedAt = structs.TaskStateDead, now
			ts.Events = []*structs.TaskEvent{received,
				{Type: structs.TaskKilled, Time: now.UnixNano(), DisplayMessage: "Task successfully killed"}}
		}
		states[name] = ts
	}
	u.TaskStates = structs.NewTaskStates(states)
	return u
}

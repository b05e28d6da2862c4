package allocrunner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/structs"
)

// stamp is a shell command writing the time in nanoseconds to dir/name.
func stamp(dir, name string) string {
	return "date +%s%N > " + filepath.Join(dir, name)
}

// readStamp reads a time stamp written by stamp.
func readStamp(t *testing.T, dir, name string) int64 {
	t.Helper()
	buf, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("stamp %s: %v", name, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(buf)), 10, 64)
	if err != nil {
		t.Fatalf("stamp %s: %v", name, err)
	}
	return n
}

func withLifecycle(t *structs.Task, hook string, sidecar bool) *structs.Task {
	t.Lifecycle = &structs.TaskLifecycleConfig{Hook: hook, Sidecar: sidecar}
	return t
}

// before fails unless stamp a was written no later than stamp b.
func before(t *testing.T, dir, a, b string) {
	t.Helper()
	if ta, tb := readStamp(t, dir, a), readStamp(t, dir, b); ta > tb {
		t.Errorf("%s at %d is after %s at %d", a, ta, b, tb)
	}
}

// TestLifecycleOrdering runs real processes through every hook of a batch
// group: the prestart task finishes and the prestart sidecar starts before
// the main task; the poststart task starts once the main task runs; the
// sidecar is killed once the main task is dead, and the poststop task runs
// after that. Each process writes time stamps; the task events agree.
func TestLifecycleOrdering(t *testing.T) {
	e := newEnv(t)
	d := t.TempDir()
	a := testAlloc(structs.JobTypeBatch, failPolicy(0),
		withLifecycle(rawExec("poststop", stamp(d, "poststop.start")), structs.TaskLifecycleHookPoststop, false),
		withLifecycle(rawExec("post", stamp(d, "post.start")), structs.TaskLifecycleHookPoststart, false),
		rawExec("main", stamp(d, "main.start")+"; sleep 0.5; "+stamp(d, "main.end")),
		withLifecycle(rawExec("init", "sleep 0.3; "+stamp(d, "init.end")), structs.TaskLifecycleHookPrestart, false),
		withLifecycle(rawExec("side", stamp(d, "side.start")+"; exec sleep 60"), structs.TaskLifecycleHookPrestart, true),
	)
	ar := e.start(t, a, nil)
	select {
	case <-ar.DoneCh():
	case <-time.After(20 * time.Second):
		t.Fatalf("allocation did not finish: %s", describe(e.rec.get()))
	}
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	before(t, d, "init.end", "main.start")
	before(t, d, "side.start", "main.start")
	before(t, d, "main.start", "post.start")
	before(t, d, "main.end", "poststop.start")

	states := got.TaskStates.MustMap()
	for name, ts := range states {
		if ts.State != structs.TaskStateDead || ts.Failed {
			t.Errorf("task %s: %s failed=%v", name, ts.State, ts.Failed)
		}
	}
	side := states["side"]
	kill := findEvent(side, structs.TaskKilling)
	if kill == nil || kill.KillReason != ReasonMainTasksDead {
		t.Fatalf("sidecar events %v", eventTypes(side))
	}
	mainEnd := findEvent(states["main"], structs.TaskTerminated)
	if mainEnd == nil || kill.Time < mainEnd.Time {
		t.Errorf("sidecar killed at %d, before the main task ended (%v)", kill.Time, mainEnd)
	}
	stopStart := findEvent(states["poststop"], structs.TaskStarted)
	sideDead := findEvent(side, structs.TaskKilled)
	if stopStart == nil || sideDead == nil || stopStart.Time < sideDead.Time {
		t.Errorf("poststop started (%v) before the sidecar was dead (%v)", stopStart, sideDead)
	}
	if states["init"].Restarts != 0 || states["post"].Restarts != 0 {
		t.Errorf("ephemeral tasks restarted: init %d, post %d", states["init"].Restarts, states["post"].Restarts)
	}
}

// TestLifecycleServiceAlloc: in a service job a prestart task that
// succeeded is not restarted and does not make the allocation complete;
// the allocation runs while its main task does. Stopping it kills the
// main task and then runs the poststop task to completion.
func TestLifecycleServiceAlloc(t *testing.T) {
	e := newEnv(t)
	d := t.TempDir()
	a := testAlloc(structs.JobTypeService, failPolicy(2),
		withLifecycle(rawExec("init", stamp(d, "init.end")), structs.TaskLifecycleHookPrestart, false),
		rawExec("main", stamp(d, "main.start")+"; exec sleep 60"),
		withLifecycle(rawExec("cleanup", stamp(d, "cleanup.start")), structs.TaskLifecycleHookPoststop, false),
	)
	ar := e.start(t, a, nil)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool {
		st := a.TaskStates.MustMap()
		return a.ClientStatus == structs.AllocClientStatusRunning && st["main"].State == structs.TaskStateRunning
	})
	time.Sleep(200 * time.Millisecond) // the prestart task would have been restarted by now
	got := e.rec.get()
	st := got.TaskStates.MustMap()
	if got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("client status %s", got.ClientStatus)
	}
	if init := st["init"]; init.State != structs.TaskStateDead || init.Failed || init.Restarts != 0 {
		t.Fatalf("prestart task %+v", init)
	}
	if cl := st["cleanup"]; cl.State != structs.TaskStatePending || findEvent(cl, structs.TaskStarted) != nil {
		t.Fatalf("poststop task ran early: %v", eventTypes(cl))
	}
	before(t, d, "init.end", "main.start")

	stop := *a
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&stop)
	select {
	case <-ar.DoneCh():
	case <-time.After(20 * time.Second):
		t.Fatalf("allocation did not finish: %s", describe(e.rec.get()))
	}
	got = e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	st = got.TaskStates.MustMap()
	killed, started := findEvent(st["main"], structs.TaskKilled), findEvent(st["cleanup"], structs.TaskStarted)
	if killed == nil || started == nil || started.Time < killed.Time {
		t.Fatalf("poststop start %v, main killed %v", started, killed)
	}
	if cl := st["cleanup"]; cl.State != structs.TaskStateDead || cl.Failed {
		t.Fatalf("poststop task %+v", cl)
	}
	readStamp(t, d, "cleanup.start")
}

// TestLifecyclePrestartFailureFailsAlloc: a prestart task that keeps
// failing is restarted per the group's restart policy, then fails the
// allocation; the main task never starts and the poststop task still runs.
func TestLifecyclePrestartFailureFailsAlloc(t *testing.T) {
	e := newEnv(t)
	d := t.TempDir()
	a := testAlloc(structs.JobTypeService, failPolicy(1),
		withLifecycle(rawExec("init", "exit 4"), structs.TaskLifecycleHookPrestart, false),
		rawExec("main", stamp(d, "main.start")+"; exec sleep 60"),
		withLifecycle(rawExec("cleanup", stamp(d, "cleanup.start")), structs.TaskLifecycleHookPoststop, false),
	)
	ar := e.start(t, a, nil)
	select {
	case <-ar.DoneCh():
	case <-time.After(20 * time.Second):
		t.Fatalf("allocation did not finish: %s", describe(e.rec.get()))
	}
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	st := got.TaskStates.MustMap()
	if init := st["init"]; !init.Failed || init.Restarts != 1 || findEvent(init, structs.TaskNotRestarting) == nil {
		t.Fatalf("prestart task %+v: %v", init, eventTypes(init))
	}
	m := st["main"]
	if findEvent(m, structs.TaskStarted) != nil || m.Failed {
		t.Fatalf("main task %v failed=%v", eventTypes(m), m.Failed)
	}
	if ev := findEvent(m, structs.TaskKilled); ev == nil || ev.KillReason != ReasonSiblingFailed {
		t.Fatalf("main task events %v", eventTypes(m))
	}
	if _, err := os.Stat(filepath.Join(d, "main.start")); err == nil {
		t.Fatal("the main task ran")
	}
	if cl := st["cleanup"]; cl.State != structs.TaskStateDead || cl.Failed {
		t.Fatalf("poststop task %+v", cl)
	}
	readStamp(t, d, "cleanup.start")
}

// TestLifecycleLeader: the leader rule holds with lifecycle tasks: when
// the leader (a main task) exits, its sibling main task and the sidecar
// are killed, and the poststop task still runs after them.
func TestLifecycleLeader(t *testing.T) {
	e := newEnv(t)
	d := t.TempDir()
	leader := rawExec("leader", "sleep 0.2")
	leader.Leader = true
	a := testAlloc(structs.JobTypeBatch, failPolicy(0),
		withLifecycle(rawExec("side", "exec sleep 60"), structs.TaskLifecycleHookPrestart, true),
		leader,
		rawExec("other", "exec sleep 60"),
		// sidecar means nothing on a poststop task: it runs all the same.
		withLifecycle(rawExec("cleanup", stamp(d, "cleanup.start")), structs.TaskLifecycleHookPoststop, true),
	)
	ar := e.start(t, a, nil)
	select {
	case <-ar.DoneCh():
	case <-time.After(20 * time.Second):
		t.Fatalf("allocation did not finish: %s", describe(e.rec.get()))
	}
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	st := got.TaskStates.MustMap()
	for _, name := range []string{"side", "other"} {
		if ev := findEvent(st[name], structs.TaskKilling); ev == nil || ev.KillReason != ReasonLeaderDead {
			t.Errorf("%s events %v", name, eventTypes(st[name]))
		}
	}
	if cl := st["cleanup"]; cl.State != structs.TaskStateDead || cl.Failed || findEvent(cl, structs.TaskStarted) == nil {
		t.Fatalf("poststop task %+v", cl)
	}
	readStamp(t, d, "cleanup.start")
}

// TestLifecycleRestoredAfterPrestart: an allocation restored after a client
// restart, whose prestart task had completed and whose main task had not
// started, starts the main task without running the prestart task again.
func TestLifecycleRestoredAfterPrestart(t *testing.T) {
	e := newEnv(t)
	d := t.TempDir()
	a := testAlloc(structs.JobTypeBatch, failPolicy(0),
		withLifecycle(rawExec("init", stamp(d, "init.again")), structs.TaskLifecycleHookPrestart, false),
		rawExec("main", stamp(d, "main.start")),
	)
	if err := e.db.PutAlloc(a); err != nil {
		t.Fatal(err)
	}
	restored := map[string]*clientstate.TaskRunnerState{
		"init": {State: &structs.TaskState{State: structs.TaskStateDead, StartedAt: time.Now().Add(-time.Second), FinishedAt: time.Now()}},
		"main": {State: &structs.TaskState{State: structs.TaskStatePending}},
	}
	ar := e.start(t, a, restored)
	select {
	case <-ar.DoneCh():
	case <-time.After(20 * time.Second):
		t.Fatalf("allocation did not finish: %s", describe(e.rec.get()))
	}
	e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	readStamp(t, d, "main.start")
	if _, err := os.Stat(filepath.Join(d, "init.again")); err == nil {
		t.Fatal("the completed prestart task ran again")
	}
}

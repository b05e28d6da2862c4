package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// TestShutdownDelays: stopping an allocation waits the group's
// shutdown_delay, then the task's (with a "Waiting for shutdown delay"
// event), before the task gets its kill signal; a real process sees the
// signal no earlier than that.
func TestShutdownDelays(t *testing.T) {
	e := newEnv(t)
	out := t.TempDir()
	task := rawExec("web", `trap 'date +%s%N > "$OUT/killed"; exit 0' INT TERM; while true; do sleep 0.05; done`)
	task.Env = map[string]string{"OUT": out}
	task.ShutdownDelay = 300 * time.Millisecond
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	groupDelay := 200 * time.Millisecond
	a.Job.TaskGroups[0].ShutdownDelay = &groupDelay
	ar := e.start(t, a, nil)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
	stopped := a.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	stopAt := time.Now()
	ar.Update(stopped)
	select {
	case <-ar.DoneCh():
	case <-time.After(10 * time.Second):
		t.Fatal("alloc did not stop")
	}
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	ts := got.TaskStates.MustMap()["web"]
	wait, killing := findEvent(ts, structs.TaskWaitingShuttingDownDelay), findEvent(ts, structs.TaskKilling)
	if wait == nil || killing == nil || !strings.Contains(wait.DisplayMessage, "300ms") {
		t.Fatalf("events %v", eventTypes(ts))
	}
	if d := time.Duration(wait.Time - stopAt.UnixNano()); d < groupDelay {
		t.Fatalf("the task's delay began %v after the stop, before the group's %v passed", d, groupDelay)
	}
	if d := time.Duration(killing.Time - wait.Time); d < task.ShutdownDelay {
		t.Fatalf("killed %v after the task's delay began; want at least %v", d, task.ShutdownDelay)
	}
	buf, err := os.ReadFile(filepath.Join(out, "killed"))
	if err != nil {
		t.Fatalf("the process never saw its signal: %v", err)
	}
	var ns int64
	for _, c := range strings.TrimSpace(string(buf)) {
		ns = ns*10 + int64(c-'0')
	}
	if d := time.Duration(ns - stopAt.UnixNano()); d < groupDelay+task.ShutdownDelay {
		t.Fatalf("the process got its signal %v after the stop; want at least %v", d, groupDelay+task.ShutdownDelay)
	}
}

// TestTaskRestartPolicyOverridesGroup: a task's own restart block
// applies to it; its sibling keeps the group's.
func TestTaskRestartPolicyOverridesGroup(t *testing.T) {
	e := newEnv(t)
	own := &structs.Task{Name: "own", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms", "exit_code": 1},
		RestartPolicy: failPolicy(3)}
	group := &structs.Task{Name: "group", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms", "exit_code": 1}}
	a := testAlloc(structs.JobTypeBatch, failPolicy(1), own, group)
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	states := got.TaskStates.MustMap()
	// The group's task fails after its one restart and kills its
	// sibling, which may not have used all of its three by then.
	if r := states["group"].Restarts; r != 1 {
		t.Fatalf("group-policy task restarted %d times, want 1 (%s)", r, describe(got))
	}
	if r := states["own"].Restarts; r < 1 {
		t.Fatalf("own-policy task restarted %d times (%s)", r, describe(got))
	}
}

// TestLogsDisabled: a task whose logs block disables its logs writes no
// log files, and its output does not block it.
func TestLogsDisabled(t *testing.T) {
	e := newEnv(t)
	task := rawExec("quiet", "head -c 200000 /dev/zero; echo done")
	task.LogConfig = &structs.LogConfig{MaxFiles: 1, MaxFileSizeMB: 1, Disabled: true}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	files, _ := filepath.Glob(filepath.Join(e.root, a.ID, "alloc", "logs", "quiet.std*"))
	if len(files) != 0 {
		t.Fatalf("log files %v for a task with logs disabled", files)
	}
}

// TestShutdownDelayDeregistersFirst: while a task waits its
// shutdown_delay, its service is already deregistered (clients of the
// service stop finding it before the task is signalled).
func TestShutdownDelayDeregistersFirst(t *testing.T) {
	e := newEnv(t)
	task := rawExec("web", "sleep 30")
	task.ShutdownDelay = time.Second
	task.Services = []*structs.Service{{Name: "api", Provider: "nomad", PortLabel: "8080", AddressMode: "auto", TaskName: "web"}}
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	reg := newFakeRegistrar()
	ar := e.startWithServices(t, a, reg)
	waitUntil(t, "service registered", 10*time.Second, func() bool { return len(reg.snapshot()) == 1 })
	stopped := a.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(stopped)
	waitUntil(t, "service deregistered and the delay begun", 5*time.Second, func() bool {
		return len(reg.snapshot()) == 0 && findEvent(ar.tasks["web"].State(), structs.TaskWaitingShuttingDownDelay) != nil
	})
	ts := ar.tasks["web"].State()
	if findEvent(ts, structs.TaskKilling) != nil || ts.State != structs.TaskStateRunning {
		t.Fatalf("the service went after the kill: %s %v", ts.State, eventTypes(ts))
	}
	<-ar.DoneCh()
}

// TestTaskConfigMounts: the driver is told each host volume mount, with
// the node's path and read-only when any of the three says so.
func TestTaskConfigMounts(t *testing.T) {
	e := newEnv(t)
	task := rawExec("web", "true")
	task.VolumeMounts = []*structs.VolumeMount{{Volume: "a", Destination: "/srv/a"}, {Volume: "b", Destination: "b", ReadOnly: true}}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	a.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{
		"a": {Name: "a", Type: "host", Source: "certs"}, "b": {Name: "b", Type: "host", Source: "data"}}
	ar, err := New(Config{Alloc: a, AllocRoot: e.root, Drivers: testDrivers(), Updater: e.rec.update,
		Node: NodeInfo{ID: "n1", HostVolumes: map[string]*structs.ClientHostVolumeConfig{
			"certs": {Name: "certs", Path: "/etc/ssl/certs", ReadOnly: true}, "data": {Name: "data", Path: "/srv/data"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := ar.tasks["web"].taskConfig().Mounts
	if len(got) != 2 || *got[0] != (driver.MountConfig{TaskPath: "/srv/a", HostPath: "/etc/ssl/certs", ReadOnly: true}) ||
		*got[1] != (driver.MountConfig{TaskPath: "b", HostPath: "/srv/data", ReadOnly: true}) {
		t.Fatalf("mounts %+v", got)
	}
}

package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/driver/mock"
	"github.com/drover-project/drover/agent/client/driver/rawexec"
	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/structs"
)

type catalog map[string]driver.Driver

func (c catalog) Driver(name string) driver.Driver { return c[name] }

func testDrivers() catalog {
	return catalog{
		"raw_exec":    rawexec.New(rawexec.Config{Enabled: true}),
		"mock_driver": mock.New("mock_driver"),
	}
}

// recorder keeps the latest allocation the runner published.
type recorder struct {
	mu     sync.Mutex
	latest *structs.Allocation
	n      int
}

func (r *recorder) update(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest, r.n = a, r.n+1
}

func (r *recorder) get() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// waitFor polls the latest published allocation until cond holds.
func (r *recorder) waitFor(t *testing.T, what string, cond func(a *structs.Allocation) bool) *structs.Allocation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if a := r.get(); a != nil && cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, describe(r.get()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describe(a *structs.Allocation) string {
	if a == nil {
		return "<none>"
	}
	var b strings.Builder
	b.WriteString(a.ClientStatus)
	for name, ts := range a.TaskStates.MustMap() {
		b.WriteString(" " + name + ":" + ts.State + "[")
		for _, e := range ts.Events {
			b.WriteString(e.Type + "(" + e.DisplayMessage + ") ")
		}
		b.WriteString("]")
	}
	return b.String()
}

func testAlloc(jobType string, policy *structs.RestartPolicy, tasks ...*structs.Task) *structs.Allocation {
	job := &structs.Job{ID: "job1", Name: "job1", Type: jobType, Namespace: "default", Region: "global",
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, RestartPolicy: policy, Tasks: tasks}}}
	for _, t := range tasks {
		if t.KillTimeout == 0 {
			t.KillTimeout = 500 * time.Millisecond
		}
	}
	return &structs.Allocation{ID: structs.GenerateUUID(), Name: "job1.web[2]", Namespace: "default", JobID: "job1",
		TaskGroup: "web", Job: job, DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
}

type runnerEnv struct {
	root   string
	db     *clientstate.DB
	rec    *recorder
	faults faultRecorder
}

// faultRecorder keeps the node faults a runner reported.
type faultRecorder struct {
	mu  sync.Mutex
	got []*structs.NodeFault
}

func (f *faultRecorder) add(nf *structs.NodeFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, nf)
}

func (f *faultRecorder) list() []*structs.NodeFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*structs.NodeFault(nil), f.got...)
}

func newEnv(t *testing.T) *runnerEnv {
	t.Helper()
	dir := t.TempDir()
	db, err := clientstate.Open(filepath.Join(dir, "client", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &runnerEnv{root: filepath.Join(dir, "alloc"), db: db, rec: &recorder{}}
}

func (e *runnerEnv) start(t *testing.T, a *structs.Allocation, restored map[string]*clientstate.TaskRunnerState) *AllocRunner {
	t.Helper()
	ar, err := New(Config{Alloc: a, AllocRoot: e.root, Drivers: testDrivers(), StateDB: e.db,
		Updater: e.rec.update, Node: NodeInfo{ID: "n1", Datacenter: "dc7", Region: "global"}, Restored: restored,
		NodeFault: e.faults.add})
	if err != nil {
		t.Fatal(err)
	}
	ar.Run()
	t.Cleanup(func() { ar.Kill("test cleanup"); <-ar.DoneCh() })
	return ar
}

func eventTypes(ts *structs.TaskState) []string {
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type)
	}
	return out
}

func findEvent(ts *structs.TaskState, typ string) *structs.TaskEvent {
	for _, e := range ts.Events {
		if e.Type == typ {
			return e
		}
	}
	return nil
}

func failPolicy(attempts int) *structs.RestartPolicy {
	return &structs.RestartPolicy{Attempts: attempts, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail}
}

func rawExec(name, script string) *structs.Task {
	return &structs.Task{Name: name, Driver: "raw_exec", Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}
}

func TestBatchFailsWithExitCodeAndLogs(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), rawExec("hello", "echo hi; exit 3"))
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	ts := got.TaskStates.MustMap()["hello"]
	want := []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskTerminated, structs.TaskNotRestarting}
	if strings.Join(eventTypes(ts), ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", eventTypes(ts), want)
	}
	if ev := findEvent(ts, structs.TaskTerminated); ev.ExitCode != 3 {
		t.Fatalf("exit code = %d", ev.ExitCode)
	}
	if ts.State != structs.TaskStateDead || !ts.Failed {
		t.Fatalf("task state %+v", ts)
	}
	out, err := os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "hello.stdout.0"))
	if err != nil || string(out) != "hi\n" {
		t.Fatalf("stdout log = %q, %v", out, err)
	}
}

func TestBatchSuccessCompletes(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeBatch, failPolicy(3), &structs.Task{Name: "m", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms"}})
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	if ts := got.TaskStates.MustMap()["m"]; ts.Failed || ts.Restarts != 0 {
		t.Fatalf("task state %+v", ts)
	}
}

func TestServiceRestartsPerPolicy(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeService, failPolicy(2),
		&structs.Task{Name: "m", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms", "exit_code": 0}})
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	ts := got.TaskStates.MustMap()["m"]
	if ts.Restarts != 2 {
		t.Fatalf("restarts = %d (%s)", ts.Restarts, describe(got))
	}
	var restarting, started int
	for _, ev := range ts.Events {
		switch ev.Type {
		case structs.TaskRestarting:
			restarting++
		case structs.TaskStarted:
			started++
		}
	}
	if restarting < 2 || findEvent(ts, structs.TaskNotRestarting) == nil {
		t.Fatalf("events %v", eventTypes(ts))
	}
	if nr := findEvent(ts, structs.TaskNotRestarting); !strings.Contains(nr.RestartReason, "Exceeded allowed attempts 2") {
		t.Fatalf("reason %q", nr.RestartReason)
	}
}

func TestRestartDelayModeKeepsGoing(t *testing.T) {
	e := newEnv(t)
	policy := &structs.RestartPolicy{Attempts: 1, Interval: 100 * time.Millisecond, Delay: 5 * time.Millisecond, Mode: structs.RestartPolicyModeDelay}
	a := testAlloc(structs.JobTypeService, policy,
		&structs.Task{Name: "m", Driver: "mock_driver", Config: map[string]any{"run_for": "5ms", "exit_code": 1}})
	ar := e.start(t, a, nil)
	e.rec.waitFor(t, "4 restarts", func(a *structs.Allocation) bool { return a.TaskStates.MustMap()["m"].Restarts >= 4 })
	if a := e.rec.get(); a.ClientStatus == structs.AllocClientStatusFailed {
		t.Fatalf("delay mode failed the alloc: %s", describe(a))
	}
	ar.Kill("done")
	<-ar.DoneCh()
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name      string
		task      *structs.Task
		wantEvent string
		wantText  string
	}{
		{"missing binary", &structs.Task{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/nonexistent/prog"}},
			structs.TaskDriverFailure, "no such file or directory"},
		{"bad config", &structs.Task{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": 7, "bogus": true}},
			structs.TaskFailedValidate, "Config.bogus"},
		{"no such driver", &structs.Task{Name: "t", Driver: "docker", Config: map[string]any{}},
			structs.TaskDriverFailure, "not available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ar := e.start(t, testAlloc(structs.JobTypeBatch, failPolicy(0), tc.task), nil)
			<-ar.DoneCh()
			got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
			ev := findEvent(got.TaskStates.MustMap()["t"], tc.wantEvent)
			if ev == nil {
				t.Fatalf("no %s event: %s", tc.wantEvent, describe(got))
			}
			if !strings.Contains(ev.DisplayMessage, tc.wantText) {
				t.Fatalf("event message %q lacks %q", ev.DisplayMessage, tc.wantText)
			}
		})
	}
}

// liveGroupMembers lists processes of group pgid that have not exited.
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// uniqueSleep returns a sleep duration (about 1000 s) unique to this call,
// found again in /proc/<pid>/cmdline.
func uniqueSleep() string {
	return fmt.Sprintf("1000.%09d", time.Now().UnixNano()%1e9)
}

// processesWithMarker counts live processes whose command line has marker.
func processesWithMarker(marker string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 && s[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}

func TestStopKillsProcessGroup(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeService, failPolicy(0), rawExec("web", "sleep 1000 & wait"))
	ar := e.start(t, a, nil)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
	tr := ar.tasks["web"]
	pid := tr.handleState().PID
	deadline := time.Now().Add(5 * time.Second)
	for len(liveGroupMembers(t, pid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("child sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := a.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(stopped)
	select {
	case <-ar.DoneCh():
	case <-time.After(10 * time.Second):
		t.Fatal("alloc did not stop")
	}
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	ts := got.TaskStates.MustMap()["web"]
	if findEvent(ts, structs.TaskKilling) == nil || findEvent(ts, structs.TaskKilled) == nil || ts.Failed {
		t.Fatalf("events %v failed=%v", eventTypes(ts), ts.Failed)
	}
	// A killed process leaves the group once the kernel has finished its
	// exit, a moment after the signal; one that is still there after
	// seconds was not killed.
	deadline = time.Now().Add(5 * time.Second)
	for left := liveGroupMembers(t, pid); len(left) != 0; left = liveGroupMembers(t, pid) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left in group %d: %v", pid, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSiblingFailureKillsOthers(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeService, failPolicy(0),
		&structs.Task{Name: "bad", Driver: "mock_driver", Config: map[string]any{"run_for": "10ms", "exit_code": 2}},
		&structs.Task{Name: "good", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"}})
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed && a.TaskStates.MustMap()["good"].State == structs.TaskStateDead
	})
	// The good task is killed with the reason: a Killing event when it was
	// running, or (on a loaded machine the bad one can fail first) a
	// Killed event when it had not started yet.
	good := got.TaskStates.MustMap()["good"]
	ev := findEvent(good, structs.TaskKilling)
	if ev == nil && findEvent(good, structs.TaskStarted) == nil {
		ev = findEvent(good, structs.TaskKilled)
	}
	if ev == nil || ev.KillReason != ReasonSiblingFailed {
		t.Fatalf("good task events %v", eventTypes(good))
	}
}

func TestTaskEnvironment(t *testing.T) {
	e := newEnv(t)
	task := rawExec("envtask", `echo "$NOMAD_ALLOC_ID $NOMAD_TASK_NAME $NOMAD_GROUP_NAME $NOMAD_JOB_NAME $NOMAD_ALLOC_INDEX $NOMAD_DC $NOMAD_REGION $NOMAD_NAMESPACE $NOMAD_CPU_LIMIT $NOMAD_MEMORY_LIMIT $CUSTOM"; echo "$NOMAD_ALLOC_DIR"; echo "$NOMAD_TASK_DIR"; pwd`)
	task.Env = map[string]string{"CUSTOM": "yes"}
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	a.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"envtask": {Cpu: structs.AllocatedCpuResources{CpuShares: 250}, Memory: structs.AllocatedMemoryResources{MemoryMB: 128}}}}
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	out, _ := os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "envtask.stdout.0"))
	dir := filepath.Join(e.root, a.ID)
	want := a.ID + " envtask web job1 2 dc7 global default 250 128 yes\n" +
		filepath.Join(dir, "alloc") + "\n" + filepath.Join(dir, "envtask", "local") + "\n" + filepath.Join(dir, "envtask") + "\n"
	if string(out) != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

// The client goes away and a new one restores the allocation: it
// re-attaches to the running task (one process, one Started event) and
// stops it later. lostHandle: the client died after starting the task and
// before saving its handle (the restored state has neither the handle nor
// the Started event), and the new runner adopts the run instead of
// starting a second copy.
func TestRestoreReattachesWithoutDuplicate(t *testing.T) {
	for _, lostHandle := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost handle=%v", lostHandle), func(t *testing.T) {
			e := newEnv(t)
			marker := uniqueSleep()
			a := testAlloc(structs.JobTypeService, failPolicy(0), rawExec("web", "exec sleep "+marker))
			ar := e.start(t, a, nil)
			e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
			pid := ar.tasks["web"].handleState().PID

			// The client goes away without touching its tasks.
			ar.Shutdown()
			if n := processesWithMarker(marker); n != 1 {
				t.Fatalf("%d processes after shutdown, want 1", n)
			}

			entries, err := e.db.Allocs()
			if err != nil || len(entries) != 1 {
				t.Fatalf("restored entries %d, %v", len(entries), err)
			}
			if lostHandle {
				// What the client had saved just before the start.
				st := entries[0].Tasks["web"]
				st.Handle = nil
				st.State.State = structs.TaskStatePending
				var before []*structs.TaskEvent
				for _, ev := range st.State.Events {
					if ev.Type == structs.TaskStarted {
						break
					}
					before = append(before, ev)
				}
				st.State.Events = before
			}
			e.rec = &recorder{}
			ar2 := e.start(t, entries[0].Alloc, entries[0].Tasks)
			got := e.rec.waitFor(t, "re-attached", func(a *structs.Allocation) bool {
				return a.ClientStatus == structs.AllocClientStatusRunning && ar2.tasks["web"].handleState() != nil
			})
			if p := ar2.tasks["web"].handleState(); p == nil || p.PID != pid {
				t.Fatalf("re-attached to %+v, want pid %d: %s", p, pid, describe(got))
			}
			if n := strings.Count(strings.Join(eventTypes(got.TaskStates.MustMap()["web"]), ","), structs.TaskStarted); n != 1 {
				t.Fatalf("Started events = %d: %v", n, eventTypes(got.TaskStates.MustMap()["web"]))
			}
			time.Sleep(300 * time.Millisecond) // longer than the re-attach poll
			if n := processesWithMarker(marker); n != 1 {
				t.Fatalf("%d processes after restore, want 1", n)
			}

			stopped := entries[0].Alloc.Copy()
			stopped.DesiredStatus = structs.AllocDesiredStatusStop
			ar2.Update(stopped)
			<-ar2.DoneCh()
			e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
			if n := processesWithMarker(marker); n != 0 {
				t.Fatalf("%d processes after stop", n)
			}
		})
	}
}

func TestRestoreDoesNotAdoptRecycledPID(t *testing.T) {
	e := newEnv(t)
	marker := uniqueSleep()
	a := testAlloc(structs.JobTypeService, failPolicy(1), rawExec("web", "exec sleep "+marker))
	if err := e.db.PutAlloc(a); err != nil {
		t.Fatal(err)
	}
	// A saved handle naming a live process (this test) with the wrong
	// start time: it must not be adopted.
	restored := map[string]*clientstate.TaskRunnerState{"web": {
		State:  &structs.TaskState{State: structs.TaskStateRunning, Events: []*structs.TaskEvent{{Type: structs.TaskStarted}}},
		Handle: &driver.HandleState{Driver: "raw_exec", PID: os.Getpid(), ProcStartTime: 1},
	}}
	ar := e.start(t, a, restored)
	got := e.rec.waitFor(t, "restarted and running", func(a *structs.Allocation) bool {
		ts := a.TaskStates.MustMap()["web"]
		return a.ClientStatus == structs.AllocClientStatusRunning && ts.Restarts == 1
	})
	ts := got.TaskStates.MustMap()["web"]
	if ev := findEvent(ts, structs.TaskTerminated); ev == nil || !strings.Contains(ev.Message, "unknown") {
		t.Fatalf("events %v", eventTypes(ts))
	}
	if p := ar.tasks["web"].handleState(); p == nil || p.PID == os.Getpid() {
		t.Fatalf("adopted the wrong process: %+v", p)
	}
	if n := processesWithMarker(marker); n != 1 {
		t.Fatalf("%d task processes, want 1", n)
	}
}

func TestRestoredDeadTaskStaysDead(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), &structs.Task{Name: "m", Driver: "mock_driver"})
	if err := e.db.PutAlloc(a); err != nil {
		t.Fatal(err)
	}
	restored := map[string]*clientstate.TaskRunnerState{"m": {State: &structs.TaskState{State: structs.TaskStateDead}}}
	ar := e.start(t, a, restored)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "complete", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusComplete })
	if len(got.TaskStates.MustMap()["m"].Events) != 0 {
		t.Fatalf("a dead task ran again: %v", eventTypes(got.TaskStates.MustMap()["m"]))
	}
}

// A batch task re-attached after a client restart ends with its own exit
// code, whether it exits after the re-attach or while no client runs: a
// success completes the allocation and is never run again, a failure is
// reported with its code. Its output before and after the restart reaches
// the same log.
func TestRestoredBatchTaskReportsItsExitCode(t *testing.T) {
	tests := []struct {
		name          string
		code          int
		exitWhileDown bool
		wantStatus    string
	}{
		{"exit 0 after re-attach", 0, false, structs.AllocClientStatusComplete},
		{"exit 0 while the client is down", 0, true, structs.AllocClientStatusComplete},
		{"exit 3 while the client is down", 3, true, structs.AllocClientStatusFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			script := fmt.Sprintf(`echo before; while [ ! -e release ]; do sleep 0.02; done; echo after; exit %d`, tc.code)
			// A failure would be restarted if the policy saw one.
			policy := failPolicy(2)
			if tc.code != 0 {
				policy = failPolicy(0)
			}
			a := testAlloc(structs.JobTypeBatch, policy, rawExec("job", script))
			ar := e.start(t, a, nil)
			e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
			saved := ar.tasks["job"].handleState()
			ar.Shutdown() // the client goes away; the task does not
			releaseFile := filepath.Join(e.root, a.ID, "job", "release")
			if tc.exitWhileDown {
				if err := os.WriteFile(releaseFile, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				waitNoProcess(t, saved.PID)
			}

			entries, err := e.db.Allocs()
			if err != nil || len(entries) != 1 {
				t.Fatalf("restored entries %d, %v", len(entries), err)
			}
			e.rec = &recorder{}
			ar2 := e.start(t, entries[0].Alloc, entries[0].Tasks)
			if !tc.exitWhileDown {
				e.rec.waitFor(t, "re-attached", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
				if err := os.WriteFile(releaseFile, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			<-ar2.DoneCh()
			got := e.rec.waitFor(t, tc.wantStatus, func(a *structs.Allocation) bool { return a.ClientStatus == tc.wantStatus })
			ts := got.TaskStates.MustMap()["job"]
			if ts.State != structs.TaskStateDead || ts.Restarts != 0 || findEvent(ts, structs.TaskRestarting) != nil {
				t.Fatalf("task state %s: %s", ts.State, describe(got))
			}
			if n := strings.Count(strings.Join(eventTypes(ts), ","), structs.TaskStarted); n != 1 {
				t.Fatalf("Started events = %d: %v", n, eventTypes(ts))
			}
			ev := findEvent(ts, structs.TaskTerminated)
			if ev == nil || ev.ExitCode != tc.code || ev.Message != "" {
				t.Fatalf("terminated event %+v: %s", ev, describe(got))
			}
			out, err := os.ReadFile(filepath.Join(e.root, a.ID, "alloc", "logs", "job.stdout.0"))
			if err != nil || string(out) != "before\nafter\n" {
				t.Fatalf("stdout log = %q, %v", out, err)
			}
		})
	}
}

// waitNoProcess waits until pid is gone from /proc (a zombie counts as
// gone).
func waitNoProcess(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); err != nil || (i > 0 && len(s) > i+2 && s[i+2] == 'Z') {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMissingGroupFailsAlloc(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeBatch, nil, &structs.Task{Name: "m", Driver: "mock_driver"})
	a.TaskGroup = "nope"
	ar := e.start(t, a, nil)
	<-ar.DoneCh()
	got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	if !strings.Contains(got.ClientDescription, "nope") {
		t.Fatalf("description %q", got.ClientDescription)
	}
}

func TestDestroyRemovesStateAndLateUpdatesDoNotRevive(t *testing.T) {
	e := newEnv(t)
	a := testAlloc(structs.JobTypeService, failPolicy(0), &structs.Task{Name: "m", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"}})
	ar := e.start(t, a, nil)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
	if err := ar.Destroy(); err != nil {
		t.Fatal(err)
	}
	ar.Update(a.Copy()) // a late server update
	entries, err := e.db.Allocs()
	if err != nil || len(entries) != 0 {
		t.Fatalf("saved allocations after destroy: %d, %v", len(entries), err)
	}
	if _, err := os.Stat(filepath.Join(e.root, a.ID)); !os.IsNotExist(err) {
		t.Fatalf("alloc dir after destroy: %v", err)
	}
}

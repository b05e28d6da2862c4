package allocrunner

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// The test binary doubles as a small HTTP server for raw_exec tasks: with
// DROVER_TEST_HTTP_HELPER set it serves GET /health on $PORT with 200
// until the file $NOMAD_TASK_DIR/stop-answering exists, then stops
// listening (the process keeps running, as a hung server does). A new
// run removes the file first.
func init() {
	if os.Getenv("DROVER_TEST_HTTP_HELPER") == "" {
		return
	}
	marker := filepath.Join(os.Getenv("NOMAD_TASK_DIR"), "stop-answering")
	os.Remove(marker)
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		os.Exit(3)
	}
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				ln.Close()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.NotFound(w, r)
	}))
	select {} // stopped answering; keep running until killed
}

// fakeRegistrar records what the runner registers.
type fakeRegistrar struct {
	mu      sync.Mutex
	regs    map[string]*structs.ServiceRegistration
	allocs  []string
	removed []string
}

func newFakeRegistrar() *fakeRegistrar {
	return &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}
}

func (f *fakeRegistrar) RegisterServices(regs []*structs.ServiceRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range regs {
		f.regs[r.ID] = r
	}
	return nil
}

func (f *fakeRegistrar) DeregisterServices(_ string, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		delete(f.regs, id)
		f.removed = append(f.removed, id)
	}
	return nil
}

func (f *fakeRegistrar) DeregisterAlloc(allocID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, r := range f.regs {
		if r.AllocID == allocID {
			delete(f.regs, id)
		}
	}
	f.allocs = append(f.allocs, allocID)
	return nil
}

func (f *fakeRegistrar) snapshot() map[string]*structs.ServiceRegistration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*structs.ServiceRegistration, len(f.regs))
	for k, v := range f.regs {
		out[k] = v
	}
	return out
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *runnerEnv) startWithServices(t *testing.T, a *structs.Allocation, reg ServiceRegistrar) *AllocRunner {
	t.Helper()
	ar, err := New(Config{Alloc: a, AllocRoot: e.root, Drivers: testDrivers(), StateDB: e.db,
		Updater: e.rec.update, Services: reg,
		Node: NodeInfo{ID: "n1", Datacenter: "dc7", Region: "global",
			Attributes: map[string]string{nodeIPAttr: "127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	ar.Run()
	t.Cleanup(func() { ar.Kill("test cleanup"); <-ar.DoneCh() })
	return ar
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServicesRegisteredWhileRunning: a task's services are registered
// once it runs and the group's once the allocation runs, with the
// address of the port label (or number), Nomad's IDs and interpolated
// names and tags; a stop removes them all.
func TestServicesRegisteredWhileRunning(t *testing.T) {
	e := newEnv(t)
	task := rawExec("web", "sleep 30")
	task.Services = []*structs.Service{{Name: "api-${NOMAD_TASK_NAME}", Provider: "nomad", PortLabel: "8080",
		Tags: []string{"alloc-${NOMAD_ALLOC_INDEX}"}, AddressMode: "auto", TaskName: "web"}}
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "http", AddressMode: "alloc"}}
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 23456, To: 8000, HostIP: "10.1.2.3"}}}}
	reg := newFakeRegistrar()
	ar := e.startWithServices(t, a, reg)

	taskID := structs.ServiceRegistrationID(a.ID, "web", "web", "api-web", "8080")
	groupID := structs.ServiceRegistrationID(a.ID, "", "web", "web", "http")
	waitUntil(t, "both services registered", 10*time.Second, func() bool { return len(reg.snapshot()) == 2 })
	regs := reg.snapshot()
	if r := regs[taskID]; r == nil || r.Address != "127.0.0.1" || r.Port != 8080 || !slices.Equal(r.Tags, []string{"alloc-2"}) ||
		r.NodeID != "n1" || r.Datacenter != "dc7" || r.JobID != "job1" || r.Namespace != "default" {
		t.Fatalf("task service: %+v (all %v)", r, regs)
	}
	if r := regs[groupID]; r == nil || r.Address != "10.1.2.3" || r.Port != 8000 {
		t.Fatalf("group service (alloc mode maps to To): %+v", r)
	}
	if !strings.HasPrefix(taskID, "_nomad-task-"+a.ID+"-web-api-web-8080") {
		t.Fatalf("task service ID %q", taskID)
	}

	stopped := *a
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&stopped)
	<-ar.DoneCh()
	waitUntil(t, "services removed", 10*time.Second, func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return len(reg.regs) == 0 && len(reg.allocs) == 1
	})
}

// TestServiceProblemsAreTaskEvents: a port label the allocation lacks,
// and the driver address mode, are reported as task events and not
// registered.
func TestServiceProblemsAreTaskEvents(t *testing.T) {
	e := newEnv(t)
	task := rawExec("web", "sleep 30")
	task.Services = []*structs.Service{
		{Name: "nolabel", Provider: "nomad", PortLabel: "missing", AddressMode: "auto", TaskName: "web"},
		{Name: "drv", Provider: "nomad", PortLabel: "9090", AddressMode: "driver", TaskName: "web"},
		{Name: "ok", Provider: "nomad", PortLabel: "9091", AddressMode: "host", TaskName: "web"},
	}
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	reg := newFakeRegistrar()
	e.startWithServices(t, a, reg)
	waitUntil(t, "the good service", 10*time.Second, func() bool { return len(reg.snapshot()) == 1 })
	got := e.rec.waitFor(t, "two hook failure events", func(a *structs.Allocation) bool {
		ts := a.TaskStates.MustMap()["web"]
		n := 0
		for _, ev := range ts.Events {
			if ev.Type == structs.TaskHookFailed {
				n++
			}
		}
		return n == 2
	})
	var msgs []string
	for _, ev := range got.TaskStates.MustMap()["web"].Events {
		if ev.Type == structs.TaskHookFailed {
			msgs = append(msgs, ev.DisplayMessage)
		}
	}
	joined := strings.Join(msgs, "\n")
	if !strings.Contains(joined, `port label "missing" is not among the allocation's ports`) ||
		!strings.Contains(joined, `address_mode = "driver"`) {
		t.Fatalf("events: %s", joined)
	}
}

// TestHTTPCheckAndCheckRestart runs a raw_exec task that serves HTTP on
// its port: its http check passes; once the process stops answering the
// check fails, and check_restart restarts the task through its restart
// policy (a Restart Signaled event says why), after which it passes again.
func TestHTTPCheckAndCheckRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real checks at their one-second minimum interval")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	e := newEnv(t)
	task := &structs.Task{Name: "server", Driver: "raw_exec", Config: map[string]any{"command": exe},
		Env: map[string]string{"DROVER_TEST_HTTP_HELPER": "1", "PORT": strconv.Itoa(port)}}
	task.Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "http", AddressMode: "auto",
		TaskName: "server", Checks: []*structs.ServiceCheck{{Name: "alive", Type: "http", Path: "/health",
			Interval: time.Second, Timeout: time.Second, OnUpdate: structs.OnUpdateRequireHealthy, TaskName: "server",
			CheckRestart: &structs.CheckRestart{Limit: 2, Grace: time.Second}}}}}
	a := testAlloc(structs.JobTypeService, &structs.RestartPolicy{Attempts: 3, Interval: time.Minute,
		Delay: 100 * time.Millisecond, Mode: structs.RestartPolicyModeFail}, task)
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: port, HostIP: "127.0.0.1"}}}}
	reg := newFakeRegistrar()
	ar := e.startWithServices(t, a, reg)

	result := func() *structs.CheckQueryResult {
		for _, r := range ar.CheckResults() {
			return r
		}
		return nil
	}
	waitUntil(t, "the check to pass", 15*time.Second, func() bool {
		r := result()
		return r != nil && r.Status == structs.CheckStatusSuccess
	})
	r := result()
	if r.Mode != structs.CheckModeHealthiness || r.StatusCode != 200 || r.Output != "ok" || r.Group != "web" ||
		r.Task != "server" || r.Service != "web" || r.Check != "alive" || r.Timestamp == 0 {
		t.Fatalf("result: %+v", r)
	}
	if healthy, ok := ar.ChecksHealthy(); !healthy || !ok {
		t.Fatalf("ChecksHealthy = %v, %v", healthy, ok)
	}

	// The process stops answering.
	if err := os.WriteFile(filepath.Join(ar.tasks["server"].taskDir.LocalDir, "stop-answering"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the check to fail", 15*time.Second, func() bool {
		r := result()
		return r != nil && r.Status == structs.CheckStatusFailure
	})
	if healthy, _ := ar.ChecksHealthy(); healthy {
		t.Fatal("healthy with a failing check")
	}
	got := e.rec.waitFor(t, "a check_restart", func(a *structs.Allocation) bool {
		ts := a.TaskStates.MustMap()["server"]
		return ts.Restarts >= 1 && findEvent(ts, structs.TaskRestartSignal) != nil && ts.State == structs.TaskStateRunning
	})
	ev := findEvent(got.TaskStates.MustMap()["server"], structs.TaskRestartSignal)
	if ev.RestartReason != `healthcheck: check "alive" unhealthy` {
		t.Fatalf("restart event: %+v", ev)
	}
	waitUntil(t, "the check to pass after the restart", 15*time.Second, func() bool {
		r := result()
		return r != nil && r.Status == structs.CheckStatusSuccess
	})
	if _, ok := reg.snapshot()[structs.ServiceRegistrationID(a.ID, "server", "web", "web", "http")]; !ok {
		t.Fatal("the service is not registered after the restart")
	}
}

// TestTCPAndScriptChecks runs the other check types once each.
func TestTCPAndScriptChecks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	if st, out, _ := tcpCheck(ctx, "127.0.0.1", port); st != structs.CheckStatusSuccess || out != "nomad: tcp ok" {
		t.Fatalf("tcp: %s %s", st, out)
	}
	ln.Close()
	if st, _, _ := tcpCheck(ctx, "127.0.0.1", port); st != structs.CheckStatusFailure {
		t.Fatalf("tcp on a closed port: %s", st)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		script, want, out string
	}{
		{"echo fine $X; pwd", structs.CheckStatusSuccess, "fine y\n" + dir + "\n"},
		{"echo meh; exit 1", structs.CheckStatusWarning, "meh\n"},
		{"exit 2", structs.CheckStatusFailure, ""},
	} {
		st, out, _ := scriptCheck(ctx, &checkSpec{command: "/bin/sh", args: []string{"-c", tc.script},
			env: []string{"X=y"}, dir: dir})
		if st != tc.want || out != tc.out {
			t.Errorf("%q: %s %q; want %s %q", tc.script, st, out, tc.want, tc.out)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if st, out, _ := scriptCheck(tctx, &checkSpec{command: "/bin/sh", args: []string{"-c", "sleep 5"}, dir: dir}); st != structs.CheckStatusFailure || out != "nomad: check timed out" {
		t.Fatalf("timeout: %s %q", st, out)
	}
}

// countingRegistrar counts RegisterServices calls per ID.
type countingRegistrar struct {
	*fakeRegistrar
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingRegistrar) RegisterServices(regs []*structs.ServiceRegistration) error {
	c.mu.Lock()
	for _, r := range regs {
		c.calls[r.ID]++
	}
	c.mu.Unlock()
	return c.fakeRegistrar.RegisterServices(regs)
}

// TestServicesSurviveClientRestart: a client shutdown leaves the
// registrations in place, and the restored runner registers the same IDs
// again once it re-attaches to the task.
func TestServicesSurviveClientRestart(t *testing.T) {
	e := newEnv(t)
	marker := uniqueSleep()
	task := rawExec("web", "exec sleep "+marker)
	task.Services = []*structs.Service{{Name: "api", Provider: "nomad", PortLabel: "8080", AddressMode: "auto", TaskName: "web"}}
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	reg := &countingRegistrar{fakeRegistrar: newFakeRegistrar(), calls: map[string]int{}}
	ar := e.startWithServices(t, a, reg)
	id := structs.ServiceRegistrationID(a.ID, "web", "web", "api", "8080")
	waitUntil(t, "registered", 10*time.Second, func() bool { _, ok := reg.snapshot()[id]; return ok })

	ar.Shutdown()
	if _, ok := reg.snapshot()[id]; !ok {
		t.Fatal("a client shutdown deregistered the service")
	}
	entries, err := e.db.Allocs()
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %d, %v", len(entries), err)
	}
	ar2, err := New(Config{Alloc: entries[0].Alloc, AllocRoot: e.root, Drivers: testDrivers(), StateDB: e.db,
		Updater: e.rec.update, Services: reg, Restored: entries[0].Tasks,
		Node: NodeInfo{ID: "n1", Datacenter: "dc7", Attributes: map[string]string{nodeIPAttr: "127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	ar2.Run()
	t.Cleanup(func() { ar2.Kill("test cleanup"); <-ar2.DoneCh() })
	waitUntil(t, "registered again", 10*time.Second, func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.calls[id] == 2
	})
	if got := len(reg.snapshot()); got != 1 {
		t.Fatalf("%d registrations, want 1 (the same ID)", got)
	}
}

// TestServiceInPlaceUpdate: a new job version that changes a service
// (an in-place update) re-registers it, and one that adds a first service
// to a group without any starts registering.
func TestServiceInPlaceUpdate(t *testing.T) {
	e := newEnv(t)
	task := rawExec("web", "sleep 30")
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	reg := newFakeRegistrar()
	ar := e.startWithServices(t, a, reg)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
	ar.mu.Lock()
	hook := ar.svc
	ar.mu.Unlock()
	if hook != nil {
		t.Fatal("a group without services has a service hook")
	}

	v2 := a.Copy()
	v2.Job = a.Job.Copy()
	v2.Job.Version = 1
	v2.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "8080",
		AddressMode: "auto", Tags: []string{"v2"}}}
	ar.Update(v2)
	id := structs.ServiceRegistrationID(a.ID, "", "web", "web", "8080")
	waitUntil(t, "registered after the update", 10*time.Second, func() bool { _, ok := reg.snapshot()[id]; return ok })

	v3 := v2.Copy()
	v3.Job = v2.Job.Copy()
	v3.Job.Version = 2
	v3.Job.TaskGroups[0].Services[0].Tags = []string{"v3"}
	ar.Update(v3)
	waitUntil(t, "new tags", 10*time.Second, func() bool {
		r := reg.snapshot()[id]
		return r != nil && slices.Equal(r.Tags, []string{"v3"})
	})
}

// A group service's check with check_restart that names no task restarts
// every task of the allocation, as Nomad's (the check fails for good
// here: nothing listens on the port).
func TestGroupCheckRestartRestartsEveryTask(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real checks at their one-second minimum interval")
	}
	port := freePort(t) // nothing listens: the tcp check fails
	e := newEnv(t)
	sleeper := func(name string) *structs.Task {
		return &structs.Task{Name: name, Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 300"}}}
	}
	a := testAlloc(structs.JobTypeService, &structs.RestartPolicy{Attempts: 3, Interval: time.Minute,
		Delay: 100 * time.Millisecond, Mode: structs.RestartPolicyModeFail}, sleeper("one"), sleeper("two"))
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "grp", Provider: "nomad", PortLabel: "http", AddressMode: "auto",
		Checks: []*structs.ServiceCheck{{Name: "down", Type: "tcp", Interval: time.Second, Timeout: time.Second,
			OnUpdate: structs.OnUpdateRequireHealthy, CheckRestart: &structs.CheckRestart{Limit: 1, Grace: time.Second}}}}}
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: port, HostIP: "127.0.0.1"}}}}
	e.startWithServices(t, a, newFakeRegistrar())
	e.rec.waitFor(t, "both tasks restarted by the group check", func(a *structs.Allocation) bool {
		states := a.TaskStates.MustMap()
		for _, name := range []string{"one", "two"} {
			ts := states[name]
			if ts == nil || ts.Restarts < 1 || findEvent(ts, structs.TaskRestartSignal) == nil {
				return false
			}
		}
		return true
	})
}

// A task service's port may come from the task's legacy network block.
func TestLegacyTaskPort(t *testing.T) {
	r := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"web": {Networks: []*structs.NetworkResource{{IP: "10.0.0.5", DynamicPorts: []structs.Port{{Label: "http", Value: 23456, To: 80}}}}},
	}}
	m := legacyTaskPort(r, "http")
	if m == nil || m.Value != 23456 || m.To != 80 || m.HostIP != "10.0.0.5" {
		t.Fatalf("legacyTaskPort = %+v", m)
	}
	if legacyTaskPort(r, "other") != nil || legacyTaskPort(nil, "http") != nil {
		t.Fatal("found a port that is not there")
	}
}

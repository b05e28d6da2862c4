package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/agent/client/template/nomadtest"
	"github.com/drover-project/drover/structs"
)

// startWithNomad starts a runner whose templates query f.
func (e *runnerEnv) startWithNomad(t *testing.T, a *structs.Allocation, f *nomadtest.Server) *AllocRunner {
	t.Helper()
	return e.restoreWithNomad(t, a, f, nil)
}

func (e *runnerEnv) restoreWithNomad(t *testing.T, a *structs.Allocation, f *nomadtest.Server,
	restored map[string]*clientstate.TaskRunnerState) *AllocRunner {
	t.Helper()
	ar, err := New(Config{Alloc: a, AllocRoot: e.root, Drivers: testDrivers(), StateDB: e.db, Restored: restored,
		Updater: e.rec.update, Node: NodeInfo{ID: "n1", Datacenter: "dc7", Region: "global"},
		NomadAddr: f.Addr(), TemplateToken: func(allocID, task string) (string, error) { return "wi-" + task, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ar.Run()
	t.Cleanup(func() { ar.Kill("test cleanup"); <-ar.DoneCh() })
	return ar
}

// shTask is a raw_exec task running script with /bin/sh.
func shTask(script string, tmpls ...*structs.Template) *structs.Task {
	return &structs.Task{Name: "app", Driver: "raw_exec",
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}, Templates: tmpls}
}

func varTemplate(dest, mode string, edit ...func(*structs.Template)) *structs.Template {
	t := &structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/job1" }}{{ .greeting }}{{ end }}`,
		DestPath: dest, ChangeMode: mode, Perms: "0644", LeftDelim: "{{", RightDelim: "}}"}
	for _, e := range edit {
		e(t)
	}
	return t
}

// waitFile polls a file until it holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q; waited for %q", path, b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasEvent(a *structs.Allocation, task, typ, msg string) bool {
	for _, e := range a.TaskStates.MustMap()[task].Events {
		if e.Type == typ && strings.Contains(e.DisplayMessage, msg) {
			return true
		}
	}
	return false
}

// TestTemplateRendersBeforeStartThenRestartsTheTask runs a real process
// whose template reads a variable from a Nomad API: the task does not
// start before the variable exists, sees the rendered file and the env
// template's variable, and is restarted when the variable changes.
func TestTemplateRendersBeforeStartThenRestartsTheTask(t *testing.T) {
	f := nomadtest.New(t)
	e := newEnv(t)
	task := shTask(`echo "run $(cat local/greeting) env=$GREETING" >> "$NOMAD_ALLOC_DIR/runs"; exec sleep 1000`,
		varTemplate("local/greeting", structs.TemplateChangeModeRestart),
		varTemplate("${NOMAD_SECRETS_DIR}/app.env", structs.TemplateChangeModeNoop, func(t *structs.Template) {
			t.EmbeddedTmpl = `GREETING={{ with nomadVar "nomad/jobs/job1" }}{{ .greeting }}{{ end }}`
			t.Envvars = true
		}))
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	ar := e.startWithNomad(t, a, f)
	runs := filepath.Join(ar.AllocDir().SharedDir, "runs")

	time.Sleep(300 * time.Millisecond)
	if st := e.rec.get(); st != nil && st.TaskStates.MustMap()["app"].State != structs.TaskStatePending {
		t.Fatalf("the task left pending before its template could render: %s", describe(st))
	}
	if _, err := os.Stat(runs); err == nil {
		t.Fatal("the task ran before its template rendered")
	}
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "hello"})
	waitFile(t, runs, "run hello env=hello")
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })

	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "bonjour"})
	// The new run reads the new file; the env template (noop) gives its
	// new value to the restarted task too.
	waitFile(t, runs, "run bonjour env=bonjour")
	got := e.rec.waitFor(t, "a template restart", func(a *structs.Allocation) bool {
		return hasEvent(a, "app", structs.TaskRestartSignal, "Template with change_mode restart re-rendered") &&
			a.TaskStates.MustMap()["app"].State == structs.TaskStateRunning
	})
	if ts := got.TaskStates.MustMap()["app"]; ts.Restarts != 1 || ts.Failed {
		t.Fatalf("restarts %d failed %v: %s", ts.Restarts, ts.Failed, describe(got))
	}
	for _, tok := range f.Tokens() {
		if tok != "wi-app" {
			t.Fatalf("a template query carried token %q, want the task's", tok)
		}
	}
}

// TestTemplateSignalsTheTask: change_mode signal reaches the running
// process (a shell trap records it) and the task keeps running.
func TestTemplateSignalsTheTask(t *testing.T) {
	f := nomadtest.New(t)
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "one"})
	e := newEnv(t)
	task := shTask(`trap 'echo "hup $(cat local/greeting)" >> "$NOMAD_ALLOC_DIR/signals"' HUP
echo started >> "$NOMAD_ALLOC_DIR/signals"
while true; do sleep 0.05; done`,
		varTemplate("local/greeting", structs.TemplateChangeModeSignal, func(t *structs.Template) {
			t.ChangeSignal, t.Splay = "SIGHUP", 50*time.Millisecond
		}))
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	ar := e.startWithNomad(t, a, f)
	signals := filepath.Join(ar.AllocDir().SharedDir, "signals")
	waitFile(t, signals, "started")

	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "two"})
	waitFile(t, signals, "hup two")
	got := e.rec.waitFor(t, "the Signaling event", func(a *structs.Allocation) bool {
		return hasEvent(a, "app", structs.TaskSignaling, "Template re-rendered")
	})
	if ts := got.TaskStates.MustMap()["app"]; ts.State != structs.TaskStateRunning || ts.Restarts != 0 {
		t.Fatalf("after the signal: %s", describe(got))
	}
}

// TestTemplateChangeScript runs change_script in the task's environment
// and directory; with fail_on_error a failing script kills the task and
// fails it.
func TestTemplateChangeScript(t *testing.T) {
	f := nomadtest.New(t)
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "one"})
	e := newEnv(t)
	task := shTask(`exec sleep 1000`,
		varTemplate("local/greeting", structs.TemplateChangeModeScript, func(t *structs.Template) {
			t.ChangeScript = &structs.ChangeScript{Command: "/bin/sh", Timeout: 5 * time.Second,
				Args:        []string{"-c", `echo "script $NOMAD_TASK_NAME $(cat local/greeting)" >> "$NOMAD_ALLOC_DIR/script"; test "$(cat local/greeting)" != three`},
				FailOnError: true}
			t.Splay = 0
		}))
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	ar := e.startWithNomad(t, a, f)
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
	script := filepath.Join(ar.AllocDir().SharedDir, "script")

	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "two"})
	waitFile(t, script, "script app two")
	e.rec.waitFor(t, "the script's event", func(a *structs.Allocation) bool {
		return hasEvent(a, "app", structs.TaskHookMessage, "Template successfully ran script /bin/sh")
	})

	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "three"})
	got := e.rec.waitFor(t, "the task failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed
	})
	ts := got.TaskStates.MustMap()["app"]
	if !ts.Failed || ts.State != structs.TaskStateDead ||
		!hasEvent(got, "app", structs.TaskKilling, "exited with code: 1; the task is killed (fail_on_error)") {
		t.Fatalf("after a failing script: %s", describe(got))
	}
}

// TestTemplateRenderFailureFollowsTheRestartPolicy: a missing key with
// error_on_missing_key fails the rendering; it is a task event and the
// restart policy applies, as a failed start.
func TestTemplateRenderFailureFollowsTheRestartPolicy(t *testing.T) {
	f := nomadtest.New(t)
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "one"})
	e := newEnv(t)
	task := shTask(`exec sleep 1000`, varTemplate("local/x", structs.TemplateChangeModeRestart, func(t *structs.Template) {
		t.EmbeddedTmpl = `{{ with nomadVar "nomad/jobs/job1" }}{{ .nope }}{{ end }}`
		t.ErrMissingKey = true
	}))
	a := testAlloc(structs.JobTypeBatch, failPolicy(1), task)
	e.startWithNomad(t, a, f)
	got := e.rec.waitFor(t, "the task failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed
	})
	ts := got.TaskStates.MustMap()["app"]
	n := 0
	for _, ev := range ts.Events {
		if ev.Type == structs.TaskHookFailed && strings.Contains(ev.DisplayMessage, "Template failed:") &&
			strings.Contains(ev.DisplayMessage, "nope") {
			n++
		}
	}
	if n != 2 || ts.Restarts != 1 || !hasEvent(got, "app", structs.TaskNotRestarting, "") || ts.StartedAt.IsZero() == false {
		t.Fatalf("want two template failures, one restart, then not restarting, never started: %s", describe(got))
	}
}

// TestTemplateDestinationThroughSymlinkFailsTheTask: a destination whose
// directory is a symlink out of the allocation directory is refused at
// render time and nothing is written outside.
func TestTemplateDestinationThroughSymlinkFailsTheTask(t *testing.T) {
	f := nomadtest.New(t)
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "pwned"})
	outside := t.TempDir()
	e := newEnv(t)
	task := shTask(`exec sleep 1000`, varTemplate("local/evil/x", structs.TemplateChangeModeRestart))
	a := testAlloc(structs.JobTypeBatch, failPolicy(0), task)
	// The allocation directory is built by the runner; plant the link
	// where the task directory will be.
	link := filepath.Join(e.root, a.ID, "app", "local", "evil")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	e.startWithNomad(t, a, f)
	got := e.rec.waitFor(t, "the task failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed
	})
	if !hasEvent(got, "app", structs.TaskHookFailed, "Template failed:") {
		t.Fatalf("%s", describe(got))
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("written outside the allocation directory: %v", entries)
	}
}

// TestRestoredTaskTemplatesAreWatched: after a client restart re-attaches
// to a running task, its templates are watched again, and a change
// signals the task it re-attached to.
func TestRestoredTaskTemplatesAreWatched(t *testing.T) {
	f := nomadtest.New(t)
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "one"})
	e := newEnv(t)
	task := shTask(`trap 'echo "hup $(cat local/greeting)" >> "$NOMAD_ALLOC_DIR/signals"' HUP
echo started >> "$NOMAD_ALLOC_DIR/signals"
while true; do sleep 0.05; done`,
		varTemplate("local/greeting", structs.TemplateChangeModeSignal, func(t *structs.Template) {
			t.ChangeSignal, t.Splay = "SIGHUP", 0
		}))
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	ar := e.startWithNomad(t, a, f)
	signals := filepath.Join(ar.AllocDir().SharedDir, "signals")
	waitFile(t, signals, "started")
	e.rec.waitFor(t, "running", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && ar.tasks["app"].handleState() != nil
	})
	pid := ar.tasks["app"].handleState().PID
	ar.Shutdown()

	entries, err := e.db.Allocs()
	if err != nil || len(entries) != 1 {
		t.Fatalf("restored entries %d, %v", len(entries), err)
	}
	e.rec = &recorder{}
	before := len(f.Tokens())
	ar2 := e.restoreWithNomad(t, entries[0].Alloc, f, entries[0].Tasks)
	e.rec.waitFor(t, "re-attached", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && ar2.tasks["app"].handleState() != nil
	})
	if p := ar2.tasks["app"].handleState(); p.PID != pid {
		t.Fatalf("re-attached to pid %d, want %d", p.PID, pid)
	}
	// The restored watch is up once a first query was answered and a
	// blocking one sent.
	deadline := time.Now().Add(10 * time.Second)
	for len(f.Tokens()) < before+2 {
		if time.Now().After(deadline) {
			t.Fatal("the restored templates never queried")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "two"})
	waitFile(t, signals, "hup two")
}

// TestRenderTemplatesOnRestart: with restart { render_templates = true }
// a restarted task finds its templates rendered afresh; without, it finds
// the files as it left them.
func TestRenderTemplatesOnRestart(t *testing.T) {
	for _, render := range []bool{true, false} {
		t.Run(map[bool]string{true: "render_templates", false: "default"}[render], func(t *testing.T) {
			f := nomadtest.New(t)
			f.SetVar("nomad/jobs/job1", map[string]string{"greeting": "fresh"})
			e := newEnv(t)
			task := shTask(`cat local/greeting >> "$NOMAD_ALLOC_DIR/runs"; echo >> "$NOMAD_ALLOC_DIR/runs"; echo tampered > local/greeting; exit 1`,
				varTemplate("local/greeting", structs.TemplateChangeModeNoop))
			policy := failPolicy(1)
			policy.RenderTemplates = render
			a := testAlloc(structs.JobTypeBatch, policy, task)
			ar := e.startWithNomad(t, a, f)
			e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
			got, _ := os.ReadFile(filepath.Join(ar.AllocDir().SharedDir, "runs"))
			want := "fresh\nfresh\n"
			if !render {
				want = "fresh\ntampered\n\n"
			}
			if string(got) != want {
				t.Fatalf("runs saw %q, want %q", got, want)
			}
		})
	}
}

// TestKillWhileTemplateWaits: a task whose template waits for data is
// killed without ever starting, and the wait ends with it.
func TestKillWhileTemplateWaits(t *testing.T) {
	f := nomadtest.New(t)
	e := newEnv(t)
	task := shTask(`exec sleep 1000`, varTemplate("local/x", structs.TemplateChangeModeRestart))
	a := testAlloc(structs.JobTypeService, failPolicy(0), task)
	ar := e.startWithNomad(t, a, f)
	e.rec.waitFor(t, "the Missing event", func(a *structs.Allocation) bool {
		return hasEvent(a, "app", structs.TaskTemplate, "Missing: nomad.var.block(nomad/jobs/job1@default.global)")
	})
	ar.Kill("test")
	select {
	case <-ar.DoneCh():
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not finish while its template waited")
	}
	got := e.rec.get()
	ts := got.TaskStates.MustMap()["app"]
	if ts.State != structs.TaskStateDead || ts.Failed || !ts.StartedAt.IsZero() {
		t.Fatalf("after the kill: %s", describe(got))
	}
}

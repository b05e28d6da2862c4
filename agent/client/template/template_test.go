package template

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/template/nomadtest"
	"github.com/drover-project/drover/structs"
)

// fakeHooks records what a Manager asks of the task.
type fakeHooks struct {
	mu       sync.Mutex
	events   []*structs.TaskEvent
	restarts int
	signals  []string
	execs    []string
	killed   *structs.TaskEvent
	execCode int
	changed  chan struct{}
}

func newHooks() *fakeHooks { return &fakeHooks{changed: make(chan struct{}, 100)} }

func (h *fakeHooks) note(ev *structs.TaskEvent) {
	h.events = append(h.events, ev)
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

func (h *fakeHooks) Event(ev *structs.TaskEvent) { h.mu.Lock(); defer h.mu.Unlock(); h.note(ev) }
func (h *fakeHooks) Restart(ev *structs.TaskEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.restarts++
	h.note(ev)
}
func (h *fakeHooks) Signal(ev *structs.TaskEvent, sig string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.signals = append(h.signals, sig)
	h.note(ev)
	return nil
}
func (h *fakeHooks) Exec(_ context.Context, cmd string, args []string) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.execs = append(h.execs, cmd+" "+strings.Join(args, " "))
	h.note(&structs.TaskEvent{Type: "exec"})
	return h.execCode, nil
}
func (h *fakeHooks) Kill(ev *structs.TaskEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.killed = ev
	h.note(ev)
}

// waitFor polls cond (under the hooks' lock) for up to 10s.
func (h *fakeHooks) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		ok := cond()
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-h.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type dirs struct{ alloc, task string }

func newDirs(t *testing.T) dirs {
	alloc := t.TempDir()
	task := filepath.Join(alloc, "web")
	for _, d := range []string{filepath.Join(alloc, "alloc"), filepath.Join(task, "local"), filepath.Join(task, "secrets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dirs{alloc: alloc, task: task}
}

func tmpl(data, dest string, edit ...func(*structs.Template)) *structs.Template {
	t := &structs.Template{EmbeddedTmpl: data, DestPath: dest, ChangeMode: structs.TemplateChangeModeRestart,
		Perms: "0644", LeftDelim: "{{", RightDelim: "}}"}
	for _, e := range edit {
		e(t)
	}
	return t
}

func start(t *testing.T, d dirs, f *nomadtest.Server, h *fakeHooks, tmpls ...*structs.Template) *Manager {
	t.Helper()
	addr := "http://127.0.0.1:1" // nothing listens
	if f != nil {
		addr = f.Addr()
	}
	m, err := New(Config{Templates: tmpls, AllocDir: d.alloc, TaskDir: d.task, NomadAddr: addr,
		Token: "secret-token", Namespace: "default", Hooks: h, MissingEventRate: 50 * time.Millisecond,
		Env: map[string]string{"NOMAD_TASK_NAME": "web", "GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func render(t *testing.T, m *Manager) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.Render(ctx)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRenderEnvFunctionPermsAndEnvTemplates(t *testing.T) {
	t.Setenv("DROVER_TEST_HOST_SECRET", "host-only")
	d := newDirs(t)
	h := newHooks()
	m := start(t, d, nil, h,
		tmpl(`task={{ env "NOMAD_TASK_NAME" }} host={{ env "DROVER_TEST_HOST_SECRET" }}`, "local/out.txt",
			func(t *structs.Template) { t.Perms = "0600" }),
		tmpl("A={{ env \"GREETING\" }}\nexport B=\"two words\"\n# comment\nC='x y' \n", "secrets/app.env",
			func(t *structs.Template) { t.Envvars = true }),
		tmpl(`[[ env "GREETING" ]] {{ untouched }}`, "../alloc/shared.txt",
			func(t *structs.Template) { t.LeftDelim, t.RightDelim = "[[", "]]" }),
		tmpl(`{{ "a,b" | sprig_splitList "," | sprig_join "-" }}`, filepath.Join(d.task, "local", "abs.txt")),
	)
	if err := render(t, m); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(d.task, "local", "out.txt")); got != "task=web host=" {
		t.Fatalf("out.txt = %q (the client's own environment must not reach templates)", got)
	}
	if fi, _ := os.Stat(filepath.Join(d.task, "local", "out.txt")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v", fi.Mode())
	}
	if got := readFile(t, filepath.Join(d.alloc, "alloc", "shared.txt")); got != "hello {{ untouched }}" {
		t.Fatalf("shared.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(d.task, "local", "abs.txt")); got != "a-b" {
		t.Fatalf("abs.txt = %q", got)
	}
	env := m.Env()
	if env["A"] != "hello" || env["B"] != "two words" || env["C"] != "x y" || len(env) != 3 {
		t.Fatalf("env = %v", env)
	}
}

func TestRenderWaitsForDataThenReRendersOnChange(t *testing.T) {
	d := newDirs(t)
	f := nomadtest.New(t)
	h := newHooks()
	f.SetService("web", nomadtest.Service{Address: "10.0.0.1", Port: 8080})
	m := start(t, d, f, h, tmpl(`{{ range nomadService "web" }}{{ .Address }}:{{ .Port }} {{ end }}`+
		`pw={{ with nomadVar "nomad/jobs/app" }}{{ .password }}{{ end }}`, "local/app.conf",
		func(t *structs.Template) { t.Splay = 0 }))
	done := make(chan error, 1)
	go func() { done <- render(t, m) }()

	// The variable does not exist: the first rendering waits, and says
	// what it waits for.
	h.waitFor(t, "a Missing event", func() bool {
		for _, ev := range h.events {
			if ev.Type == structs.TaskTemplate && strings.Contains(ev.DisplayMessage, "Missing: nomad.var.block(nomad/jobs/app@default.global)") {
				return true
			}
		}
		return false
	})
	select {
	case err := <-done:
		t.Fatalf("Render returned before the variable existed: %v", err)
	default:
	}
	f.SetVar("nomad/jobs/app", map[string]string{"password": "s3cret"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(d.task, "local", "app.conf")
	if got := readFile(t, dest); got != "10.0.0.1:8080 pw=s3cret" {
		t.Fatalf("rendered %q", got)
	}
	for _, tok := range f.Tokens() {
		if tok != "secret-token" {
			t.Fatalf("a query carried token %q", tok)
		}
	}

	// The service moves: the file re-renders and the task is restarted.
	f.SetService("web", nomadtest.Service{Address: "10.0.0.2", Port: 9090})
	h.waitFor(t, "a restart", func() bool { return h.restarts == 1 })
	if got := readFile(t, dest); got != "10.0.0.2:9090 pw=s3cret" {
		t.Fatalf("re-rendered %q", got)
	}
	last := h.events[len(h.events)-1]
	if last.Type != structs.TaskRestartSignal || last.DisplayMessage != "Template with change_mode restart re-rendered" {
		t.Fatalf("event %+v", last)
	}
}

func TestChangeModesSignalScriptNoop(t *testing.T) {
	d := newDirs(t)
	f := nomadtest.New(t)
	h := newHooks()
	f.SetVar("nomad/jobs/a", map[string]string{"v": "1"})
	f.SetVar("nomad/jobs/b", map[string]string{"v": "1"})
	f.SetVar("nomad/jobs/c", map[string]string{"v": "1"})
	m := start(t, d, f, h,
		tmpl(`{{ with nomadVar "nomad/jobs/a" }}{{ .v }}{{ end }}`, "local/a", func(t *structs.Template) {
			t.ChangeMode, t.ChangeSignal, t.Splay = "signal", "SIGUSR1", 10*time.Millisecond
		}),
		tmpl(`{{ with nomadVar "nomad/jobs/b" }}{{ .v }}{{ end }}`, "local/b", func(t *structs.Template) {
			t.ChangeMode = "script"
			t.ChangeScript = &structs.ChangeScript{Command: "/bin/reload", Args: []string{"-x"}, Timeout: time.Second}
		}),
		tmpl(`{{ with nomadVar "nomad/jobs/c" }}{{ .v }}{{ end }}`, "local/c", func(t *structs.Template) { t.ChangeMode = "noop" }),
	)
	if err := render(t, m); err != nil {
		t.Fatal(err)
	}
	f.SetVar("nomad/jobs/a", map[string]string{"v": "2"})
	h.waitFor(t, "a signal", func() bool { return len(h.signals) == 1 })
	if h.signals[0] != "SIGUSR1" || readFile(t, filepath.Join(d.task, "local", "a")) != "2" {
		t.Fatalf("signals %v", h.signals)
	}
	f.SetVar("nomad/jobs/b", map[string]string{"v": "2"})
	h.waitFor(t, "a script", func() bool { return len(h.execs) == 1 })
	h.waitFor(t, "the script's event", func() bool {
		return h.events[len(h.events)-1].Type == structs.TaskHookMessage
	})
	if h.execs[0] != "/bin/reload -x" {
		t.Fatalf("execs %v", h.execs)
	}
	f.SetVar("nomad/jobs/c", map[string]string{"v": "2"})
	deadline := time.Now().Add(5 * time.Second)
	for readFile(t, filepath.Join(d.task, "local", "c")) != "2" {
		if time.Now().After(deadline) {
			t.Fatal("noop template did not re-render")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.restarts != 0 || len(h.signals) != 1 || len(h.execs) != 1 || h.killed != nil {
		t.Fatalf("noop acted: restarts %d signals %v execs %v killed %v", h.restarts, h.signals, h.execs, h.killed)
	}
}

func TestScriptFailOnErrorKills(t *testing.T) {
	d := newDirs(t)
	f := nomadtest.New(t)
	h := newHooks()
	h.execCode = 3
	f.SetVar("nomad/jobs/a", map[string]string{"v": "1"})
	m := start(t, d, f, h, tmpl(`{{ with nomadVar "nomad/jobs/a" }}{{ .v }}{{ end }}`, "local/a", func(t *structs.Template) {
		t.ChangeMode = "script"
		t.ChangeScript = &structs.ChangeScript{Command: "/bin/false", FailOnError: true}
	}))
	if err := render(t, m); err != nil {
		t.Fatal(err)
	}
	f.SetVar("nomad/jobs/a", map[string]string{"v": "2"})
	h.waitFor(t, "a kill", func() bool { return h.killed != nil })
	if !h.killed.FailsTask || !strings.Contains(h.killed.DisplayMessage, "exited with code: 3") {
		t.Fatalf("kill event %+v", h.killed)
	}
}

func TestRenderErrors(t *testing.T) {
	t.Run("error_on_missing_key", func(t *testing.T) {
		d := newDirs(t)
		f := nomadtest.New(t)
		f.SetVar("nomad/jobs/a", map[string]string{"v": "1"})
		m := start(t, d, f, newHooks(), tmpl(`{{ with nomadVar "nomad/jobs/a" }}{{ .nope }}{{ end }}`, "local/a",
			func(t *structs.Template) { t.ErrMissingKey = true }))
		err := render(t, m)
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing key renders empty without it", func(t *testing.T) {
		d := newDirs(t)
		f := nomadtest.New(t)
		f.SetVar("nomad/jobs/a", map[string]string{"v": "1"})
		m := start(t, d, f, newHooks(), tmpl(`[{{ with nomadVar "nomad/jobs/a" }}{{ .nope }}{{ end }}]`, "local/a"))
		if err := render(t, m); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(d.task, "local", "a")); got != "[]" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("consul function disabled", func(t *testing.T) {
		d := newDirs(t)
		m := start(t, d, nil, newHooks(), tmpl(`{{ key "a" }}`, "local/a"))
		if err := render(t, m); err == nil || !strings.Contains(err.Error(), "disabled") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("source from the task dir", func(t *testing.T) {
		d := newDirs(t)
		if err := os.WriteFile(filepath.Join(d.task, "local", "in.tpl"), []byte(`hi {{ env "GREETING" }}`), 0o644); err != nil {
			t.Fatal(err)
		}
		m := start(t, d, nil, newHooks(), &structs.Template{SourcePath: "local/in.tpl", DestPath: "local/out",
			ChangeMode: "noop", Perms: "0644", LeftDelim: "{{", RightDelim: "}}"})
		if err := render(t, m); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(d.task, "local", "out")); got != "hi hello" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestResolvePath(t *testing.T) {
	alloc := "/data/alloc/a1"
	task := alloc + "/web"
	cases := []struct{ in, want string }{
		{"local/x", task + "/local/x"},
		{"../alloc/x", alloc + "/alloc/x"},
		{task + "/secrets/x", task + "/secrets/x"},         // ${NOMAD_SECRETS_DIR}/x on raw_exec
		{alloc + "/alloc/data/x", alloc + "/alloc/data/x"}, // ${NOMAD_ALLOC_DIR}/data/x
		{"/etc/app.conf", task + "/etc/app.conf"},          // elsewhere: inside the task dir
		{"../../x", ""},
		{"local/../../../x", ""},
		{"..", ""},
	}
	for _, tc := range cases {
		got, err := ResolvePath(tc.in, task, alloc)
		if tc.want == "" {
			if !errors.Is(err, ErrEscapes) {
				t.Errorf("%s: %q, %v; want ErrEscapes", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestSymlinkOutOfTheAllocDirIsRefused is CVE-2024-1329: a task (or a
// previous template) plants a symlink where a template renders; the
// rendering must not write through it.
func TestSymlinkOutOfTheAllocDirIsRefused(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(d dirs){
		"file symlink": func(d dirs) { _ = os.Symlink(victim, filepath.Join(d.task, "local", "out")) },
		"dir symlink": func(d dirs) {
			_ = os.RemoveAll(filepath.Join(d.task, "local"))
			_ = os.Symlink(outside, filepath.Join(d.task, "local"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDirs(t)
			plant(d)
			dest := "local/out"
			if name == "dir symlink" {
				dest = "local/victim"
			}
			m := start(t, d, nil, newHooks(), tmpl("pwned", dest))
			err := render(t, m)
			if err == nil {
				t.Fatal("rendered through a symlink that leads out of the allocation directory")
			}
			if got := readFile(t, victim); got != "original" {
				t.Fatalf("the file outside was written: %q", got)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Fatalf("files created outside: %v", entries)
			}
		})
	}
	// A destination that escapes is refused before anything runs.
	d := newDirs(t)
	if _, err := New(Config{Templates: []*structs.Template{tmpl("x", "../../x")}, AllocDir: d.alloc, TaskDir: d.task,
		Hooks: newHooks()}); !errors.Is(err, ErrEscapes) {
		t.Fatalf("New: %v", err)
	}
}

func TestParseEnv(t *testing.T) {
	got, err := ParseEnv("A=1\n\n# c\nexport B = \"x\\ny\"\nC='q r'\nD=v # comment\r\nE=\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "x\ny", "C": "q r", "D": "v", "E": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v", got)
	}
	if _, err := ParseEnv("not a pair\n"); err == nil {
		t.Error("a line without = parsed")
	}
}

// TestNomadFunctionsOverHTTPS: with TLS files, the Nomad functions reach an
// HTTPS API and verify its certificate against the CA.
func TestNomadFunctionsOverHTTPS(t *testing.T) {
	f, caFile := nomadtest.NewTLS(t)
	f.SetVar("nomad/jobs/app", map[string]string{"k": "over-tls"})
	d := newDirs(t)
	m, err := New(Config{Templates: []*structs.Template{tmpl(`{{ with nomadVar "nomad/jobs/app" }}{{ .k }}{{ end }}`, "local/x")},
		AllocDir: d.alloc, TaskDir: d.task, NomadAddr: f.Addr(), TLS: &TLSFiles{CAFile: caFile}, Hooks: newHooks()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	if err := render(t, m); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(d.task, "local", "x")); got != "over-tls" {
		t.Fatalf("got %q", got)
	}
}

// TestNomadListFunctions: nomadServices and nomadVarList read the list
// endpoints, and re-render when a service or variable is added.
func TestNomadListFunctions(t *testing.T) {
	d := newDirs(t)
	f := nomadtest.New(t)
	h := newHooks()
	f.SetService("web", nomadtest.Service{Address: "10.0.0.1", Port: 80, Tags: []string{"v1"}})
	f.SetVar("nomad/jobs/app/a", map[string]string{"k": "1"})
	f.SetVar("other/x", map[string]string{"k": "1"})
	m := start(t, d, f, h, tmpl(`{{ range nomadServices }}{{ .Name }}{{ .Tags }} {{ end }}|`+
		`{{ range nomadVarList "nomad/jobs/app" }}{{ .Path }} {{ end }}|{{ nomadVarExists "nomad/jobs/app/b" }}`, "local/list",
		func(t *structs.Template) { t.Splay = 0 }))
	if err := render(t, m); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(d.task, "local", "list")
	if got := readFile(t, dest); got != "web[v1] |nomad/jobs/app/a |false" {
		t.Fatalf("rendered %q", got)
	}
	f.SetService("db", nomadtest.Service{Address: "10.0.0.2", Port: 5432})
	f.SetVar("nomad/jobs/app/b", map[string]string{"k": "2"})
	h.waitFor(t, "a restart", func() bool { return h.restarts >= 1 })
	deadline := time.Now().Add(10 * time.Second)
	for readFile(t, dest) != "db[] web[v1] |nomad/jobs/app/a nomad/jobs/app/b |true" {
		if time.Now().After(deadline) {
			t.Fatalf("re-rendered %q", readFile(t, dest))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FuzzResolvePath: whatever a destination says, the path it resolves to
// is inside the allocation directory (or refused).
func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{"local/x", "../alloc/x", "../../x", "/etc/passwd", "/data/alloc/a1/web/../../../x",
		"/data/alloc/a1/alloc/x", "local/../..", "./././", "", "..", "a/../../b/../../c", "/data/alloc/a1x/y", "//data/alloc/a1/web"} {
		f.Add(s)
	}
	const alloc, task = "/data/alloc/a1", "/data/alloc/a1/web"
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ResolvePath(p, task, alloc)
		if err != nil {
			if !errors.Is(err, ErrEscapes) {
				t.Fatalf("%q: %v", p, err)
			}
			return
		}
		rel, rerr := filepath.Rel(alloc, got)
		if rerr != nil || !filepath.IsLocal(rel) || filepath.Clean(got) != got {
			t.Fatalf("%q resolved to %q, outside %s", p, got, alloc)
		}
	})
}

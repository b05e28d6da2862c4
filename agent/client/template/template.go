package template

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ctconf "github.com/hashicorp/consul-template/config"
	"github.com/hashicorp/consul-template/manager"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/templatespec"
)

// DefaultMissingEventRate is how often, at most, a "Missing: ..." event
// is emitted while a first rendering waits (Nomad's
// max_template_event_rate default).
const DefaultMissingEventRate = 3 * time.Second

// missingListLimit caps the dependencies one Missing event names.
const missingListLimit = 3

// ErrEscapes is returned for a destination or source that leads out of
// the allocation (or, for sources, the task) directory.
var ErrEscapes = errors.New("escapes the allocation directory")

// Hooks is how a Manager acts on the task. The task runner implements it;
// each method may be called from the Manager's goroutine at any time after
// the first rendering, until Stop returns.
type Hooks interface {
	// Event records a task event.
	Event(ev *structs.TaskEvent)
	// Restart restarts the running task (not counted against its restart
	// policy), recording ev first. A task that is not running ignores it.
	Restart(ev *structs.TaskEvent)
	// Signal sends sig ("SIGHUP") to the running task, recording ev.
	Signal(ev *structs.TaskEvent, sig string) error
	// Exec runs cmd with args in the task's context (environment and
	// directory) until it exits or ctx ends, and returns its exit code.
	Exec(ctx context.Context, cmd string, args []string) (int, error)
	// Kill stops the task for good and marks it failed, recording ev.
	Kill(ev *structs.TaskEvent)
}

// Config is one task's templates and where they render.
type Config struct {
	// Templates are the task's template blocks, with ${...} references
	// in DestPath and SourcePath already resolved against the task's
	// environment.
	Templates []*structs.Template
	// AllocDir is the allocation's directory: nothing is written outside
	// it. TaskDir is the task's directory, inside it: relative
	// destinations and sources are taken from there.
	AllocDir string
	TaskDir  string
	// Env is the task's environment: what the env function reads. The
	// client's own environment is hidden from templates beyond it.
	Env map[string]string
	// NomadAddr is the HTTP API the Nomad functions query
	// ("http://127.0.0.1:4646"); Token and Namespace go with each query.
	NomadAddr string
	Token     string
	Namespace string
	// TLS, for an HTTPS NomadAddr: the CA that signed the agent's
	// certificate, and the certificate and key to present (the agent's
	// own, for an API that verifies HTTPS clients).
	TLS    *TLSFiles
	Logger hclog.Logger
	Hooks  Hooks
	// MissingEventRate bounds how often Missing events are emitted (0:
	// DefaultMissingEventRate).
	MissingEventRate time.Duration
	// BlockQueryWait is the wait of each blocking query (0: consul-
	// template's default, 60s).
	BlockQueryWait time.Duration
}

// TLSFiles are PEM file paths.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// fileOpts are what the renderer applies to one destination.
type fileOpts struct {
	uid, gid int // -1: leave
}

// Manager renders one task's templates and applies their change modes.
type Manager struct {
	cfg    Config
	logger hclog.Logger
	runner *manager.Runner
	root   *os.Root // the allocation directory; written through
	tdRoot *os.Root // the task directory; sources are read through it

	// lookup maps a consul-template template ID to its template blocks.
	lookup map[string][]*structs.Template
	// dests maps a template block to its resolved destination.
	dests map[*structs.Template]string
	files map[string]fileOpts // by destination

	startOnce sync.Once
	started   atomic.Bool // Render started the runner
	stopOnce  sync.Once
	stopCh    chan struct{}
	loopDone  chan struct{}
	startDone chan struct{} // closed when runner.Start returns
	firstDone chan struct{}
	firstErr  error // set before firstDone closes

	mu  sync.Mutex
	env map[string]string // from env templates; guarded by mu
}

// deniedFunctions are disabled in the runner as well as refused at
// registration: Consul's and Vault's (there are neither) and Nomad's
// default function_denylist.
var deniedFunctions = slices.Concat(templatespec.ConsulFunctions, templatespec.VaultFunctions,
	templatespec.DeniedFunctions)

// New checks the templates' paths and prepares the runner; nothing is
// rendered until Render. A destination or source that leads out of the
// allocation directory is an error wrapping ErrEscapes.
func New(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MissingEventRate <= 0 {
		cfg.MissingEventRate = DefaultMissingEventRate
	}
	m := &Manager{cfg: cfg, logger: cfg.Logger.Named("template"),
		dests: map[*structs.Template]string{}, files: map[string]fileOpts{},
		stopCh: make(chan struct{}), loopDone: make(chan struct{}), startDone: make(chan struct{}),
		firstDone: make(chan struct{}), env: map[string]string{}}
	byConfig := map[*ctconf.TemplateConfig]*structs.Template{}
	flat := ctconf.TemplateConfigs{}
	for i, t := range cfg.Templates {
		ct, err := m.templateConfig(t)
		if err != nil {
			return nil, fmt.Errorf("template %d: %w", i, err)
		}
		byConfig[ct] = t
		flat = append(flat, ct)
	}
	root, err := os.OpenRoot(cfg.AllocDir)
	if err != nil {
		return nil, fmt.Errorf("opening the allocation directory: %w", err)
	}
	tdRoot, err := os.OpenRoot(cfg.TaskDir)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("opening the task directory: %w", err)
	}
	m.root, m.tdRoot = root, tdRoot

	conf := ctconf.DefaultConfig()
	conf.Templates = &flat
	addr, token, ns, on := cfg.NomadAddr, cfg.Token, cfg.Namespace, true
	conf.Nomad.Address, conf.Nomad.Token, conf.Nomad.Namespace, conf.Nomad.Enabled = &addr, &token, &ns, &on
	if f := cfg.TLS; f != nil {
		on := true
		ca, cert, key := f.CAFile, f.CertFile, f.KeyFile
		conf.Nomad.SSL = &ctconf.SSLConfig{Enabled: &on, Verify: &on, CaCert: &ca, Cert: &cert, Key: &key}
	}
	// Nothing may come from the client's environment (VAULT_TOKEN,
	// CONSUL_HTTP_TOKEN, ...): there is no Vault or Consul.
	empty, off := "", false
	conf.Vault.Token, conf.Vault.RenewToken, conf.Vault.Address = &empty, &off, &empty
	conf.Consul.Token, conf.Consul.Address = &empty, &empty
	if cfg.BlockQueryWait > 0 {
		w := cfg.BlockQueryWait
		conf.BlockQueryWaitTime = &w
	}
	conf.RendererFunc = m.render
	conf.ReaderFunc = m.readSource
	conf.Finalize()

	runner, err := manager.NewRunner(conf, false)
	if err != nil {
		m.closeRoots()
		return nil, err
	}
	runner.Env = maskProcessEnv(cfg.Env)
	m.runner = runner
	m.lookup = map[string][]*structs.Template{}
	for id, cts := range runner.TemplateConfigMapping() {
		for _, ct := range cts {
			m.lookup[id] = append(m.lookup[id], byConfig[ct])
		}
	}
	return m, nil
}

// templateConfig turns a template block into consul-template's form.
func (m *Manager) templateConfig(t *structs.Template) (*ctconf.TemplateConfig, error) {
	dest, err := ResolvePath(t.DestPath, m.cfg.TaskDir, m.cfg.AllocDir)
	if err != nil {
		return nil, fmt.Errorf("destination %q %w", t.DestPath, err)
	}
	ct := ctconf.DefaultTemplateConfig()
	if t.SourcePath != "" {
		src, err := ResolvePath(t.SourcePath, m.cfg.TaskDir, m.cfg.TaskDir)
		if err != nil {
			return nil, fmt.Errorf("source %q escapes the task directory", t.SourcePath)
		}
		ct.Source = &src
	} else {
		contents := t.EmbeddedTmpl
		ct.Contents = &contents
	}
	ct.Destination = &dest
	left, right, missingKey := t.LeftDelim, t.RightDelim, t.ErrMissingKey
	ct.LeftDelim, ct.RightDelim, ct.ErrMissingKey = &left, &right, &missingKey
	ct.FunctionDenylist = deniedFunctions
	sandbox := m.cfg.TaskDir
	ct.SandboxPath = &sandbox
	perms := t.Perms
	if perms == "" {
		perms = structs.DefaultTemplatePerms
	}
	p, err := strconv.ParseUint(perms, 8, 12)
	if err != nil {
		return nil, fmt.Errorf("perms %q: not an octal file mode", perms)
	}
	mode := os.FileMode(p)
	ct.Perms = &mode
	if w := t.Wait; w != nil {
		on := true
		ct.Wait = &ctconf.WaitConfig{Enabled: &on, Min: w.Min, Max: w.Max}
	}
	ct.Finalize()
	opts := fileOpts{uid: -1, gid: -1}
	if t.Uid != nil {
		opts.uid = *t.Uid
	}
	if t.Gid != nil {
		opts.gid = *t.Gid
	}
	m.files[dest] = opts
	m.dests[t] = dest
	return ct, nil
}

// ResolvePath places p, a template's destination or source, as Nomad
// does: an absolute path inside allocDir stays, any other path is taken
// relative to taskDir. The result must lie inside within (the allocation
// directory for destinations, the task directory for sources), or the
// error wraps ErrEscapes. Symlinks are not resolved here: writes go
// through an os.Root, which refuses them.
func ResolvePath(p, taskDir, within string) (string, error) {
	var out string
	if filepath.IsAbs(p) && inside(filepath.Clean(p), within) {
		out = filepath.Clean(p)
	} else {
		out = filepath.Join(taskDir, p)
	}
	if !inside(out, within) || out == within {
		return "", ErrEscapes
	}
	return out, nil
}

func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

// maskProcessEnv returns env with every other variable of the client's
// own environment set to "": consul-template's env function falls back to
// the process environment, which must not reach templates.
func maskProcessEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out[k] = ""
		}
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// Render starts the runner (once) and returns when every template has
// rendered once, when rendering failed (a template that does not execute,
// a missing key with error_on_missing_key, a write refused), or when ctx
// ends. While data is missing it emits "Template" events naming it.
func (m *Manager) Render(ctx context.Context) error {
	m.startOnce.Do(func() {
		m.started.Store(true)
		go func() {
			defer close(m.startDone)
			m.runner.Start()
		}()
		go m.loop()
	})
	select {
	case <-m.firstDone:
		return m.firstErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Env returns the variables of the env = true templates as last
// rendered (a copy; empty before the first rendering).
func (m *Manager) Env() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.env))
	for k, v := range m.env {
		out[k] = v
	}
	return out
}

// Stop stops watching and rendering and waits for the Manager's
// goroutines. The rendered files stay.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		close(m.stopCh)
		m.startOnce.Do(func() {}) // no Render starts the runner from now on
		m.runner.Stop()
		if m.started.Load() {
			<-m.loopDone
			// The runner may be sending an error nobody reads any more.
			for done := false; !done; {
				select {
				case <-m.runner.ErrCh:
				case <-m.startDone:
					done = true
				}
			}
		}
		m.closeRoots()
	})
}

func (m *Manager) closeRoots() {
	if m.root != nil {
		m.root.Close()
	}
	if m.tdRoot != nil {
		m.tdRoot.Close()
	}
}

// loop is the only reader of the runner's channels.
func (m *Manager) loop() {
	defer close(m.loopDone)
	first := true
	missing := map[string]bool{}
	var missingTimer <-chan time.Time
	handled := map[string]time.Time{}
	finishFirst := func(err error) {
		if err == nil {
			err = m.readEnv()
		}
		m.firstErr = err
		first = false
		close(m.firstDone)
	}
	for {
		select {
		case <-m.stopCh:
			if first {
				finishFirst(errors.New("stopped before the templates rendered"))
			}
			return
		case err := <-m.runner.ErrCh:
			// The runner stops after an error.
			if first {
				finishFirst(err)
				return
			}
			m.cfg.Hooks.Kill(failEvent(fmt.Sprintf("Template failed: %v", err)))
			return
		case <-m.runner.RenderEventCh():
			if !first {
				continue
			}
			if m.allRendered(handled) {
				finishFirst(nil)
				continue
			}
			if m.updateMissing(missing) && missingTimer == nil {
				missingTimer = time.After(m.cfg.MissingEventRate)
			}
		case <-m.runner.TemplateRenderedCh():
			if first {
				if m.allRendered(handled) {
					finishFirst(nil)
				}
				continue
			}
			if !m.onRerender(handled) {
				return
			}
		case <-missingTimer:
			missingTimer = nil
			if first && len(missing) > 0 {
				m.cfg.Hooks.Event(&structs.TaskEvent{Type: structs.TaskTemplate, Time: time.Now().UnixNano(),
					DisplayMessage: "Missing: " + missingList(missing)})
			}
		}
	}
}

// allRendered reports whether every template would have rendered; then it
// records each one's last rendering in handled.
func (m *Manager) allRendered(handled map[string]time.Time) bool {
	events := m.runner.RenderEvents()
	for id := range m.lookup {
		ev, ok := events[id]
		if !ok || ev.LastWouldRender.IsZero() {
			return false
		}
	}
	for id := range m.lookup {
		handled[id] = events[id].LastDidRender
	}
	return true
}

// updateMissing replaces the set of missing dependencies; it reports
// whether it changed.
func (m *Manager) updateMissing(missing map[string]bool) bool {
	now := map[string]bool{}
	for _, ev := range m.runner.RenderEvents() {
		if ev.MissingDeps == nil {
			continue
		}
		for _, d := range ev.MissingDeps.List() {
			now[d.String()] = true
		}
	}
	changed := len(now) != len(missing)
	for k := range now {
		if !missing[k] {
			changed = true
		}
	}
	clear(missing)
	for k := range now {
		missing[k] = true
	}
	return changed
}

func missingList(missing map[string]bool) string {
	names := make([]string, 0, len(missing))
	for k := range missing {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > missingListLimit {
		names = append(names[:missingListLimit], fmt.Sprintf("and %d more", len(names)-missingListLimit))
	}
	return strings.Join(names, ", ")
}

// onRerender applies the change modes of the templates written since
// they were last handled. It returns false when the Manager is stopping.
func (m *Manager) onRerender(handled map[string]time.Time) bool {
	events := m.runner.RenderEvents()
	var changed []*structs.Template
	var ids []string
	for id, ev := range events {
		if !ev.LastDidRender.After(handled[id]) {
			continue
		}
		ids = append(ids, id)
		changed = append(changed, m.lookup[id]...)
	}
	if len(changed) == 0 {
		return true
	}
	if err := m.readEnv(); err != nil {
		m.cfg.Hooks.Kill(failEvent(fmt.Sprintf("Template failed to read environment variables: %v", err)))
		return false
	}
	restart := false
	signals := map[string]bool{}
	var scripts []*structs.ChangeScript
	var splay time.Duration
	for _, t := range changed {
		switch t.ChangeMode {
		case structs.TemplateChangeModeRestart:
			restart = true
		case structs.TemplateChangeModeSignal:
			signals[t.ChangeSignal] = true
		case structs.TemplateChangeModeScript:
			if t.ChangeScript != nil {
				scripts = append(scripts, t.ChangeScript)
			}
		default:
			continue
		}
		splay = max(splay, t.Splay)
	}
	if restart || len(signals) > 0 || len(scripts) > 0 {
		if splay > 0 {
			select {
			case <-time.After(rand.N(splay)):
			case <-m.stopCh:
				return false
			}
		}
	}
	for _, id := range ids {
		handled[id] = events[id].LastDidRender
	}
	switch {
	case restart:
		m.cfg.Hooks.Restart(&structs.TaskEvent{Type: structs.TaskRestartSignal, Time: time.Now().UnixNano(),
			DisplayMessage: "Template with change_mode restart re-rendered"})
	default:
		for _, sig := range slices.Sorted(mapsKeys(signals)) {
			ev := &structs.TaskEvent{Type: structs.TaskSignaling, Time: time.Now().UnixNano(),
				DisplayMessage: "Template re-rendered", TaskSignal: sig}
			if err := m.cfg.Hooks.Signal(ev, sig); err != nil {
				m.cfg.Hooks.Kill(failEvent(fmt.Sprintf("Template failed to send signals [%s]: %v", sig, err)))
				return false
			}
		}
		for _, cs := range scripts {
			if !m.runScript(cs) {
				return false
			}
		}
	}
	return true
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runScript runs a change_script; with fail_on_error, a failure kills the
// task. It returns false when the task is killed.
func (m *Manager) runScript(cs *structs.ChangeScript) bool {
	timeout := cs.Timeout
	if timeout <= 0 {
		timeout = structs.DefaultChangeScriptTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-m.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	code, err := m.cfg.Hooks.Exec(ctx, cs.Command, cs.Args)
	var msg string
	switch {
	case err != nil:
		msg = fmt.Sprintf("Template failed to run script %v with arguments %v: %v", cs.Command, cs.Args, err)
	case code != 0:
		msg = fmt.Sprintf("Template ran script %v with arguments %v on change but it exited with code: %d", cs.Command, cs.Args, code)
	default:
		m.cfg.Hooks.Event(&structs.TaskEvent{Type: structs.TaskHookMessage, Time: time.Now().UnixNano(),
			DisplayMessage: fmt.Sprintf("Template successfully ran script %v with arguments: %v. Exit code: 0", cs.Command, cs.Args)})
		return true
	}
	if cs.FailOnError {
		m.cfg.Hooks.Kill(failEvent(msg + "; the task is killed (fail_on_error)"))
		return false
	}
	m.cfg.Hooks.Event(&structs.TaskEvent{Type: structs.TaskHookFailed, Time: time.Now().UnixNano(), DisplayMessage: msg})
	return true
}

func failEvent(msg string) *structs.TaskEvent {
	return &structs.TaskEvent{Type: structs.TaskKilling, Time: time.Now().UnixNano(), DisplayMessage: msg,
		Message: msg, FailsTask: true}
}

// readEnv reads the env = true templates' files, later templates winning.
func (m *Manager) readEnv() error {
	env := map[string]string{}
	for _, t := range m.cfg.Templates {
		if !t.Envvars {
			continue
		}
		rel, err := m.relInAlloc(m.dests[t])
		if err != nil {
			return err
		}
		b, err := m.root.ReadFile(rel)
		if err != nil {
			return fmt.Errorf("reading env template %s: %w", t.DestPath, err)
		}
		vars, err := ParseEnv(string(b))
		if err != nil {
			return fmt.Errorf("env template %s: %w", t.DestPath, err)
		}
		for k, v := range vars {
			env[k] = v
		}
	}
	m.mu.Lock()
	m.env = env
	m.mu.Unlock()
	return nil
}

// relInAlloc returns p relative to the allocation directory.
func (m *Manager) relInAlloc(p string) (string, error) {
	rel, err := filepath.Rel(m.cfg.AllocDir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s %w", p, ErrEscapes)
	}
	return rel, nil
}

// readSource reads a template's source file through the task directory's
// root.
func (m *Manager) readSource(src string) ([]byte, error) {
	rel, err := filepath.Rel(m.cfg.TaskDir, src)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("source %s escapes the task directory", src)
	}
	return m.tdRoot.ReadFile(rel)
}

// RedirectLibraryLog sends the log lines consul-template writes with Go's
// standard log package ("[DEBUG] (runner) ...") to l, at the level each
// line names. The standard logger is the process's: an agent calls this
// once, when its client starts.
func RedirectLibraryLog(l hclog.Logger) {
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(l.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))
}

package allocrunner

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/template"
	"github.com/drover-project/drover/structs"
)

// ReasonTemplateRestart is the restart reason of a restart asked for by a
// re-rendered template.
const ReasonTemplateRestart = "Restart triggered by a template"

// NomadAddrFor returns the URL a client's templates reach its agent's HTTP
// API at, from the address the API listens on: an unspecified host
// (0.0.0.0, ::) is reached on loopback.
func NomadAddrFor(listen string, https bool) string {
	if listen == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// renderTemplates renders the task's templates before it starts, once:
// a restart of the task keeps what is rendered (and the watch on it), as
// in Nomad, and takes the env templates' latest variables. It blocks while data is missing, until a kill or detach. On
// failure the manager is dropped, so the next attempt starts afresh.
func (tr *taskRunner) renderTemplates() error {
	if tr.tmpl != nil {
		// A restart: env templates may have re-rendered since.
		tr.setTemplateEnv(tr.tmpl.Env())
		return nil
	}
	if len(tr.task.Templates) == 0 {
		return nil
	}
	alloc := tr.ar.Alloc()
	te := buildTaskEnv(alloc, tr.tg, tr.task, tr.ar.allocDir, tr.taskDir, tr.ar.cfg.Node)
	tmpls := make([]*structs.Template, len(tr.task.Templates))
	for i, t := range tr.task.Templates {
		c := t.Copy()
		c.DestPath = te.replace(c.DestPath, te.lookupEnv)
		c.SourcePath = te.replace(c.SourcePath, te.lookupEnv)
		tmpls[i] = c
	}
	var token string
	if f := tr.ar.cfg.TemplateToken; f != nil {
		t, err := f(tr.ar.id, tr.task.Name)
		if err != nil {
			return fmt.Errorf("template: getting the task's token: %w", err)
		}
		token = t
	}
	m, err := template.New(template.Config{
		Templates: tmpls, AllocDir: tr.ar.allocDir.Dir, TaskDir: tr.taskDir.Dir, Env: te.env,
		NomadAddr: tr.ar.cfg.NomadAddr, TLS: tr.ar.cfg.NomadTLS, Token: token, Namespace: alloc.Namespace,
		Logger: tr.logger, Hooks: templateHooks{tr},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-tr.killCh:
		case <-tr.detachCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	if err := m.Render(ctx); err != nil {
		m.Stop()
		return err
	}
	tr.tmpl = m
	tr.setTemplateEnv(m.Env())
	return nil
}

// watchRestoredTemplates takes up the templates of a task that kept
// running while no client ran: they render again (what has not changed
// is not rewritten) and are watched from then on. A failure is reported
// and leaves the task running; its next start renders again.
func (tr *taskRunner) watchRestoredTemplates() {
	if err := tr.renderTemplates(); err != nil && !tr.killed() && !tr.detached() {
		ev := newEvent(structs.TaskHookFailed, "Template failed: "+err.Error())
		ev.Message = err.Error()
		tr.update(nil, ev)
	}
}

func (tr *taskRunner) setTemplateEnv(env map[string]string) {
	tr.mu.Lock()
	tr.tmplEnv = env
	tr.mu.Unlock()
}

// stopTemplates stops watching the task's templates.
func (tr *taskRunner) stopTemplates() {
	if tr.tmpl != nil {
		tr.tmpl.Stop()
		tr.tmpl = nil
	}
}

// afterTemplateFailure reports a template that could not render and
// applies the restart policy, as a failed start does. It returns true
// when the task should try again.
func (tr *taskRunner) afterTemplateFailure(err error) bool {
	ev := newEvent(structs.TaskHookFailed, "Template failed: "+err.Error())
	ev.Message = err.Error()
	return tr.afterExitEvent(ev, nil, err)
}

// restartNow restarts the running task for a re-rendered template: the
// restart is recorded, the task stopped with its kill signal and timeout
// and started again at once, and the restart policy's count is left
// alone (as Nomad's template restarts are). A kill or detach that
// arrives meanwhile is seen by the run loop next.
func (tr *taskRunner) restartNow(h driver.Handle, exitCh <-chan *driver.ExitResult, ev *structs.TaskEvent) {
	tr.update(nil, ev)
	sig, timeout := tr.killSpec()
	res, err := tr.stopHandle(h, exitCh, sig, timeout)
	tr.setHandle(nil)
	term := newEvent(structs.TaskTerminated, "Exit Code: 0")
	if res != nil {
		term.ExitCode, term.Signal = res.ExitCode, res.Signal
		term.DisplayMessage = fmt.Sprintf("Exit Code: %d", res.ExitCode)
		if res.Signal != 0 {
			term.DisplayMessage += fmt.Sprintf(", Signal: %d", res.Signal)
		}
	}
	if err != nil {
		term.KillError = err.Error()
	}
	rs := newEvent(structs.TaskRestarting, "Task restarting in 0s")
	rs.RestartReason = ReasonTemplateRestart
	now := time.Now()
	tr.update(func(ts *structs.TaskState) {
		ts.State = structs.TaskStatePending
		ts.Restarts++
		ts.LastRestart = now
	}, term, rs)
}

// killFailing reports whether the kill in progress fails the task.
func (tr *taskRunner) killFailing() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.killFails
}

// templateHooks is how a task's template manager acts on the task.
type templateHooks struct{ tr *taskRunner }

func (h templateHooks) Event(ev *structs.TaskEvent) { h.tr.update(nil, ev) }

// Restart hands the restart to the run loop; one pending restart is
// enough (the task restarts with every file as rendered by then).
func (h templateHooks) Restart(ev *structs.TaskEvent) {
	select {
	case h.tr.restartCh <- restartRequest{ev: ev}:
	default:
	}
}

func (h templateHooks) Signal(ev *structs.TaskEvent, sig string) error {
	h.tr.mu.Lock()
	live := h.tr.handle
	h.tr.mu.Unlock()
	if live == nil {
		return nil // not running: it starts with the new files
	}
	s, ok := live.(driver.Signaler)
	if !ok {
		return fmt.Errorf("driver %q cannot signal its tasks", h.tr.task.Driver)
	}
	h.tr.update(nil, ev)
	return s.Signal(sig)
}

func (h templateHooks) Exec(ctx context.Context, cmd string, args []string) (int, error) {
	x, ok := h.tr.drv.(driver.Execer)
	if !ok || h.tr.drv == nil {
		return -1, fmt.Errorf("driver %q cannot run commands in its tasks", h.tr.task.Driver)
	}
	return x.Exec(ctx, h.tr.taskConfig(), cmd, args)
}

// Kill stops the task for good and fails it.
func (h templateHooks) Kill(ev *structs.TaskEvent) {
	h.tr.update(nil, ev)
	h.tr.mu.Lock()
	h.tr.killFails = true
	h.tr.mu.Unlock()
	h.tr.kill(ev.DisplayMessage)
}

var _ template.Hooks = templateHooks{}

package allocrunner

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/structs"
)

// Health checks of native services, run by the client as Nomad's client
// runs them: each check of a registered service runs every interval with
// its timeout, from the client's host (an http or tcp check connects to
// the service's address; a script check runs a command as a host process
// in the task's environment and directory). The results are kept per
// allocation (AllocRunner.CheckResults) and served by the client's HTTP
// API; check_restart restarts the task after Limit unhealthy results in a
// row, once Grace has passed since the task started.

// checkOutputLimit bounds the output kept of one check run.
const checkOutputLimit = 4 << 10

// checkSpec is one check to run, resolved against the allocation.
type checkSpec struct {
	id      string
	group   string
	task    string // the task the check belongs to or names ("" for none)
	service string
	check   *structs.ServiceCheck
	addr    string
	port    int
	// script checks: the command line, environment and directory.
	command string
	args    []string
	env     []string
	dir     string
	// restart is the task check_restart restarts ("" for none), or
	// restartAll (a group service's check that names no task restarts
	// every task of the allocation, as Nomad's).
	restart string
}

// key is everything that makes a running check different: a change
// restarts it.
func (s *checkSpec) key() string {
	c := s.check
	return fmt.Sprintf("%s|%s|%d|%s|%q|%s|%v|%v|%s|%s|%s|%v|%v|%d|%d|%v|%s|%v",
		c.Type, s.addr, s.port, s.command, s.args, c.Path, c.Interval, c.Timeout, c.Method, c.Protocol,
		c.Body, c.Header, c.TLSSkipVerify, c.SuccessBeforePassing, c.FailuresBeforeCritical,
		c.CheckRestart, s.restart, s.dir)
}

// restartAll is checkSpec.restart for a check that restarts every task.
// It cannot be a task name (task names have no NUL).
const restartAll = "\x00all"

// checkID is a check's stable ID within the allocation.
func checkID(allocID, group, task, service, check string) string {
	h := sha1.New()
	for _, s := range []string{allocID, group, task, service, check} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkSpec resolves check c of service s (named name); te is the
// service's environment.
func (h *serviceHook) checkSpec(alloc *structs.Allocation, tg *structs.TaskGroup, t *structs.Task, s *structs.Service,
	name string, c *structs.ServiceCheck, te *taskEnv) (*checkSpec, error) {
	task := c.TaskName
	if t != nil {
		task = t.Name
	}
	spec := &checkSpec{id: checkID(alloc.ID, tg.Name, task, name, c.Name), group: tg.Name, task: task,
		service: name, check: c}
	if c.TriggersRestarts() {
		spec.restart = task
		if task == "" {
			spec.restart = restartAll
		}
	}
	switch c.Type {
	case structs.ServiceCheckScript:
		tr := h.ar.tasks[task]
		if tr == nil {
			return nil, fmt.Errorf("no task %q to run the script in", task)
		}
		cte := buildTaskEnv(alloc, tg, tr.task, h.ar.allocDir, tr.taskDir, h.ar.cfg.Node)
		spec.command = cte.replace(c.Command, cte.lookupEnv)
		for _, a := range c.Args {
			spec.args = append(spec.args, cte.replace(a, cte.lookupEnv))
		}
		for _, k := range sortedKeys(cte.env) {
			spec.env = append(spec.env, k+"="+cte.env[k])
		}
		spec.dir = tr.taskDir.Dir
	default:
		addr, port, err := h.checkAddress(alloc, s, c)
		if err != nil {
			return nil, err
		}
		spec.addr, spec.port = addr, port
		if c.Type == structs.ServiceCheckHTTP {
			spec.check = c.Copy()
			spec.check.Path = te.replace(c.Path, te.lookupEnv)
		}
	}
	return spec, nil
}

// checkSet runs an allocation's checks and holds their results.
type checkSet struct {
	ar *AllocRunner

	mu      sync.Mutex
	running map[string]*checkRunner              // guarded by mu
	results map[string]*structs.CheckQueryResult // guarded by mu
}

func newCheckSet(ar *AllocRunner) *checkSet {
	return &checkSet{ar: ar, running: map[string]*checkRunner{}, results: map[string]*structs.CheckQueryResult{}}
}

// set runs exactly specs: new checks start, changed ones restart, the
// others stop (and their results go).
func (cs *checkSet) set(specs []*checkSpec) {
	want := make(map[string]*checkSpec, len(specs))
	for _, s := range specs {
		want[s.id] = s
	}
	var stopped []*checkRunner
	cs.mu.Lock()
	defer func() {
		cs.mu.Unlock()
		// Outside mu: a runner may be waiting for it to record a result.
		for _, cr := range stopped {
			cr.stopAndWait()
		}
	}()
	for id, cr := range cs.running {
		if s, ok := want[id]; !ok || s.key() != cr.spec.key() {
			stopped = append(stopped, cr)
			delete(cs.running, id)
			delete(cs.results, id)
		}
	}
	for id, s := range want {
		if _, ok := cs.running[id]; ok {
			continue
		}
		cr := newCheckRunner(cs, s)
		cs.running[id] = cr
		cs.results[id] = cr.result(cr.status, "", 0)
		go cr.run()
	}
}

// stopAll stops every check.
func (cs *checkSet) stopAll() {
	cs.mu.Lock()
	running := cs.running
	cs.running = map[string]*checkRunner{}
	cs.mu.Unlock()
	for _, cr := range running {
		cr.stopAndWait()
	}
}

// record stores a check's latest result.
func (cs *checkSet) record(r *structs.CheckQueryResult) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.running[r.ID]; ok {
		cs.results[r.ID] = r
	}
}

// snapshot returns copies of the results.
func (cs *checkSet) snapshot() map[string]*structs.CheckQueryResult {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make(map[string]*structs.CheckQueryResult, len(cs.results))
	for id, r := range cs.results {
		c := *r
		out[id] = &c
	}
	return out
}

// checkRunner runs one check until stopped.
type checkRunner struct {
	set  *checkSet
	spec *checkSpec
	stop chan struct{}
	done chan struct{}

	// Owned by run.
	status              string
	successes, failures int // consecutive raw results
	unhealthy           int // consecutive unhealthy statuses past grace
	started             time.Time
}

func newCheckRunner(cs *checkSet, s *checkSpec) *checkRunner {
	cr := &checkRunner{set: cs, spec: s, stop: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	switch s.check.InitialStatus {
	case structs.CheckPassing:
		cr.status = structs.CheckStatusSuccess
	case structs.CheckWarning:
		cr.status = structs.CheckStatusWarning
	case structs.CheckCritical:
		cr.status = structs.CheckStatusFailure
	default:
		cr.status = structs.CheckStatusPending
	}
	return cr
}

func (cr *checkRunner) stopAndWait() {
	close(cr.stop)
	<-cr.done
}

// mode is Nomad's check mode: readiness for on_update = "ignore".
func (cr *checkRunner) mode() string {
	if cr.spec.check.OnUpdate == structs.OnUpdateIgnore {
		return structs.CheckModeReadiness
	}
	return structs.CheckModeHealthiness
}

func (cr *checkRunner) result(status, output string, code int) *structs.CheckQueryResult {
	return &structs.CheckQueryResult{ID: cr.spec.id, Mode: cr.mode(), Status: status, Output: output,
		StatusCode: code, Timestamp: time.Now().Unix(), Group: cr.spec.group, Task: cr.spec.task,
		Service: cr.spec.service, Check: cr.spec.check.Name}
}

func (cr *checkRunner) run() {
	defer close(cr.done)
	interval := cr.spec.check.Interval
	if interval < structs.MinCheckInterval {
		interval = structs.MinCheckInterval
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-cr.stop:
			return
		case <-t.C:
		}
		raw, output, code := cr.exec()
		select {
		case <-cr.stop:
			return
		default:
		}
		cr.apply(raw)
		cr.set.record(cr.result(cr.status, output, code))
		cr.watch()
		t.Reset(interval)
	}
}

// apply folds one raw result into the status: success_before_passing
// successes in a row make it success, failures_before_critical failures
// in a row make it failure (one each when unset).
func (cr *checkRunner) apply(raw string) {
	c := cr.spec.check
	switch raw {
	case structs.CheckStatusSuccess:
		cr.successes++
		cr.failures = 0
		if cr.successes >= max(c.SuccessBeforePassing, 1) {
			cr.status = raw
		}
	default:
		cr.failures++
		cr.successes = 0
		if cr.failures >= max(c.FailuresBeforeCritical, 1) {
			cr.status = raw
		}
	}
}

// watch applies check_restart: Limit unhealthy statuses in a row, past
// Grace, restart the task (through its restart policy).
func (cr *checkRunner) watch() {
	c := cr.spec.check
	if cr.spec.restart == "" || !c.TriggersRestarts() {
		return
	}
	if time.Since(cr.started) < c.CheckRestart.Grace {
		return
	}
	unhealthy := cr.status == structs.CheckStatusFailure ||
		cr.status == structs.CheckStatusWarning && !c.CheckRestart.IgnoreWarnings
	if !unhealthy {
		cr.unhealthy = 0
		return
	}
	cr.unhealthy++
	if cr.unhealthy < c.CheckRestart.Limit {
		return
	}
	cr.unhealthy = 0
	reason := fmt.Sprintf("healthcheck: check %q unhealthy", c.Name)
	if cr.spec.restart == restartAll {
		for _, tr := range cr.set.ar.tasks {
			tr.restartForCheck(reason)
		}
		return
	}
	if tr := cr.set.ar.tasks[cr.spec.restart]; tr != nil {
		tr.restartForCheck(reason)
	}
}

// exec runs the check once: its raw status, output and HTTP status code.
func (cr *checkRunner) exec() (string, string, int) {
	c := cr.spec.check
	timeout := max(c.Timeout, structs.MinCheckTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-cr.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	switch c.Type {
	case structs.ServiceCheckTCP:
		return tcpCheck(ctx, cr.spec.addr, cr.spec.port)
	case structs.ServiceCheckHTTP:
		return httpCheck(ctx, cr.spec)
	case structs.ServiceCheckScript:
		return scriptCheck(ctx, cr.spec)
	}
	return structs.CheckStatusFailure, "nomad: unknown check type " + c.Type, 0
}

func tcpCheck(ctx context.Context, addr string, port int) (string, string, int) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return structs.CheckStatusFailure, "nomad: " + err.Error(), 0
	}
	conn.Close()
	return structs.CheckStatusSuccess, "nomad: tcp ok", 0
}

func httpCheck(ctx context.Context, s *checkSpec) (string, string, int) {
	c := s.check
	proto := c.Protocol
	if proto == "" {
		proto = "http"
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := proto + "://" + net.JoinHostPort(s.addr, strconv.Itoa(s.port)) + path
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return structs.CheckStatusFailure, "nomad: " + err.Error(), 0
	}
	for _, k := range slices.Sorted(maps.Keys(c.Header)) {
		for _, v := range c.Header[k] {
			if strings.EqualFold(k, "Host") {
				req.Host = v
				continue
			}
			req.Header.Add(k, v)
		}
	}
	tr := &http.Transport{DisableKeepAlives: true}
	if c.TLSSkipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the job asked for it
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}).Do(req)
	if err != nil {
		return structs.CheckStatusFailure, "nomad: " + err.Error(), 0
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, checkOutputLimit))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return structs.CheckStatusSuccess, string(out), resp.StatusCode
	}
	return structs.CheckStatusFailure, string(out), resp.StatusCode
}

// limitedBuffer keeps the first checkOutputLimit bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := checkOutputLimit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// scriptCheck runs the command: exit 0 is success, 1 a warning, anything
// else (or the timeout) a failure, as in Consul's script checks.
func scriptCheck(ctx context.Context, s *checkSpec) (string, string, int) {
	cmd := exec.CommandContext(ctx, s.command, s.args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return structs.CheckStatusSuccess, out.String(), 0
	case ctx.Err() != nil:
		return structs.CheckStatusFailure, "nomad: check timed out", 0
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return structs.CheckStatusWarning, out.String(), 0
	case errors.As(err, &ee):
		return structs.CheckStatusFailure, out.String(), 0
	}
	return structs.CheckStatusFailure, "nomad: " + err.Error(), 0
}

// CheckResults returns the latest result of each of the allocation's
// health checks, by check ID (nil when its group has no service).
func (ar *AllocRunner) CheckResults() map[string]*structs.CheckQueryResult {
	if ar.svc == nil {
		return nil
	}
	return ar.svc.checks.snapshot()
}

// ChecksHealthy is the allocation's health from its checks, the signal
// deployments read: healthy when every healthiness check (on_update
// other than "ignore") of the services registered now passes. ok is false
// when the allocation runs no such check.
func (ar *AllocRunner) ChecksHealthy() (healthy, ok bool) {
	results := ar.CheckResults()
	healthy = true
	for _, r := range results {
		if r.Mode != structs.CheckModeHealthiness {
			continue
		}
		ok = true
		if r.Status != structs.CheckStatusSuccess {
			healthy = false
		}
	}
	return healthy && ok, ok
}

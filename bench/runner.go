package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// Defaults for Config fields left zero.
const (
	DefaultJobPrefix    = "bench"
	DefaultRunFor       = "1h"
	DefaultConcurrency  = 64
	DefaultTimeout      = 5 * time.Minute
	DefaultNodeTimeout  = 5 * time.Minute
	DefaultEvalWorkers  = 16
	defaultSampleEvery  = 100 * time.Millisecond
	summaryWait         = 30 * time.Second
	evalDrainTimeout    = 30 * time.Second
	nodePollEvery       = time.Second
	progressEveryTTY    = 250 * time.Millisecond
	progressEveryStream = time.Second
	// maxConnsPerAgent stays under an agent's limit of connections per
	// client address (100 by default, in Nomad and Drover alike).
	maxConnsPerAgent = 80
)

// NodeSource is a node simulator started for the run (Config.StartNodes).
type NodeSource interface {
	// Status is a short description for the progress line.
	Status() string
	// Stop stops the simulated nodes.
	Stop()
	// Final describes what the nodes did (for the result's notes).
	Final() string
}

// Config configures one scenario run.
type Config struct {
	// Addresses are the HTTP API addresses of the cluster's agents; job
	// writes and watches are spread over them.
	Addresses []string
	// TLS, if set, is the client side of HTTPS (https:// addresses): the
	// CA to check the agents against and the certificate to present to
	// agents with verify_https_client.
	TLS *tls.Config
	// Token is the ACL secret sent with every HTTP request (a management
	// token on a cluster with ACLs: the scenario registers, reads and
	// purges jobs and reads nodes).
	Token    string
	Scenario Scenario
	Region   string
	// Datacenter the jobs run in (default dc1).
	Datacenter string
	// NodePrefix selects the nodes to wait for (ID prefix; "" all).
	NodePrefix string
	// JobPrefix starts the jobs' IDs (default "bench").
	JobPrefix string
	// RunFor is the mock_driver run_for of the jobs' tasks: long, so that
	// allocations stay running (default 1h).
	RunFor string
	// Concurrency bounds job writes in flight (0: the scenario's Writers,
	// else DefaultConcurrency).
	Concurrency int
	// Stale lets any server answer the watches (spreads them over the
	// servers; a follower lags the leader by its replication delay).
	Stale bool
	// Timeout bounds the wait for placed and running (place scenarios)
	// and for the nodes.
	Timeout time.Duration
	// Duration overrides the scenario's (churn and idle).
	Duration time.Duration
	// ServerPIDs are the local server processes, by the position of their
	// HTTP address in Addresses (0: not measured).
	ServerPIDs []int
	// DataDirs are the servers' data directories (Raft size).
	DataDirs []string
	// Nomad says the servers are Nomad's: the jobs then shrink Nomad's
	// default log and ephemeral disk reservations, which Drover does not
	// model (and refuses when they differ from Nomad's defaults).
	Nomad bool
	// Cleanup purges the jobs at the end.
	Cleanup bool
	// StartNodes, if set, starts a simulator with the scenario's nodes.
	StartNodes func(ctx context.Context, shape NodeShape) (NodeSource, error)
	// Progress receives a progress display; InPlace rewrites one line
	// (a terminal), otherwise a line is written every second.
	Progress io.Writer
	InPlace  bool
	// PerfOut, if set, records a perf profile of the leader during the
	// measured window into this file (needs perf and a leader PID).
	PerfOut string
	// Command is recorded in the result.
	Command string
	// Seed makes churn's choices repeatable (0: time-based).
	Seed int64
	// KillLeaderAfter, if positive (or the scenario's, when zero), kills
	// the leader this long into the measured window and measures the
	// election; the run goes on against the surviving servers. It needs
	// ServerPIDs (or KillServer) and at least two addresses.
	KillLeaderAfter time.Duration
	// BaselinePlaced is the placed time of the same scenario without the
	// kill, if known: a kill run must place within it plus the election
	// time plus KillSlack.
	BaselinePlaced time.Duration
	// KillServer, if set, stops server i (its position in Addresses)
	// instead of a SIGKILL to ServerPIDs[i] (in-process tests).
	KillServer func(i int) error
	// NoVerify skips reading every job's allocations at the end.
	NoVerify bool
}

func (c *Config) withDefaults() *Config {
	out := *c
	if out.Datacenter == "" {
		out.Datacenter = "dc1"
	}
	if out.JobPrefix == "" {
		out.JobPrefix = DefaultJobPrefix
	}
	if out.RunFor == "" {
		out.RunFor = DefaultRunFor
	}
	if out.Concurrency <= 0 {
		out.Concurrency = out.Scenario.Writers
	}
	if out.Concurrency <= 0 {
		out.Concurrency = DefaultConcurrency
	}
	if out.Timeout <= 0 {
		out.Timeout = DefaultTimeout
	}
	if out.Duration <= 0 {
		out.Duration = out.Scenario.Duration
	}
	if out.Seed == 0 {
		out.Seed = time.Now().UnixNano()
	}
	if out.KillLeaderAfter <= 0 {
		out.KillLeaderAfter = out.Scenario.KillLeaderAfter
	}
	if out.Progress == nil {
		out.Progress = io.Discard
	}
	return &out
}

// runner is one run's state.
type runner struct {
	cfg     *Config
	clients []*nomad.Client // by the position of their address
	// live holds the indexes (into clients) of the servers not killed;
	// client picks among them.
	live  atomic.Pointer[[]int]
	res   *Result
	start time.Time // first job write
	// retried counts job writes retried after an error; firstRetry is
	// the first such error.
	retried    atomic.Int64
	firstRetry atomic.Value
	killer     atomic.Pointer[killer] // nil without a leader kill

	progressMu sync.Mutex
	progress   func() string // current progress line; guarded by progressMu
	source     NodeSource    // guarded by progressMu
}

// Run runs the scenario and returns what it measured. A run that timed
// out returns its partial result with an error.
func Run(ctx context.Context, cfg *Config) (*Result, error) {
	if len(cfg.Addresses) == 0 {
		return nil, errors.New("bench: no agent addresses")
	}
	if cfg.Scenario.Name == "" {
		return nil, errors.New("bench: no scenario")
	}
	cfg = cfg.withDefaults()
	if err := cfg.checkKill(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment, MaxIdleConns: 1024, MaxIdleConnsPerHost: maxConnsPerAgent,
		MaxConnsPerHost: maxConnsPerAgent, IdleConnTimeout: 90 * time.Second,
	}
	if cfg.TLS != nil {
		// HTTP/1.1 over the same pooled connections as plain HTTP (a set
		// TLSClientConfig leaves HTTP/2 off), so the two differ by TLS only.
		tr.TLSClientConfig = cfg.TLS.Clone()
	}
	hc := &http.Client{Transport: tr}
	for _, addr := range cfg.Addresses {
		c, err := nomad.NewClient(&nomad.Config{Address: addr, Region: cfg.Region, HttpClient: hc, SecretID: cfg.Token})
		if err != nil {
			return nil, fmt.Errorf("bench: client for %s: %w", addr, err)
		}
		r.clients = append(r.clients, c)
	}
	live := make([]int, len(r.clients))
	for i := range live {
		live[i] = i
	}
	r.live.Store(&live)
	sc := cfg.Scenario
	r.res = &Result{
		Scenario: sc.Name, Description: sc.Description, Kind: sc.Kind, Command: cfg.Command,
		Targets: sc.Targets, Machine: readMachine(),
	}
	stopProgress := r.runProgress()
	defer stopProgress()

	// Every agent answers before anything starts: a wrong address, scheme
	// or certificate is an error at once, not a wait for the nodes.
	for i, c := range r.clients {
		if _, err := r.agentSelf(ctx, c); err != nil {
			return nil, fmt.Errorf("bench: agent %s: %w", cfg.Addresses[i], err)
		}
	}

	// A join storm starts its nodes inside the measured window.
	stopNodes := func() {}
	defer func() { stopNodes() }()
	if sc.Kind != KindJoinStorm {
		if cfg.StartNodes != nil {
			r.setProgress(func() string { return fmt.Sprintf("%s: starting %d simulated nodes", sc.Name, sc.Nodes.Count) })
			stop, err := r.startNodes(ctx)
			if err != nil {
				return nil, err
			}
			stopNodes = stop
		}
		if err := r.waitNodes(ctx, sc.Nodes.Count); err != nil {
			return r.res, err
		}
		r.res.Nodes = sc.Nodes.Count
	}
	r.identifyServers(ctx)

	var pids []int
	for _, s := range r.res.Servers {
		pids = append(pids, s.PID)
	}
	pids = append(pids, os.Getpid())
	r.res.CalibrationMS = float64(calibrate()) / float64(time.Millisecond)
	r.res.LoadStart = loadAvg()
	r.res.Started = time.Now()
	watch := startProcWatch(pids, defaultSampleEvery)
	stopPerf := r.startPerf()
	windowStart := time.Now()
	r.killer.Store(r.startKiller(ctx, windowStart))

	var runErr error
	switch sc.Kind {
	case KindPlace:
		runErr = r.runPlace(ctx)
	case KindChurn:
		runErr = r.runChurn(ctx)
	case KindIdle:
		runErr = r.runIdle(ctx)
	case KindJoinStorm:
		runErr = r.runJoinStorm(ctx, &stopNodes)
	default:
		runErr = fmt.Errorf("bench: scenario kind %q", sc.Kind)
	}
	window := time.Since(windowStart)
	watch.finish()
	stopPerf()
	if k := r.finishKill(); k != nil && (k.AtSeconds == 0 || k.ElectionSeconds == 0) {
		runErr = errors.Join(runErr, errors.New("leader kill: "+k.String()))
	}
	r.res.WindowSeconds = window.Seconds()
	r.fillProc(watch, window)
	r.res.LoadEnd = loadAvg()
	r.countDown(ctx)
	if sc.Kind == KindJoinStorm {
		r.res.Evals = r.countEvals(ctx)
	}
	if r.res.Verify = r.verify(ctx); r.res.Verify.failed() {
		runErr = errors.Join(runErr, errors.New(r.res.Verify.summary()))
	}
	if n := r.retried.Load(); n > 0 {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("%d job writes retried after an error (first: %v)", n, r.firstRetry.Load()))
	}
	for _, d := range cfg.DataDirs {
		n, err := dirSize(d)
		if err != nil {
			r.res.Errors = append(r.res.Errors, fmt.Sprintf("size of %s: %v", d, err))
		}
		r.res.RaftBytes += n
	}
	r.res.checkTargets()
	if runErr != nil {
		r.res.Errors = append(r.res.Errors, runErr.Error())
	}
	if cfg.Cleanup {
		r.setProgress(func() string { return sc.Name + ": purging the jobs" })
		r.cleanup(ctx)
	}
	return r.res, runErr
}

// startNodes starts the simulator with the scenario's nodes; the returned
// function stops them and records what they did in the notes.
func (r *runner) startNodes(ctx context.Context) (func(), error) {
	src, err := r.cfg.StartNodes(ctx, r.cfg.Scenario.Nodes)
	if err != nil {
		return nil, fmt.Errorf("bench: starting nodes: %w", err)
	}
	r.progressMu.Lock()
	r.source = src // a join storm's progress line reads it meanwhile
	r.progressMu.Unlock()
	return func() {
		src.Stop()
		r.res.Notes = append(r.res.Notes, "nodes: "+src.Final())
	}, nil
}

// client returns the i-th client of the live servers, round-robin.
func (r *runner) client(i int) *nomad.Client {
	live := *r.live.Load()
	return r.clients[live[i%len(live)]]
}

// liveIndexes returns the indexes of the servers not killed.
func (r *runner) liveIndexes() []int { return *r.live.Load() }

// dropClient stops client from picking server k. At least one server
// stays.
func (r *runner) dropClient(k int) {
	for {
		cur := r.live.Load()
		var next []int
		for _, i := range *cur {
			if i != k {
				next = append(next, i)
			}
		}
		if len(next) == 0 || r.live.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// checkKill refuses a leader kill the run cannot do.
func (c *Config) checkKill() error {
	if c.KillLeaderAfter <= 0 {
		return nil
	}
	if len(c.Addresses) < 2 {
		return errors.New("bench: killing the leader needs the addresses of at least two servers")
	}
	if c.KillServer == nil && len(c.ServerPIDs) < len(c.Addresses) {
		return errors.New("bench: killing the leader needs the PID of every server (-server-pids, in the order of -address)")
	}
	return nil
}

// waitNodes waits until at least n nodes with the prefix are ready and
// eligible.
func (r *runner) waitNodes(ctx context.Context, n int) error {
	deadline := time.Now().Add(max(r.cfg.Timeout, DefaultNodeTimeout))
	var ready atomic.Int64
	r.setProgress(func() string {
		return fmt.Sprintf("%s: waiting for nodes: %d/%d ready%s", r.cfg.Scenario.Name, ready.Load(), n, r.sourceStatus())
	})
	for {
		nodes, _, err := r.client(0).Nodes().List((&nomad.QueryOptions{Prefix: r.cfg.NodePrefix}).WithContext(ctx))
		if err == nil {
			count := 0
			for _, node := range nodes {
				if node.Status == "ready" && node.SchedulingEligibility == "eligible" && !node.Drain {
					count++
				}
			}
			ready.Store(int64(count))
			if count >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: only %d of %d nodes ready (prefix %q) after %v (last error: %v)",
				ready.Load(), n, r.cfg.NodePrefix, max(r.cfg.Timeout, DefaultNodeTimeout), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(nodePollEvery):
		}
	}
}

// countDown counts the nodes with the prefix that are down.
func (r *runner) countDown(ctx context.Context) {
	nodes, _, err := r.client(0).Nodes().List((&nomad.QueryOptions{Prefix: r.cfg.NodePrefix}).WithContext(ctx))
	if err != nil {
		r.res.Errors = append(r.res.Errors, "listing nodes at the end: "+err.Error())
		return
	}
	for _, n := range nodes {
		if n.Status == "down" {
			r.res.NodesDown++
		}
	}
}

// identifyServers pairs each address with its PID and finds the leader
// (from /v1/agent/self: Nomad's raft state, or Drover's raft leader flag).
func (r *runner) identifyServers(ctx context.Context) {
	n := max(len(r.cfg.Addresses), len(r.cfg.ServerPIDs))
	r.res.Servers = make([]ServerResult, n)
	for i := range n {
		s := &r.res.Servers[i]
		if i < len(r.cfg.ServerPIDs) {
			s.PID = r.cfg.ServerPIDs[i]
		}
		if i >= len(r.clients) {
			continue
		}
		s.Address = r.cfg.Addresses[i]
		self, err := r.agentSelf(ctx, r.clients[i])
		if err != nil {
			r.res.Errors = append(r.res.Errors, fmt.Sprintf("agent self of %s: %v", s.Address, err))
			continue
		}
		s.Leader, s.RPCAddr = selfIsLeader(self), selfRPCAddr(self)
	}
}

// finishKill ends the leader kill (waiting for its election poll) and
// records it (nil: no kill was asked for).
func (r *runner) finishKill() *KillResult {
	k := r.killer.Load()
	if k == nil {
		return nil
	}
	res, killed, elected := k.finish()
	r.res.Kill = res
	if killed >= 0 && killed < len(r.res.Servers) {
		r.res.Servers[killed].Killed = true
	}
	if elected >= 0 && elected < len(r.res.Servers) {
		r.res.Servers[elected].Elected = true
	}
	return res
}

// fillProc computes the servers' CPU and memory over the window.
func (r *runner) fillProc(w *procWatch, window time.Duration) {
	cpu := w.cpuSince()
	w.mu.Lock()
	defer w.mu.Unlock()
	fill := func(s *ServerResult, i int) {
		// A killed server's figures are its last sample before it died.
		if w.errs[i] != nil && !(s.Killed && w.last[i] != ProcSample{}) {
			s.Error = w.errs[i].Error()
			return
		}
		s.CPUSeconds = cpu[i].Seconds()
		if window > 0 {
			s.CPUPercent = 100 * cpu[i].Seconds() / window.Seconds()
		}
		s.PeakRSSBytes, s.HWMBytes = w.peak[i], w.last[i].HWM
	}
	for i := range r.res.Servers {
		if r.res.Servers[i].PID != 0 {
			fill(&r.res.Servers[i], i)
		}
	}
	r.res.Self.PID = os.Getpid()
	fill(&r.res.Self, len(w.pids)-1)
}

// startPerf records a perf profile of every known server process and of
// this one (the simulator) until the returned function is called: a
// scenario bound by the machine's CPU is bound by their sum, and `perf
// report --sort comm,pid` splits it again.
func (r *runner) startPerf() func() {
	if r.cfg.PerfOut == "" {
		return func() {}
	}
	var pids []string
	for _, s := range r.res.Servers {
		if s.PID != 0 {
			pids = append(pids, strconv.Itoa(s.PID))
		}
	}
	if len(pids) == 0 {
		r.res.Notes = append(r.res.Notes, "no perf profile: no server PID is known")
		return func() {}
	}
	pids = append(pids, strconv.Itoa(os.Getpid()))
	list := strings.Join(pids, ",")
	cmd := exec.Command("perf", "record", "-F", "499", "-g", "-p", list, "-o", r.cfg.PerfOut)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		r.res.Notes = append(r.res.Notes, "no perf profile: "+err.Error())
		return func() {}
	}
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("perf profile of pids %s (the servers, then this process) in %s", list, r.cfg.PerfOut))
	}
}

// cleanup purges the run's jobs.
func (r *runner) cleanup(ctx context.Context) {
	jobs, _, err := r.client(0).Jobs().PrefixList(r.jobPrefix())
	if err != nil {
		r.res.Errors = append(r.res.Errors, "listing jobs to purge: "+err.Error())
		return
	}
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = r.write(ctx, i, func(c *nomad.Client) error {
				_, _, err := c.Jobs().Deregister(j.ID, true, (&nomad.WriteOptions{}).WithContext(ctx))
				return err
			})
		}()
	}
	wg.Wait()
}

// jobPrefix is the ID prefix of this scenario's jobs.
func (r *runner) jobPrefix() string { return r.cfg.JobPrefix + "-" + r.cfg.Scenario.Name + "-" }

// job returns a batch job (a service job for a Service scenario) of count
// mock_driver allocations.
func (r *runner) job(id string, count int) *nomad.Job {
	sc := r.cfg.Scenario
	task := nomad.NewTask("t", "mock_driver").
		SetConfig("run_for", r.cfg.RunFor).
		Require(&nomad.Resources{CPU: new(sc.TaskCPU), MemoryMB: new(sc.TaskMemoryMB)})
	tg := nomad.NewTaskGroup("g", count).AddTask(task)
	if sc.DynamicPorts > 0 {
		net := &nomad.NetworkResource{}
		for i := range sc.DynamicPorts {
			net.DynamicPorts = append(net.DynamicPorts, nomad.Port{Label: fmt.Sprintf("p%d", i)})
		}
		tg.Networks = []*nomad.NetworkResource{net}
	}
	if sc.Services {
		svc := &nomad.Service{Name: "svc-" + id, Provider: "nomad"}
		if sc.DynamicPorts > 0 {
			svc.PortLabel = "p0"
		}
		tg.Services = []*nomad.Service{svc}
	}
	if r.cfg.Nomad {
		// Nomad keeps 10 x 10 MB of task logs by default, and refuses a
		// job whose logs do not fit in its ephemeral disk, of which it
		// reserves 300 MB per allocation by default.
		task.LogConfig = &nomad.LogConfig{MaxFiles: new(1), MaxFileSizeMB: new(1)}
		tg.EphemeralDisk = &nomad.EphemeralDisk{SizeMB: new(10)}
	}
	region := r.cfg.Region
	if region == "" {
		region = "global"
	}
	var job *nomad.Job
	if sc.Service {
		job = nomad.NewServiceJob(id, id, region, 50).AddTaskGroup(tg)
		if sc.Update {
			job.Update = &nomad.UpdateStrategy{MaxParallel: new(1)}
		}
	} else {
		job = nomad.NewBatchJob(id, id, region, 50).AddTaskGroup(tg)
	}
	if sc.SpreadDatacenters > 0 {
		job.Datacenters = SpreadDatacenters(sc.SpreadDatacenters)
		tg.Spreads = []*nomad.Spread{{Attribute: "${node.datacenter}", Weight: new(int8(50))}}
		return job
	}
	return job.AddDatacenter(r.cfg.Datacenter)
}

func (r *runner) setProgress(f func() string) {
	r.progressMu.Lock()
	r.progress = f
	r.progressMu.Unlock()
}

func (r *runner) sourceStatus() string {
	out := ""
	if k := r.killer.Load().progress(); k != "" {
		out = " | " + k
	}
	r.progressMu.Lock()
	src := r.source
	r.progressMu.Unlock()
	if src != nil {
		out += " | " + src.Status()
	}
	return out
}

// runProgress prints the progress line until the returned function is
// called.
func (r *runner) runProgress() func() {
	if r.cfg.Progress == io.Discard {
		return func() {}
	}
	every := progressEveryStream
	if r.cfg.InPlace {
		every = progressEveryTTY
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		last := ""
		for {
			select {
			case <-stop:
				if r.cfg.InPlace && last != "" {
					fmt.Fprint(r.cfg.Progress, "\r\x1b[K")
				}
				return
			case <-t.C:
				r.progressMu.Lock()
				f := r.progress
				r.progressMu.Unlock()
				if f == nil {
					continue
				}
				last = f()
				if r.cfg.InPlace {
					fmt.Fprintf(r.cfg.Progress, "\r\x1b[K%s", last)
				} else {
					fmt.Fprintln(r.cfg.Progress, last)
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// since renders the time since the first job write.
func (r *runner) since() string {
	if r.start.IsZero() {
		return "0s"
	}
	return time.Since(r.start).Round(100 * time.Millisecond).String()
}

// joinKinds renders op counts.
func joinKinds(m map[string]int) string {
	var parts []string
	for _, k := range []string{"register", "scale", "stop"} {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

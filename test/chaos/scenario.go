package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/nomad/api"
)

// Config is one run.
type Config struct {
	Bin      string // the drover binary
	Results  string // results directory; a failing run keeps its files under it
	Scenario string
	Seed     int64
	Writers  int
	Keys     int
	Clients  int
	// Warmup before the fault, Hold of the fault, After the heal with
	// the writers still running.
	Warmup, Hold, After time.Duration
	// PauseMax bounds the SIGSTOP pause, drawn from [5 s, PauseMax].
	PauseMax time.Duration
	// Keep keeps the run's files even when it passes.
	Keep bool
	Log  func(format string, args ...any)
}

// DefaultConfig is a short run of scenario (about a minute).
func DefaultConfig(bin, results, scenario string, seed int64) Config {
	return Config{Bin: bin, Results: results, Scenario: scenario, Seed: seed, Writers: 6, Keys: 4, Clients: 2,
		Warmup: 4 * time.Second, Hold: 8 * time.Second, After: 4 * time.Second, PauseMax: 12 * time.Second,
		Log: func(string, ...any) {}}
}

// Result is what one run measured and found.
type Result struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	Dir      string `json:"dir,omitempty"`
	Pass     bool   `json:"pass"`
	// Failures are the checks that failed; Notes what else was seen.
	Failures []string `json:"failures,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`

	Ops     int `json:"ops"`
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`

	Linearizable string      `json:"linearizable"` // porcupine's result
	Lost         []LostWrite `json:"lost,omitempty"`
	// Overlap per sentinel job.
	Overlap map[string]Overlap `json:"overlap"`

	// Seconds from the fault: the new leader agreed by the other servers
	// (leader faults); per server, the completion of the first write sent
	// through it after the fault and acknowledged (its probe's); the
	// first of any writer.
	ElectedAfter float64 `json:"elected_after,omitempty"`
	// Faulted are the servers the fault hit (their own first ack comes
	// after the heal).
	Faulted        []string           `json:"faulted,omitempty"`
	FirstAckAfter  float64            `json:"first_ack_after,omitempty"`
	ServerAckAfter map[string]float64 `json:"server_ack_after,omitempty"`
	// Seconds from the heal to convergence (leader agreed by every
	// server, each sentinel at its count of processes and allocations).
	ConvergedAfter float64 `json:"converged_after"`
}

// Scenario is one fault: Inject starts it and returns what heals it.
type Scenario struct {
	Name string
	Doc  string
	// TmpfsBytes gives every server a tmpfs data dir of that size.
	TmpfsBytes int
	// ClientFault: the fault is on the client running the sentinels,
	// whose default-settings job may then run twice (measured).
	ClientFault bool
	// LeaderFault: the leader stops being one (election measured).
	LeaderFault bool
	// Skip, when set, says why the scenario cannot run.
	Skip   string
	Inject func(r *runState) (heal func() error, err error)
}

// runState is what a fault sees of the run.
type runState struct {
	cfg     Config
	c       *Cluster
	rng     *rand.Rand
	leader  *Agent
	target  *Agent // the client holding the sentinels
	hold    time.Duration
	faulted []string
	notes   []string
	// failures are the scenario's own checks that failed.
	failures []string
	elected  chan time.Duration
}

func (r *runState) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// watchElection measures, in the background, when the servers other
// than out agree on a new leader.
func (r *runState) watchElection(out *Agent, from time.Time) {
	go func() {
		if _, err := r.c.WaitLeaderAmong(60*time.Second, out); err == nil {
			r.elected <- time.Since(from)
		}
	}()
}

// Scenarios are the faults of the suite, by name.
var Scenarios = map[string]*Scenario{
	"leader-partition": {Doc: "the leader is cut off from every other agent (nftables in its namespace), then healed", LeaderFault: true,
		Inject: func(r *runState) (func() error, error) {
			r.watchElection(r.leader, time.Now())
			n := r.leader.Name
			r.faulted = []string{n}
			return func() error { return r.c.Net.Heal(n) }, r.c.Net.Partition(n)
		}},
	"minority-partition": {Doc: "one follower is cut off, then healed",
		Inject: func(r *runState) (func() error, error) {
			n := r.c.Follower(r.leader).Name
			r.faulted = []string{n}
			return func() error { return r.c.Net.Heal(n) }, r.c.Net.Partition(n)
		}},
	"client-partition": {Doc: "the client running the sentinel jobs is cut off past its heartbeat TTL (2 s + 2 s grace) for 20 s (past the fenced sentinel's stop and fence), then healed", ClientFault: true,
		Inject: func(r *runState) (func() error, error) {
			if r.hold < 20*time.Second {
				r.hold = 20 * time.Second
			}
			n := r.target.Name
			return func() error { return r.c.Net.Heal(n) }, r.c.Net.Partition(n)
		}},
	"leader-kill": {Doc: "SIGKILL of the leader; restarted after the hold", LeaderFault: true,
		Inject: func(r *runState) (func() error, error) {
			r.watchElection(r.leader, time.Now())
			a := r.leader
			r.faulted = []string{a.Name}
			a.Kill()
			return func() error { return a.Start(r.c) }, nil
		}},
	"follower-kill": {Doc: "SIGKILL of a follower; restarted after the hold",
		Inject: func(r *runState) (func() error, error) {
			a := r.c.Follower(r.leader)
			r.faulted = []string{a.Name}
			a.Kill()
			return func() error { return a.Start(r.c) }, nil
		}},
	"client-kill": {Doc: "SIGKILL of the client running the sentinels; restarted 2 s later (within its TTL), its tasks re-attached", ClientFault: true,
		Inject: func(r *runState) (func() error, error) {
			r.hold = 2 * time.Second
			a := r.target
			a.Kill()
			return func() error { return a.Start(r.c) }, nil
		}},
	"leader-pause": {Doc: "SIGSTOP of the leader for 5 s to PauseMax (from the seed), then SIGCONT", LeaderFault: true,
		Inject: func(r *runState) (func() error, error) {
			span := r.cfg.PauseMax - 5*time.Second
			r.hold = 5 * time.Second
			if span > 0 {
				r.hold += time.Duration(r.rng.Int63n(int64(span)))
			}
			r.note("paused %.1fs", r.hold.Seconds())
			r.watchElection(r.leader, time.Now())
			a := r.leader
			r.faulted = []string{a.Name}
			return func() error { return a.Signal(syscall.SIGCONT) }, a.Signal(syscall.SIGSTOP)
		}},
	"leader-lossy": {Doc: "the leader's link loses 30% of its packets (and is delayed 50 ms where the kernel has netem) for the hold",
		Inject: func(r *runState) (func() error, error) {
			n := r.leader.Name
			r.faulted = []string{n}
			how, err := r.c.Net.Degrade(n, 50*time.Millisecond, 30)
			r.note("degraded by %s", how)
			return func() error { return r.c.Net.Heal(n) }, err
		}},
	"leader-transfer": {Doc: "leadership handed, under the writers' load, to a follower (from the seed) with PUT /v1/operator/raft/transfer-leadership?address=, sent through a server from the seed; the named follower must lead at the heal", LeaderFault: true,
		Inject: func(r *runState) (func() error, error) {
			var followers []*Agent
			for _, s := range r.c.Servers {
				if s != r.leader {
					followers = append(followers, s)
				}
			}
			to := followers[r.rng.Intn(len(followers))]
			via := r.c.Servers[r.rng.Intn(len(r.c.Servers))]
			r.note("leadership transferred from %s to %s, asked through %s", r.leader.Name, to.Name, via.Name)
			start := time.Now()
			r.watchElection(r.leader, start)
			err := APIClient(via, 10*time.Second).Operator().RaftTransferLeadershipByAddress(to.RPC(), nil)
			if err == nil {
				r.note("the transfer call returned after %.2fs", time.Since(start).Seconds())
			}
			return func() error {
				if l := r.c.Leader(); l != to {
					name := "none agreed"
					if l != nil {
						name = l.Name
					}
					r.failures = append(r.failures, fmt.Sprintf("%s does not lead at the heal (leader: %s)", to.Name, name))
				}
				return nil
			}, err
		}},
	"restart-all": {Doc: "SIGKILL of all three servers at once; all restarted from their data dirs after the hold", LeaderFault: true,
		Inject: func(r *runState) (func() error, error) {
			for _, s := range r.c.Servers {
				r.faulted = append(r.faulted, s.Name)
				s.Kill()
			}
			return func() error {
				var errs []error
				for _, s := range r.c.Servers {
					errs = append(errs, s.Start(r.c))
				}
				return errors.Join(errs...)
			}, nil
		}},
	"disk-full": {Doc: "the leader's data dir (a 64 MiB tmpfs) is filled up; the filler is removed at the heal", TmpfsBytes: 64 << 20,
		Inject: func(r *runState) (func() error, error) {
			path := filepath.Join(r.leader.DataDir, "chaos-filler")
			r.faulted = []string{r.leader.Name}
			err := fill(path)
			return func() error { return os.Remove(path) }, err
		}},
}

func init() {
	for name, s := range Scenarios {
		s.Name = name
	}
}

// ScenarioNames is every scenario, sorted.
func ScenarioNames() []string {
	var names []string
	for n := range Scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fill writes path until its file system is full.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// Run runs one scenario end to end and checks it. The error is for a run
// that could not be carried out (setup failed); a run whose checks fail
// returns a Result with Pass false.
func Run(cfg Config) (res *Result, err error) {
	sc := Scenarios[cfg.Scenario]
	if sc == nil {
		return nil, fmt.Errorf("no scenario %q (have %s)", cfg.Scenario, strings.Join(ScenarioNames(), ", "))
	}
	res = &Result{Scenario: cfg.Scenario, Seed: cfg.Seed, Overlap: map[string]Overlap{}}
	if sc.Skip != "" {
		res.Skipped, res.Pass = sc.Skip, true
		return res, nil
	}
	n, err := NewNet()
	if err != nil {
		return nil, err
	}
	defer n.Close()
	dir := filepath.Join(cfg.Results, fmt.Sprintf("%s-seed%d-%s", cfg.Scenario, cfg.Seed, n.Prefix))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res.Dir = dir
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs kept in %s)", err, dir)
			return
		}
		if !res.Pass || cfg.Keep {
			return
		}
		unmountUnder(n.Prefix)
		os.RemoveAll(dir) // a run that passed keeps only its summary
		res.Dir = ""
	}()
	logf := cfg.Log
	rng := rand.New(rand.NewSource(cfg.Seed))
	hist := NewHistory()

	var tmpfsServers []string
	if sc.TmpfsBytes > 0 {
		tmpfsServers = []string{"s1", "s2", "s3"}
	}
	c, err := StartCluster(n, cfg.Bin, dir, cfg.Clients, tmpfsServers, sc.TmpfsBytes)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	leader, err := c.WaitLeader(60*time.Second, nil)
	if err != nil {
		return nil, err
	}
	if err := c.WaitClients(60 * time.Second); err != nil {
		return nil, err
	}
	logf("%s seed %d: cluster up in %s, leader %s", cfg.Scenario, cfg.Seed, time.Duration(hist.Now()).Round(time.Millisecond), leader.Name)

	// Sentinels, both preferring the first client.
	target := c.Clients[0]
	sentinels := []Sentinel{
		{ID: "sentinel-default", Marker: "chaos-" + n.Prefix + "-default", Count: 1, Strict: !sc.ClientFault},
		// stop_after_client_disconnect well above the heartbeat interval
		// (the TTL, 2-4 s here): at 3 s a healthy client stopped its copy
		// before its first heartbeat.
		{ID: "sentinel-fenced", Marker: "chaos-" + n.Prefix + "-fenced", Count: 1, StopAfter: 8 * time.Second, Strict: true},
	}
	lc := APIClient(leader, 10*time.Second)
	var markers []string
	for _, s := range sentinels {
		if _, _, err := lc.Jobs().Register(s.Job(target.Name), nil); err != nil {
			return nil, fmt.Errorf("registering %s: %w", s.ID, err)
		}
		markers = append(markers, s.Marker)
	}
	if err := waitFor(60*time.Second, func() bool {
		counts := CountProcs(markers)
		for _, s := range sentinels {
			if counts[s.Marker] != s.Count {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("sentinel processes: %w", err)
	}
	// The client faults hit the fenced sentinel's client (the affinity is
	// only a preference); the default one is measured when there too.
	if node := sentinelNode(c, sentinels[1].ID); node != "" && node != target.Name {
		target = agentNamed(c, node)
	}
	if node := sentinelNode(c, sentinels[0].ID); sc.ClientFault && node != "" && node != target.Name {
		res.Notes = append(res.Notes, "the default-settings sentinel ran on the other client")
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sampler := &Sampler{Markers: markers, History: hist}
	sampCtx, stopSampler := context.WithCancel(context.Background())
	defer stopSampler()
	sampDone := make(chan struct{})
	go func() { sampler.Run(sampCtx); close(sampDone) }()

	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%d", i)
	}
	w := &Workload{Cluster: c, History: hist, Writers: cfg.Writers, Keys: keys, Seed: cfg.Seed, Pace: 20 * time.Millisecond}
	wDone := make(chan struct{})
	go func() { w.Run(ctx); close(wDone) }()

	time.Sleep(cfg.Warmup)
	if l := c.Leader(); l != nil {
		leader = l
	}
	st := &runState{cfg: cfg, c: c, rng: rng, leader: leader, target: target, hold: cfg.Hold, elected: make(chan time.Duration, 1)}
	faultAt := hist.Now()
	faultTime := time.Now()
	heal, err := sc.Inject(st)
	if err != nil {
		stop()
		<-wDone
		return nil, fmt.Errorf("injecting %s: %w", sc.Name, err)
	}
	logf("%s: fault injected (leader was %s), holding %s", sc.Name, leader.Name, st.hold)
	time.Sleep(st.hold)
	if err := heal(); err != nil {
		stop()
		<-wDone
		return nil, fmt.Errorf("healing %s: %w", sc.Name, err)
	}
	healTime := time.Now()
	logf("%s: healed after %s", sc.Name, time.Since(faultTime).Round(time.Millisecond))

	// Convergence: every server agrees on a leader, each sentinel runs its
	// count of processes and of running allocations.
	convErr := waitFor(90*time.Second, func() bool {
		l := c.Leader()
		if l == nil {
			return false
		}
		last := sampler.Last()
		for _, s := range sentinels {
			if last.Counts[s.Marker] != s.Count || runningAllocs(l, s.ID) != s.Count {
				return false
			}
		}
		return true
	})
	res.ConvergedAfter = time.Since(healTime).Seconds()
	if convErr != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("no convergence within 90 s of the heal: %v", convErr))
	}
	if rest := cfg.After - time.Since(healTime); rest > 0 {
		time.Sleep(rest)
	}
	stop()
	<-wDone
	time.Sleep(time.Second)
	stopSampler()
	<-sampDone
	logf("%s: writers stopped; converged %.2fs after the heal", sc.Name, res.ConvergedAfter)

	select {
	case d := <-st.elected:
		res.ElectedAfter = d.Seconds()
	default:
	}
	res.ServerAckAfter = map[string]float64{}
	for _, op := range hist.Ops() {
		if op.Kind != OpRead && op.Outcome == OutcomeOK && op.Call > faultAt {
			d := time.Duration(op.Return - faultAt).Seconds()
			if res.FirstAckAfter == 0 || d < res.FirstAckAfter {
				res.FirstAckAfter = d
			}
			if strings.HasPrefix(op.Key, "probe-") {
				if prev, ok := res.ServerAckAfter[op.Server]; !ok || d < prev {
					res.ServerAckAfter[op.Server] = d
				}
			}
		}
	}

	if sc.LeaderFault && res.ElectedAfter > 0 {
		for name, d := range res.ServerAckAfter {
			if !slices.Contains(st.faulted, name) && d > res.ElectedAfter+1 {
				res.Notes = append(res.Notes, fmt.Sprintf("%s acknowledged its first write %.2fs after the fault, past the election plus 1 s", name, d))
			}
		}
		sort.Strings(res.Notes)
	}

	// Final reads from the leader, recorded as one more client, then the
	// same jobs read stale from every server must agree with them.
	final := map[string]jobState{}
	for _, s := range c.Servers {
		keys = append(keys, "probe-"+s.Name)
	}
	if l, err := c.WaitLeader(30*time.Second, nil); err == nil {
		cl := APIClient(l, 10*time.Second)
		for _, key := range keys {
			op := Op{Client: cfg.Writers, Server: l.Name, Key: key, Kind: OpRead, Call: hist.Now()}
			job, _, err := cl.Jobs().Info(key, nil)
			op.Return = hist.Now()
			classify(&op, err)
			if err == nil {
				op.Exists, op.ReadVal, op.ReadCount = true, job.Meta["w"], *job.TaskGroups[0].Count
				final[key] = jobState{Exists: true, Val: op.ReadVal, Count: op.ReadCount}
			} else if !op.NotFound() {
				res.Failures = append(res.Failures, fmt.Sprintf("final read of %s: %v", key, err))
			}
			hist.Add(op)
		}
		if msg := replicasAgree(c, keys, final); msg != "" {
			res.Failures = append(res.Failures, msg)
			dumpGoroutines(c)
		}
	} else {
		res.Failures = append(res.Failures, "no leader for the final reads: "+err.Error())
	}

	ops := hist.Ops()
	res.Ops = len(ops)
	if full := countStatus(ops, 507); full > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d answers 507 disk_full", full))
	}
	for _, op := range ops {
		switch op.Outcome {
		case OutcomeOK:
			res.OK++
		case OutcomeFail:
			res.Fail++
		default:
			res.Unknown++
		}
	}
	lin, err := CheckLinearizable(ops, 2*time.Minute, filepath.Join(dir, "linearizability.html"))
	if err != nil {
		res.Notes = append(res.Notes, "visualisation: "+err.Error())
	}
	res.Linearizable = string(lin)
	if lin != porcupine.Ok {
		res.Failures = append(res.Failures, "porcupine: "+string(lin))
	}
	res.Lost = CheckNoLostWrites(ops, final)
	if len(res.Lost) > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d acknowledged writes lost", len(res.Lost)))
	}
	samples := sampler.Samples()
	for _, s := range sentinels {
		o := Overlaps(samples, s.Marker, s.Count)
		res.Overlap[s.ID] = o
		if s.Strict && o.Seconds > 0 {
			res.Failures = append(res.Failures, fmt.Sprintf("%s (count %d) ran %d copies for %.1f s", s.ID, s.Count, o.Max, o.Seconds))
		}
	}
	res.Notes = append(res.Notes, st.notes...)
	res.Failures = append(res.Failures, st.failures...)
	res.Faulted = st.faulted
	res.Pass = len(res.Failures) == 0

	hist.WriteJSON(filepath.Join(dir, "history.json"))
	if b, err := json.Marshal(samples); err == nil {
		os.WriteFile(filepath.Join(dir, "samples.json"), b, 0o644)
	}
	if b, err := json.MarshalIndent(res, "", " "); err == nil {
		os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644)
	}
	return res, nil
}

// dumpGoroutines has every running server write its goroutines' stacks
// to its log (SIGQUIT; the agent exits) to show what a replica that does
// not catch up is waiting on.
func dumpGoroutines(c *Cluster) {
	for _, s := range c.Servers {
		if s.Running() {
			s.Signal(syscall.SIGQUIT)
		}
	}
	time.Sleep(time.Second)
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runningAllocs counts job's running allocations that are to keep
// running, as the leader sees them (-1 when it does not answer).
func runningAllocs(l *Agent, job string) int {
	allocs, _, err := APIClient(l, 2*time.Second).Jobs().Allocations(job, false, nil)
	if err != nil {
		return -1
	}
	n := 0
	for _, a := range allocs {
		if a.ClientStatus == "running" && a.DesiredStatus == "run" {
			n++
		}
	}
	return n
}

// sentinelNode is the name of the node running job's allocation.
func sentinelNode(c *Cluster, job string) string {
	l := c.Leader()
	if l == nil {
		return ""
	}
	allocs, _, err := APIClient(l, 2*time.Second).Jobs().Allocations(job, false, nil)
	if err != nil {
		return ""
	}
	nodes, _, err := APIClient(l, 2*time.Second).Nodes().List(nil)
	if err != nil {
		return ""
	}
	for _, a := range allocs {
		if a.ClientStatus == "running" {
			for _, n := range nodes {
				if n.ID == a.NodeID {
					return n.Name
				}
			}
		}
	}
	return ""
}

func agentNamed(c *Cluster, name string) *Agent {
	for _, a := range c.All() {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// replicasAgree reads every job stale from every server (retrying for
// a few seconds, a follower may lag by a heartbeat) and compares it with
// the leader's final answer.
func replicasAgree(c *Cluster, keys []string, final map[string]jobState) string {
	var msg string
	waitFor(10*time.Second, func() bool {
		msg = ""
		for _, s := range c.Servers {
			cl := APIClient(s, 2*time.Second)
			for _, key := range keys {
				job, _, err := cl.Jobs().Info(key, &api.QueryOptions{AllowStale: true})
				got := jobState{}
				if err == nil {
					got = jobState{Exists: true, Val: job.Meta["w"], Count: *job.TaskGroups[0].Count}
				} else {
					var op Op
					classify(&op, err)
					if !op.NotFound() {
						msg = fmt.Sprintf("%s: reading %s: %v", s.Name, key, err)
						return false
					}
				}
				if got != final[key] {
					msg = fmt.Sprintf("%s holds %s as %+v, the leader as %+v", s.Name, key, got, final[key])
					return false
				}
			}
		}
		return true
	})
	return msg
}

// Summary is one line about a run.
func Summary(r *Result) string {
	var b strings.Builder
	status := "PASS"
	if !r.Pass {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "%s %s seed %d: %d ops (%d ok, %d fail, %d unknown), porcupine %s, %d lost",
		status, r.Scenario, r.Seed, r.Ops, r.OK, r.Fail, r.Unknown, r.Linearizable, len(r.Lost))
	if r.ElectedAfter > 0 {
		fmt.Fprintf(&b, ", elected after %.2fs", r.ElectedAfter)
	}
	if r.FirstAckAfter > 0 {
		fmt.Fprintf(&b, ", first ack after %.2fs", r.FirstAckAfter)
	}
	if len(r.ServerAckAfter) > 0 {
		var names []string
		for n := range r.ServerAckAfter {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString(" (per server:")
		for _, n := range names {
			fmt.Fprintf(&b, " %s %.2fs", n, r.ServerAckAfter[n])
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", converged %.2fs after heal", r.ConvergedAfter)
	for _, id := range []string{"sentinel-default", "sentinel-fenced"} {
		if o, ok := r.Overlap[id]; ok {
			fmt.Fprintf(&b, ", %s overlap %.1fs", strings.TrimPrefix(id, "sentinel-"), o.Seconds)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "; %s", n)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\n    failure: %s", f)
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "\n    kept in %s", r.Dir)
	}
	return b.String()
}

// countStatus counts the operations answered with HTTP status.
func countStatus(ops []Op, status int) int {
	n := 0
	for _, op := range ops {
		if op.Status == status {
			n++
		}
	}
	return n
}

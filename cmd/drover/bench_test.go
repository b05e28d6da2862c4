package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent"
	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/bench"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/structs"
)

// startServerAgent runs `drover agent -server` (no client) in-process on
// free ports and returns it once it leads. It is stopped with a signal
// when the test ends.
func startServerAgent(t *testing.T) *agent.Agent {
	t.Helper()
	a := runServerAgent(t, "-bootstrap-expect", "1", "-node", "bench-test")
	waitFor(t, "a leader", 20*time.Second, func() bool { return a.Server().IsLeader() })
	return a
}

// runServerAgent runs `drover agent -server` (no client) in-process on
// free ports with the extra flags and returns it once it runs. It is
// stopped with a signal when the test ends.
func runServerAgent(t *testing.T, flags ...string) *agent.Agent {
	t.Helper()
	e, _, errOut := testEnv(nil)
	sig := make(chan os.Signal, 2)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	started := make(chan *agent.Agent, 1)
	e.agentStarted = func(a *agent.Agent) { started <- a }
	done := make(chan int, 1)
	dir := t.TempDir()
	go func() {
		done <- run(append([]string{"agent", "-server", "-data-dir", dir, "-bind", "127.0.0.1",
			"-http-port", "0", "-rpc-port", "0", "-log-level", "error"}, flags...), e)
	}()
	var a *agent.Agent
	select {
	case a = <-started:
	case code := <-done:
		t.Fatalf("agent exited with %d: %s", code, errOut)
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not start")
	}
	t.Cleanup(func() {
		sig <- syscall.SIGINT
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop")
		}
	})
	return a
}

// TestBenchEndToEnd runs a small burst (20 simulated nodes, one job of 50)
// through `drover bench` against a real in-process server.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	a := startServerAgent(t)
	md := filepath.Join(t.TempDir(), "rows.md")
	e, out, errOut := testEnv(nil)
	start := time.Now()
	code := run([]string{"bench", "-scenario", "burst", "-nodes", "20", "-count", "50",
		"-address", a.HTTPURL(), "-sim-servers", a.RPCAddr(), "-report-delay", "20ms", "-update-interval", "50ms",
		"-server-pids", strconv.Itoa(os.Getpid()), "-data-dirs", a.DataDir(), "-timeout", "30s",
		"-id-prefix", "e2e", "-json", "-markdown-out", md}, e)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errOut, out)
	}
	var res struct {
		Scenario       string  `json:"scenario"`
		Description    string  `json:"description"`
		Nodes          int     `json:"nodes"`
		Allocs         int     `json:"allocs"`
		Placed         int     `json:"placed"`
		Running        int     `json:"running"`
		PlacedSeconds  float64 `json:"placed_seconds"`
		RunningSeconds float64 `json:"running_seconds"`
		EvalLatency    struct {
			Count int     `json:"count"`
			P99   float64 `json:"p99"`
		} `json:"eval_latency"`
		Servers []struct {
			PID        int     `json:"pid"`
			Leader     bool    `json:"leader"`
			CPUSeconds float64 `json:"cpu_seconds"`
			PeakRSS    int64   `json:"peak_rss_bytes"`
		} `json:"servers"`
		RaftBytes int64    `json:"raft_bytes"`
		Misses    []string `json:"misses"`
		Errors    []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s", err, out)
	}
	if res.Scenario != "burst" || res.Nodes != 20 || res.Allocs != 50 || res.Placed != 50 || res.Running != 50 {
		t.Fatalf("result %+v", res)
	}
	if res.PlacedSeconds <= 0 || res.RunningSeconds < res.PlacedSeconds {
		t.Fatalf("placed in %v s, running in %v s", res.PlacedSeconds, res.RunningSeconds)
	}
	if res.EvalLatency.Count != 1 || res.EvalLatency.P99 <= 0 || res.EvalLatency.P99 > 10 {
		t.Fatalf("eval latency %+v", res.EvalLatency)
	}
	if len(res.Servers) != 1 || !res.Servers[0].Leader || res.Servers[0].PeakRSS <= 0 || res.RaftBytes <= 0 {
		t.Fatalf("servers %+v raft %d", res.Servers, res.RaftBytes)
	}
	if len(res.Misses) != 0 || len(res.Errors) != 0 || !strings.Contains(res.Description, "changed: 20 nodes") {
		t.Fatalf("misses %q errors %q description %q", res.Misses, res.Errors, res.Description)
	}
	row, err := os.ReadFile(md)
	if err != nil || !strings.HasPrefix(string(row), "| burst | 20 | 50 |") {
		t.Fatalf("markdown row %q, %v", row, err)
	}
	// The job was purged at the end (-cleanup defaults to true).
	if code, listing, _ := cli(a.HTTPURL(), "job", "status"); code != 0 || strings.Contains(listing, "bench-burst") {
		t.Fatalf("jobs left after the run (exit %d):\n%s", code, listing)
	}
	t.Logf("bench run took %v", time.Since(start).Round(time.Millisecond))
}

// TestBenchOverTLS runs a small burst through `drover bench` against a
// server whose RPC port and HTTP API are TLS with client certificates
// required: the API clients present a cli certificate over https
// (-ca-cert, -client-cert, -client-key), the simulator a client
// certificate (-tls-*). Without its certificate the bench is refused.
func TestBenchOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	ca := tlstest.NewCA(t)
	srvCert, srvKey := ca.Cert(t, tlsutil.RoleServer, "global", "server")
	cliCert, cliKey := ca.Cert(t, tlsutil.RoleCLI, "global", "cli")
	nodeCert, nodeKey := ca.Cert(t, tlsutil.RoleClient, "global", "client")
	conf := filepath.Join(t.TempDir(), "tls.hcl")
	block := fmt.Sprintf("tls {\n  http = true\n  rpc = true\n  ca_file = %q\n  cert_file = %q\n  key_file = %q\n"+
		"  verify_server_hostname = true\n  verify_https_client = true\n}\n", ca.CAFile, srvCert, srvKey)
	if err := os.WriteFile(conf, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	a := runServerAgent(t, "-bootstrap-expect", "1", "-node", "bench-tls", "-config", conf)
	waitFor(t, "a leader", 20*time.Second, func() bool { return a.Server().IsLeader() })
	if !strings.HasPrefix(a.HTTPURL(), "https://") {
		t.Fatalf("HTTP URL %s, want https", a.HTTPURL())
	}
	args := []string{"bench", "-scenario", "burst", "-nodes", "10", "-count", "20",
		"-address", a.HTTPURL(), "-ca-cert", ca.CAFile,
		"-sim-servers", a.RPCAddr(), "-tls-ca-file", ca.CAFile, "-tls-cert-file", nodeCert, "-tls-key-file", nodeKey,
		"-report-delay", "20ms", "-update-interval", "50ms", "-timeout", "30s", "-id-prefix", "tls", "-json"}

	e, out, errOut := testEnv(nil)
	if code := run(append(args, "-client-cert", cliCert, "-client-key", cliKey), e); code != 0 {
		t.Fatalf("bench over TLS exited %d: %s\n%s", code, errOut, out)
	}
	var res struct {
		Placed  int      `json:"placed"`
		Running int      `json:"running"`
		Errors  []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s", err, out)
	}
	if res.Placed != 20 || res.Running != 20 || len(res.Errors) != 0 {
		t.Fatalf("result over TLS: %+v", res)
	}

	// The agent wants a client certificate (verify_https_client): the
	// bench says so at once.
	e, out, errOut = testEnv(nil)
	code := run(append(args, "-id-prefix", "tls-nocert"), e)
	t.Logf("without a client certificate: exit %d: %s", code, strings.TrimSpace(errOut.String()))
	if code == 0 || !strings.Contains(errOut.String(), "certificate") {
		t.Fatalf("bench without a client certificate: exit %d: %s\n%s", code, errOut, out)
	}
}

// TestBenchLeaderKill runs a small place scenario through `drover bench`
// against three in-process servers and stops the leader's server (as a
// crash: no leave) 50 ms in: the run must fail over to the survivors,
// measure the election, and find every job at its count with no
// duplicate allocation.
func TestBenchLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers and simulated nodes")
	}
	start := time.Now()
	first := runServerAgent(t, "-bootstrap-expect", "3", "-node", "kill-s1")
	agents := []*agent.Agent{first}
	for _, name := range []string{"kill-s2", "kill-s3"} {
		agents = append(agents, runServerAgent(t, "-bootstrap-expect", "3", "-node", name, "-retry-join", first.RPCAddr()))
	}
	waitFor(t, "a leader", 30*time.Second, func() bool {
		for _, a := range agents {
			if a.Server().IsLeader() {
				return true
			}
		}
		return false
	})
	var killed []int
	killServerHook = func(i int) error {
		killed = append(killed, i)
		// The server stops at once, as in a crash; the HTTP side after.
		err := agents[i].Server().Shutdown()
		go agents[i].Shutdown()
		return err
	}
	t.Cleanup(func() { killServerHook = nil })

	var https, rpcs []string
	for _, a := range agents {
		https, rpcs = append(https, a.HTTPURL()), append(rpcs, a.RPCAddr())
	}
	e, out, errOut := testEnv(nil)
	code := run([]string{"bench", "-scenario", "c1m-small", "-nodes", "20", "-jobs", "8", "-count", "20",
		"-address", strings.Join(https, ","), "-sim-servers", strings.Join(rpcs, ","),
		"-report-delay", "20ms", "-update-interval", "50ms", "-timeout", "60s", "-id-prefix", "kill",
		"-kill-leader-after", "50ms", "-baseline-placed", "1h", "-json"}, e)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errOut, out)
	}
	var res struct {
		Placed    int `json:"placed"`
		Allocs    int `json:"allocs"`
		NodesDown int `json:"nodes_down"`
		Kill      struct {
			AtSeconds       float64 `json:"at_seconds"`
			ElectionSeconds float64 `json:"election_seconds"`
			NewLeader       string  `json:"new_leader"`
			RPCAddr         string  `json:"rpc_addr"`
			Error           string  `json:"error"`
		} `json:"kill"`
		Verify struct {
			Jobs, Expected, Converged, Duplicates, ReadErrors int
		} `json:"verify"`
		Servers []struct {
			Killed  bool `json:"killed"`
			Elected bool `json:"elected"`
		} `json:"servers"`
		Misses []string `json:"misses"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s", err, out)
	}
	if len(killed) != 1 || !res.Servers[killed[0]].Killed || res.Kill.RPCAddr != rpcs[killed[0]] {
		t.Fatalf("killed %v, servers %+v, kill %+v", killed, res.Servers, res.Kill)
	}
	if res.Kill.AtSeconds <= 0 || res.Kill.ElectionSeconds <= 0 || res.Kill.NewLeader == "" || res.Kill.NewLeader == res.Kill.RPCAddr {
		t.Fatalf("kill %+v", res.Kill)
	}
	elected := 0
	for _, s := range res.Servers {
		if s.Elected {
			elected++
		}
	}
	if elected != 1 {
		t.Fatalf("servers %+v: want one elected", res.Servers)
	}
	if res.Placed != 160 || res.Allocs != 160 || res.NodesDown != 0 {
		t.Fatalf("placed %d of %d, %d nodes down", res.Placed, res.Allocs, res.NodesDown)
	}
	if v := res.Verify; v.Jobs != 8 || v.Expected != 8 || v.Converged != 8 || v.Duplicates != 0 || v.ReadErrors != 0 {
		t.Fatalf("verify %+v", v)
	}
	if len(res.Misses) != 0 {
		t.Fatalf("misses %q", res.Misses)
	}
	t.Logf("three servers, kill %+v, in %v", res.Kill, time.Since(start).Round(time.Millisecond))
}

// TestSimCommand runs `drover sim` until its nodes are ready, then stops
// it with a signal.
func TestSimCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	a := startServerAgent(t)
	e, out, errOut := testEnv(nil)
	sig := make(chan os.Signal, 1)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"sim", "-servers", a.RPCAddr(), "-nodes", "5", "-id-prefix", "cmd",
			"-classes", "x:1,y:1", "-attr", "rack=r9", "-status-interval", "50ms"}, e)
	}()
	waitFor(t, "five ready simulated nodes", 20*time.Second, func() bool {
		_, listing, _ := cli(a.HTTPURL(), "node", "status")
		return strings.Count(listing, "ready") == 5
	})
	waitFor(t, "a status line", 5*time.Second, func() bool { return strings.Contains(out.String(), "nodes 5/5 registered") })
	sig <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("sim exited %d: %s", code, errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sim did not stop")
	}
	if !strings.Contains(out.String(), "Caught signal") {
		t.Fatalf("output:\n%s", out)
	}
	_, node, _ := cli(a.HTTPURL(), "node", "status", "-verbose", "cmd-000001")
	if !regexp.MustCompile(`Class\s+= y\n`).MatchString(node) || !strings.Contains(node, "cmd-000001") {
		t.Fatalf("node status of cmd-000001:\n%s", node)
	}
}

func TestBenchUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "-list"}, 0, "c1m-small"},
		{[]string{"bench", "-markdown-header"}, 0, "| scenario | nodes |"},
		{[]string{"bench", "-scenario", "nope"}, 1, "unknown scenario"},
		{[]string{"bench", "-scenario", "burst", "-sim"}, 1, "-sim needs -sim-servers"},
		{[]string{"bench", "-scenario", "burst", "-server-pids", "x"}, 1, "not a PID"},
		{[]string{"bench", "-scenario", "c1m-small-kill", "-address", "http://a,http://b"}, 1, "needs -server-pids"},
		{[]string{"bench", "-scenario", "burst", "-kill-leader-after", "1s", "-address", "http://a", "-server-pids", "1"}, 1, "at least two servers"},
		{[]string{"bench", "stray"}, 1, "takes no arguments"},
		{[]string{"bench", "-scenario", "burst", "-client-cert", "c.pem"}, 1, "-client-cert and -client-key go together"},
		{[]string{"bench", "-scenario", "burst", "-ca-cert", "/nonexistent/ca.pem"}, 1, "reading the CA certificate"},
		{[]string{"bench", "-summarize"}, 1, "needs result files"},
		{[]string{"bench", "-summarize", "/nonexistent/a.json"}, 1, "reading a result"},
		{[]string{"sim", "-nodes", "0", "-servers", "127.0.0.1:1"}, 1, "nodes must be positive"},
		{[]string{"sim", "-classes", "a:0", "-servers", "127.0.0.1:1"}, 1, "weight"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(tc.args, e); code != tc.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Fatalf("output lacks %q:\n%s%s", tc.want, out, errOut)
			}
		})
	}
}

// TestBenchSummarize: result files in one directory per label summarize
// to a row per label.
func TestBenchSummarize(t *testing.T) {
	dir := t.TempDir()
	write := func(label, name string, placed float64) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, label), 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		r := &bench.Result{Scenario: "burst", PlacedSeconds: placed}
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, label, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	files := []string{write("old", "1.json", 0.3), write("new", "1.json", 0.1), write("new", "2.json", 0.2)}
	e, out, errOut := testEnv(nil)
	if code := run(append([]string{"bench", "-summarize"}, files...), e); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "old ") || !strings.HasPrefix(lines[2], "new ") ||
		!strings.Contains(lines[2], "150 ms (100-200 ms)") {
		t.Fatalf("summary:\n%s", out)
	}
}

// TestBenchPortsSmoke runs the burst-ports variant small: every
// allocation gets its own dynamic port, never one twice on a node.
func TestBenchPortsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	a := startServerAgent(t)
	e, out, errOut := testEnv(nil)
	code := run([]string{"bench", "-scenario", "burst-ports", "-nodes", "5", "-count", "40",
		"-address", a.HTTPURL(), "-sim-servers", a.RPCAddr(), "-report-delay", "20ms", "-update-interval", "50ms",
		"-timeout", "30s", "-id-prefix", "ports", "-json", "-cleanup=false"}, e)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errOut, out)
	}
	c := api.NewClient(a.HTTPURL())
	stubs, _, err := c.Allocations(context.Background(), nil)
	if err != nil || len(stubs) != 40 {
		t.Fatalf("%d allocations: %v", len(stubs), err)
	}
	taken := map[string]bool{}
	for _, s := range stubs {
		alloc, _, err := c.Allocation(context.Background(), s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		ports := alloc.AllocatedResources.Shared.Ports
		if len(ports) != 1 || ports[0].Label != "p0" || ports[0].Value < 20000 || ports[0].Value > 32000 {
			t.Fatalf("ports %+v", ports)
		}
		key := alloc.NodeID + "/" + strconv.Itoa(ports[0].Value)
		if taken[key] {
			t.Fatalf("port %s given twice", key)
		}
		taken[key] = true
	}
}

// TestBenchSpreadSmoke runs the c1m-small-spread scenario small: the
// simulated nodes are in dc1..dc3 and every job's allocations are spread
// over them, each placement scored with allocation-spread.
func TestBenchSpreadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	a := startServerAgent(t)
	e, out, errOut := testEnv(nil)
	code := run([]string{"bench", "-scenario", "c1m-small-spread", "-nodes", "9", "-jobs", "2", "-count", "9",
		"-address", a.HTTPURL(), "-sim-servers", a.RPCAddr(), "-report-delay", "20ms", "-update-interval", "50ms",
		"-timeout", "30s", "-id-prefix", "spread", "-json", "-cleanup=false"}, e)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errOut, out)
	}
	c := api.NewClient(a.HTTPURL())
	nodes, _, err := c.Nodes(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dcOf := map[string]string{}
	for _, n := range nodes {
		dcOf[n.ID] = n.Datacenter
	}
	stubs, _, err := c.Allocations(context.Background(), nil)
	if err != nil || len(stubs) != 18 {
		t.Fatalf("%d allocations: %v", len(stubs), err)
	}
	perJob := map[string]map[string]int{}
	for _, s := range stubs {
		alloc, _, err := c.Allocation(context.Background(), s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if perJob[alloc.JobID] == nil {
			perJob[alloc.JobID] = map[string]int{}
		}
		perJob[alloc.JobID][dcOf[alloc.NodeID]]++
		if m := alloc.Metrics; m == nil || len(m.ScoreMetaData) == 0 {
			t.Fatalf("allocation %s has no scores: %+v", alloc.ID, m)
		} else if _, ok := m.ScoreMetaData[0].Scores[structs.ScoreSpread]; !ok {
			t.Fatalf("allocation %s: scores %v lack %s", alloc.ID, m.ScoreMetaData[0].Scores, structs.ScoreSpread)
		}
	}
	for job, byDC := range perJob {
		if byDC["dc1"] != 3 || byDC["dc2"] != 3 || byDC["dc3"] != 3 {
			t.Fatalf("job %s placed %v, want 3 per datacenter", job, byDC)
		}
	}
}

// TestBenchJoinStormSmoke runs a small join storm (3 system jobs, then 40
// simulated nodes joining) through `drover bench`: every node runs every
// job's allocation, and the evaluations written are counted, far fewer
// than one per node and job.
func TestBenchJoinStormSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and simulated nodes")
	}
	a := startServerAgent(t)
	e, out, errOut := testEnv(nil)
	code := run([]string{"bench", "-scenario", "join-storm", "-nodes", "40", "-jobs", "3",
		"-address", a.HTTPURL(), "-sim-servers", a.RPCAddr(), "-report-delay", "20ms", "-update-interval", "50ms",
		"-timeout", "60s", "-id-prefix", "js", "-json"}, e)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errOut, out)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s", err, out)
	}
	if res.Kind != bench.KindJoinStorm || res.Nodes != 40 || res.Allocs != 120 || res.Running != 120 || res.PlacedSeconds <= 0 {
		t.Fatalf("result: kind %s, %d nodes, %d allocs, %d running, placed in %v s; errors %q",
			res.Kind, res.Nodes, res.Allocs, res.Running, res.PlacedSeconds, res.Errors)
	}
	ev := res.Evals
	if ev == nil || ev.ByTrigger[structs.EvalTriggerJobRegister] != 3 || ev.Written > 3+3*20 {
		t.Fatalf("evaluations %+v, want 3 registrations and far fewer node-update evaluations than 120", ev)
	}
	t.Logf("evaluations: %s", ev)
}

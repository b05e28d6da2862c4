package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent"
)

// startServerAgent runs `drover agent -server` (no client) in-process on
// free ports and returns it once it leads. It is stopped with a signal
// when the test ends.
func startServerAgent(t *testing.T) *agent.Agent {
	t.Helper()
	e, _, errOut := testEnv(nil)
	sig := make(chan os.Signal, 2)
	e.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	started := make(chan *agent.Agent, 1)
	e.agentStarted = func(a *agent.Agent) { started <- a }
	done := make(chan int, 1)
	dir := t.TempDir()
	go func() {
		done <- run([]string{"agent", "-server", "-bootstrap-expect", "1", "-data-dir", dir, "-bind", "127.0.0.1",
			"-http-port", "0", "-rpc-port", "0", "-log-level", "error", "-node", "bench-test"}, e)
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
	waitFor(t, "a leader", 20*time.Second, func() bool { return a.Server().IsLeader() })
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

package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sampleResult() *Result {
	sc, _ := Lookup("burst")
	r := &Result{
		Scenario: sc.Name, Description: sc.Description, Kind: sc.Kind, Targets: sc.Targets,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Nodes:   500, Jobs: 1, Allocs: 5000, Placed: 5000, Running: 5000,
		PlacedSeconds: 0.5, RunningSeconds: 1.5, PlacementsPerSec: 10000, WindowSeconds: 1.5,
		EvalLatency: Latency{Count: 1, P50: 0.45, P95: 0.45, P99: 0.45, Max: 0.45, Mean: 0.45},
		Servers: []ServerResult{
			{Address: "http://a", PID: 10, Leader: true, CPUSeconds: 0.9, CPUPercent: 60, PeakRSSBytes: 250 << 20, HWMBytes: 260 << 20},
			{Address: "http://b", PID: 11, CPUSeconds: 0.3, CPUPercent: 20, PeakRSSBytes: 100 << 20},
			{Address: "http://c", PID: 12, Error: "no such process"},
		},
		RaftBytes: 60 << 20, LoadStart: "1.00 0.50 0.25", LoadEnd: "1.20 0.60 0.30",
		Machine: Machine{CPUs: 2, CPUModel: "Test CPU", MemoryMB: 4096, OS: "linux/amd64", Go: "go1.26"},
	}
	r.checkTargets()
	return r
}

func TestCheckTargets(t *testing.T) {
	r := sampleResult()
	want := []string{"placed in 500 ms, target 400 ms", "leader peak RSS 250.0 MiB, target 200.0 MiB"}
	if strings.Join(r.Misses, "|") != strings.Join(want, "|") {
		t.Fatalf("misses %q, want %q", r.Misses, want)
	}
	idle := &Result{Kind: KindIdle, NodesDown: 3, Targets: Targets{LeaderCPUPercent: 30},
		Servers: []ServerResult{{PID: 1, Leader: true, CPUPercent: 12}}}
	idle.checkTargets()
	if len(idle.Misses) != 1 || !strings.Contains(idle.Misses[0], "3 nodes marked down") {
		t.Fatalf("idle misses %q", idle.Misses)
	}
	unreached := &Result{Kind: KindPlace, Targets: Targets{Placed: time.Second}}
	unreached.checkTargets()
	if len(unreached.Misses) != 1 {
		t.Fatalf("an unreached placement must miss its target: %q", unreached.Misses)
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Placed                  500 ms (5,000/5,000), 10,000 placements/s",
		"Running                 1.50 s (5,000/5,000)",
		"p50 450 ms, p95 450 ms, p99 450 ms, max 450 ms (n=1)",
		"Raft data               60.0 MiB",
		"1.00 0.50 0.25 at start, 1.20 0.60 0.30 at end",
		"2 x Test CPU, 4,096 MiB",
		"http://a  10   leader",
		"0.90   60.0            250.0 MiB  260.0 MiB",
		"http://c  12   follower      no such process",
		"MISSED: placed in 500 ms, target 400 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{
		"scenario": "burst", "placed_seconds": 0.5, "running_seconds": 1.5, "placements_per_second": 10000.0,
		"allocs": 5000.0, "raft_bytes": float64(60 << 20), "loadavg_start": "1.00 0.50 0.25",
	}
	for k, v := range checks {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	lat := got["eval_latency"].(map[string]any)
	if lat["p99"] != 0.45 || lat["count"] != 1.0 {
		t.Errorf("eval_latency %v", lat)
	}
	servers := got["servers"].([]any)
	if len(servers) != 3 || servers[0].(map[string]any)["leader"] != true || servers[0].(map[string]any)["peak_rss_bytes"] != float64(250<<20) {
		t.Errorf("servers %v", servers)
	}
	if len(got["misses"].([]any)) != 2 {
		t.Errorf("misses %v", got["misses"])
	}
}

func TestMarkdownRow(t *testing.T) {
	header := strings.Split(MarkdownHeader, "\n")
	cols := strings.Count(header[0], "|")
	if strings.Count(header[1], "|") != cols {
		t.Fatal("header separator has the wrong column count")
	}
	cases := []struct {
		name string
		r    *Result
		want []string
	}{
		{"place", sampleResult(), []string{"| burst | 500 | 5,000 | 500 ms | 1.50 s | 10,000 | 450 ms / 450 ms / 450 ms | 0.90 (60%) | 250.0 MiB | 0.30 | 60.0 MiB | - | - | 1.00 0.50 0.25 / 1.20 0.60 0.30 |"}},
		{"unreached", &Result{Scenario: "c1m-small", Kind: KindPlace, Allocs: 100000, Placed: 90000}, []string{"not reached (90,000)"}},
		{"churn", &Result{Scenario: "churn", Kind: KindChurn, Ops: 1200, WindowSeconds: 60, OpsPerSec: 20}, []string{"1,200 writes (20.0/s)"}},
		{"idle", &Result{Scenario: "heartbeats", Kind: KindIdle, Nodes: 10000, WindowSeconds: 600, NodesDown: 0}, []string{"| heartbeats | 10,000 | idle 600 s, 0 down |"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			row := tc.r.MarkdownRow()
			if strings.Count(row, "|") != cols {
				t.Fatalf("row has %d separators, header %d: %s", strings.Count(row, "|"), cols, row)
			}
			for _, w := range tc.want {
				if !strings.Contains(row, w) {
					t.Fatalf("row %s\nlacks %s", row, w)
				}
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	cases := []struct{ got, want string }{
		{fmtSeconds(0), "-"},
		{fmtSeconds(0.0042), "4.20 ms"},
		{fmtSeconds(0.4), "400 ms"},
		{fmtSeconds(12.345), "12.35 s"},
		{fmtSeconds(600), "600 s"},
		{fmtBytes(0), "-"},
		{fmtBytes(3 << 20), "3.0 MiB"},
		{fmtBytes(12 << 30), "12.0 GiB"},
		{fmtCount(0), "0"},
		{fmtCount(999), "999"},
		{fmtCount(1000), "1,000"},
		{fmtCount(1234567.4), "1,234,567"},
		{fmtCount(-4500), "-4,500"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestScenarios(t *testing.T) {
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Fatalf("unknown scenario error %v should list the known ones", err)
	}
	want := map[string]int{"burst": 5000, "dense": 5000, "c1m-small": 100000}
	for _, s := range Scenarios() {
		if s.Nodes.Count <= 0 || s.Description == "" {
			t.Errorf("%s: nodes %d description %q", s.Name, s.Nodes.Count, s.Description)
		}
		if n, ok := want[s.Name]; ok && (s.Kind != KindPlace || s.AllocTotal() != n) {
			t.Errorf("%s: kind %s allocs %d, want place %d", s.Name, s.Kind, s.AllocTotal(), n)
		}
		// Every placement must fit: nodes x capacity >= allocations.
		if s.Kind == KindPlace {
			perNode := min(s.Nodes.CPU/int64(s.TaskCPU), s.Nodes.MemoryMB/int64(s.TaskMemoryMB))
			if perNode*int64(s.Nodes.Count) < int64(s.AllocTotal()) {
				t.Errorf("%s: %d nodes of %d allocations cannot hold %d", s.Name, s.Nodes.Count, perNode, s.AllocTotal())
			}
		}
	}
}

func TestChurnState(t *testing.T) {
	st := &churnState{rng: newTestRand(), ops: map[string]int{}, want: 4}
	// Below half the wanted jobs: always register.
	op, id, seq, _ := st.next()
	if op != opRegister || id != "" || seq != 1 {
		t.Fatalf("first op %s %q %d", op, id, seq)
	}
	st.done(opRegister, "j1", true)
	st.done(opRegister, "j2", true)
	st.done(opRegister, "j3", true)
	st.done(opRegister, "j4", true)
	// At the wanted count: scale or stop, taking a job out while written.
	op, id, _, _ = st.next()
	if op == opRegister || id == "" || st.liveCount() != 3 {
		t.Fatalf("at capacity got %s %q with %d live", op, id, st.liveCount())
	}
	st.done(opScale, id, false) // a failed scale leaves the job live
	if st.liveCount() != 4 {
		t.Fatalf("failed scale dropped the job: %d live", st.liveCount())
	}
	_, id, _, _ = st.next()
	st.done(opStop, id, true)
	if st.liveCount() != 3 || st.ops["stop"] != 1 || st.ops["register"] != 4 {
		t.Fatalf("after a stop: %d live, ops %v", st.liveCount(), st.ops)
	}
}

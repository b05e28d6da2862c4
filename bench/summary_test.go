package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarizeRuns(t *testing.T) {
	run := func(scenario string, placed, p99, cpu float64, rss int64, missed bool) *Result {
		r := &Result{Scenario: scenario, PlacedSeconds: placed, RunningSeconds: placed + 0.5, CalibrationMS: placed * 10,
			EvalLatency: Latency{Count: 10, P99: p99},
			Servers:     []ServerResult{{PID: 1, Leader: true, CPUSeconds: cpu / 2, PeakRSSBytes: rss}, {PID: 2, CPUSeconds: cpu / 4}},
			Self:        ServerResult{CPUSeconds: cpu / 4}}
		if missed {
			r.Misses = []string{"placed in too long"}
		}
		return r
	}
	rows := SummarizeRuns([]Labeled{
		{"new", run("c1m-small", 13, 12, 24, 900<<20, true)},
		{"old", run("c1m-small", 16, 15, 30, 1800<<20, true)},
		{"new", run("c1m-small", 12, 11, 22, 950<<20, false)},
		{"new", run("c1m-small", 15, 14, 28, 1000<<20, true)},
		{"old", run("c1m-small", 18, 17, 34, 1700<<20, true)},
		{"new", run("burst", 0.2, 0.1, 1, 100<<20, false)},
	})
	if len(rows) != 3 || rows[0].Label != "new" || rows[1].Label != "old" || rows[2].Scenario != "burst" {
		t.Fatalf("rows %+v: want new/c1m-small, old/c1m-small, new/burst in order of appearance", rows)
	}
	n := rows[0]
	if n.Runs != 3 || n.Misses != 2 || n.Placed != (Spread{N: 3, Min: 12, Median: 13, Max: 15}) ||
		n.CPU != (Spread{N: 3, Min: 22, Median: 24, Max: 28}) || n.LeaderRSS.Max != float64(1000<<20) ||
		n.Running.Median != 13.5 || n.EvalP99.Min != 11 || n.Calibration != (Spread{N: 3, Min: 120, Median: 130, Max: 150}) {
		t.Fatalf("new c1m-small: %+v", n)
	}
	if o := rows[1]; o.Placed.Median != 17 || o.Placed.N != 2 {
		t.Fatalf("old c1m-small (an even count: the mean of the middle two): %+v", o.Placed)
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, rows); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "13.00 s (12.00-15.00 s)") || !strings.Contains(s, "200 ms") ||
		!strings.Contains(s, "130.0 ms (120.0-150.0 ms)") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestReadResultFile(t *testing.T) {
	r := &Result{Scenario: "burst", PlacedSeconds: 0.2, Servers: []ServerResult{{PID: 3, Leader: true, PeakRSSBytes: 5}}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "burst.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResultFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := got.Leader(); got.Scenario != "burst" || got.PlacedSeconds != 0.2 || !ok || l.PeakRSSBytes != 5 {
		t.Fatalf("read back %+v", got)
	}
	if _, err := ReadResultFile(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("a missing file read without an error")
	}
}

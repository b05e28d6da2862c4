package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one scenario run measured. Durations are in seconds.
type Result struct {
	Scenario    string    `json:"scenario"`
	Description string    `json:"description"`
	Kind        Kind      `json:"kind"`
	Started     time.Time `json:"started"`
	Command     string    `json:"command,omitempty"`

	Nodes     int `json:"nodes"`
	NodesDown int `json:"nodes_down"`
	Jobs      int `json:"jobs"`
	Allocs    int `json:"allocs"`

	// WindowSeconds is the measured window (CPU figures cover it).
	WindowSeconds float64 `json:"window_seconds"`
	// RegisterSeconds is how long submitting every job took.
	RegisterSeconds float64 `json:"register_seconds"`
	// Placed and Running are the counts reached; PlacedSeconds and
	// RunningSeconds the time from the first submission until they
	// reached Allocs (0 when they did not).
	Placed           int     `json:"placed"`
	Running          int     `json:"running"`
	PlacedSeconds    float64 `json:"placed_seconds"`
	RunningSeconds   float64 `json:"running_seconds"`
	PlacementsPerSec float64 `json:"placements_per_second"`

	// EvalLatency is register (or any job write) -> evaluation complete;
	// EvalsUnresolved counts evaluations not complete when the run ended.
	EvalLatency     Latency `json:"eval_latency"`
	EvalsUnresolved int     `json:"evals_unresolved"`
	// WriteLatency is the HTTP round trip of the job writes.
	WriteLatency Latency `json:"write_latency"`

	// Join storm: how long until every node had registered (from the
	// first one's start), and the evaluations of the jobs at the end.
	JoinSeconds float64     `json:"join_seconds,omitempty"`
	Evals       *EvalCounts `json:"evals,omitempty"`

	// Churn: job writes done, by kind, and per second.
	Ops       int            `json:"ops,omitempty"`
	OpsByKind map[string]int `json:"ops_by_kind,omitempty"`
	OpsPerSec float64        `json:"ops_per_second,omitempty"`

	Servers []ServerResult `json:"servers"`
	// RaftBytes is the disk usage of the data directories at the end.
	RaftBytes int64 `json:"raft_bytes"`
	// Self is this process (driver and, if in-process, the simulator).
	Self ServerResult `json:"self"`

	// Kill is the leader kill, when one was asked for.
	Kill *KillResult `json:"kill,omitempty"`
	// Verify is what reading every job's allocations at the end showed
	// (nil: not checked).
	Verify *VerifyResult `json:"verify,omitempty"`

	LoadStart string  `json:"loadavg_start"`
	LoadEnd   string  `json:"loadavg_end"`
	Machine   Machine `json:"machine"`
	// CalibrationMS is the reference loop's time just before the run
	// (calibrate.go): the machine's speed at the time, lower is faster.
	CalibrationMS float64 `json:"calibration_ms,omitempty"`

	Targets Targets  `json:"-"`
	Misses  []string `json:"misses,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// Latency is a latency summary in seconds.
type Latency struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func latencyOf(p Percentiles) Latency {
	return Latency{Count: p.Count, Mean: p.Mean.Seconds(), P50: p.P50.Seconds(), P95: p.P95.Seconds(),
		P99: p.P99.Seconds(), Max: p.Max.Seconds()}
}

// ServerResult is what one server process cost over the window.
type ServerResult struct {
	Address string `json:"address,omitempty"`
	RPCAddr string `json:"rpc_addr,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Leader  bool   `json:"leader"`
	// Killed: the leader kill stopped it; Elected: it led after the kill.
	Killed     bool    `json:"killed,omitempty"`
	Elected    bool    `json:"elected,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPercent is of one core over the window.
	CPUPercent   float64 `json:"cpu_percent"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	HWMBytes     int64   `json:"hwm_bytes"`
	Error        string  `json:"error,omitempty"`
}

// Leader returns the leader's figures, if its process was measured.
func (r *Result) Leader() (ServerResult, bool) {
	for _, s := range r.Servers {
		if s.Leader && s.PID != 0 {
			return s, true
		}
	}
	return ServerResult{}, false
}

// checkTargets lists the scenario's targets the run missed.
func (r *Result) checkTargets() {
	t := r.Targets
	miss := func(format string, args ...any) { r.Misses = append(r.Misses, fmt.Sprintf(format, args...)) }
	if t.Placed > 0 && (r.PlacedSeconds == 0 || r.PlacedSeconds > t.Placed.Seconds()) {
		miss("placed in %s, target %s", fmtSeconds(r.PlacedSeconds), fmtSeconds(t.Placed.Seconds()))
	}
	if t.Running > 0 && (r.RunningSeconds == 0 || r.RunningSeconds > t.Running.Seconds()) {
		miss("running in %s, target %s", fmtSeconds(r.RunningSeconds), fmtSeconds(t.Running.Seconds()))
	}
	if t.EvalP99 > 0 && (r.EvalLatency.Count == 0 || r.EvalLatency.P99 > t.EvalP99.Seconds()) {
		miss("eval p99 %s, target %s", fmtSeconds(r.EvalLatency.P99), fmtSeconds(t.EvalP99.Seconds()))
	}
	if l, ok := r.Leader(); ok {
		if t.LeaderRSSBytes > 0 && l.PeakRSSBytes > t.LeaderRSSBytes {
			miss("leader peak RSS %s, target %s", fmtBytes(l.PeakRSSBytes), fmtBytes(t.LeaderRSSBytes))
		}
		if t.LeaderCPUPercent > 0 && l.CPUPercent > t.LeaderCPUPercent {
			miss("leader CPU %.1f%% of a core, target %.0f%%", l.CPUPercent, t.LeaderCPUPercent)
		}
	}
	if r.Kind == KindIdle && r.NodesDown > 0 {
		miss("%d nodes marked down, target 0", r.NodesDown)
	}
	if k := r.Kill; k != nil {
		switch {
		case k.AtSeconds == 0:
			miss("no leader kill: %s", orDash(k.Error))
		case k.ElectionSeconds == 0:
			miss("no new leader seen after the kill: %s", orDash(k.Error))
		}
		if r.Kind != KindIdle && r.NodesDown > 0 {
			miss("%d nodes marked down after the leader kill, target 0", r.NodesDown)
		}
		if a := k.allowance(); a > 0 && (r.PlacedSeconds == 0 || r.PlacedSeconds > a) {
			miss("placed in %s with the leader kill, target %s (baseline %s + election %s + %s)", fmtSeconds(r.PlacedSeconds),
				fmtSeconds(a), fmtSeconds(k.BaselinePlacedSeconds), fmtSeconds(k.ElectionSeconds), fmtSeconds(KillSlack.Seconds()))
		}
	}
	if v := r.Verify; v != nil {
		if v.Duplicates > 0 {
			miss("DUPLICATE ALLOCATIONS: %d names held by more than one live allocation, target 0", v.Duplicates)
		}
		if v.Converged < v.Expected {
			miss("%d of %d jobs did not converge to their count", v.Expected-v.Converged, v.Expected)
		}
		if v.ReadErrors > 0 {
			miss("%d jobs' allocations could not be read", v.ReadErrors)
		}
	}
}

// fmtSeconds renders seconds with three significant decimals ("-" for 0).
func fmtSeconds(s float64) string {
	switch {
	case s == 0:
		return "-"
	case s < 0.01:
		return strconv.FormatFloat(s*1000, 'f', 2, 64) + " ms"
	case s < 1:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
	case s < 100:
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + " s"
}

// fmtBytes renders a byte count in MiB or GiB.
func fmtBytes(b int64) string {
	switch {
	case b <= 0:
		return "-"
	case b >= 10<<30:
		return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}

// fmtCount renders n with thousands separators.
func fmtCount(n float64) string {
	s := strconv.FormatFloat(n, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (l Latency) String() string {
	if l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s, p95 %s, p99 %s, max %s (n=%d)",
		fmtSeconds(l.P50), fmtSeconds(l.P95), fmtSeconds(l.P99), fmtSeconds(l.Max), l.Count)
}

// WriteText renders the result as aligned text.
func (r *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Scenario", r.Scenario+": "+r.Description)
	row("Started", r.Started.Format(time.RFC3339))
	row("Nodes", fmt.Sprintf("%s (%d down at the end)", fmtCount(float64(r.Nodes)), r.NodesDown))
	if r.Kind == KindPlace {
		row("Jobs", fmt.Sprintf("%s x %s = %s allocations, submitted in %s",
			fmtCount(float64(r.Jobs)), fmtCount(float64(r.Allocs/max(r.Jobs, 1))), fmtCount(float64(r.Allocs)), fmtSeconds(r.RegisterSeconds)))
		row("Placed", fmt.Sprintf("%s (%s/%s), %s placements/s", fmtSeconds(r.PlacedSeconds),
			fmtCount(float64(r.Placed)), fmtCount(float64(r.Allocs)), fmtCount(r.PlacementsPerSec)))
		row("Running", fmt.Sprintf("%s (%s/%s)", fmtSeconds(r.RunningSeconds), fmtCount(float64(r.Running)), fmtCount(float64(r.Allocs))))
	}
	if r.Kind == KindJoinStorm {
		row("Jobs", fmt.Sprintf("%s system jobs, registered in %s before the nodes", fmtCount(float64(r.Jobs)), fmtSeconds(r.RegisterSeconds)))
		row("Nodes joined", fmtSeconds(r.JoinSeconds))
		row("Placed", fmt.Sprintf("%s (%s/%s) from the first join", fmtSeconds(r.PlacedSeconds),
			fmtCount(float64(r.Placed)), fmtCount(float64(r.Allocs))))
		row("Running", fmt.Sprintf("%s (%s/%s)", fmtSeconds(r.RunningSeconds), fmtCount(float64(r.Running)), fmtCount(float64(r.Allocs))))
		row("Evaluations", r.Evals.String())
	}
	if r.Kind == KindChurn {
		row("Job writes", fmt.Sprintf("%s completed (%.1f/s): %s", fmtCount(float64(r.Ops)), r.OpsPerSec, joinKinds(r.OpsByKind)))
	}
	if r.Kind != KindIdle && r.Kind != KindJoinStorm {
		row("Write -> eval complete", r.EvalLatency.String()+unresolved(r.EvalsUnresolved))
		row("Write HTTP round trip", r.WriteLatency.String())
	}
	if k := r.Kill; k != nil {
		row("Leader kill", k.String())
		if a := k.allowance(); a > 0 {
			row("Placed vs baseline", fmt.Sprintf("%s, target %s (baseline %s + election %s + %s)", fmtSeconds(r.PlacedSeconds),
				fmtSeconds(a), fmtSeconds(k.BaselinePlacedSeconds), fmtSeconds(k.ElectionSeconds), fmtSeconds(KillSlack.Seconds())))
		}
	}
	if v := r.Verify; v != nil {
		row("Allocations checked", fmt.Sprintf("%s (read in %s)", v.summary(), fmtSeconds(v.Seconds)))
	}
	row("Window", fmtSeconds(r.WindowSeconds))
	row("Raft data", fmtBytes(r.RaftBytes))
	row("Load average", fmt.Sprintf("%s at start, %s at end", orDash(r.LoadStart), orDash(r.LoadEnd)))
	if r.CalibrationMS > 0 {
		row("Reference loop", fmt.Sprintf("%.1f ms before the run (best of %d; the machine's speed, lower is faster)", r.CalibrationMS, calibrationRounds))
	}
	row("Machine", fmt.Sprintf("%d x %s, %s MiB, %s, %s", r.Machine.CPUs, orDash(r.Machine.CPUModel),
		fmtCount(float64(r.Machine.MemoryMB)), r.Machine.OS, r.Machine.Go))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "Server\tPID\tRole\tCPU s\tCPU % (1 core)\tPeak RSS\tHWM")
	srv := func(s ServerResult, role string) {
		name := s.Address
		if name == "" {
			name = "-"
		}
		if s.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", name, s.PID, role, s.Error)
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.1f\t%s\t%s\n", name, s.PID, role, s.CPUSeconds, s.CPUPercent,
			fmtBytes(s.PeakRSSBytes), fmtBytes(s.HWMBytes))
	}
	for _, s := range r.Servers {
		srv(s, s.role())
	}
	srv(r.Self, "this process")
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range r.Misses {
		fmt.Fprintf(w, "MISSED: %s\n", m)
	}
	if len(r.Misses) == 0 && hasTargets(r.Targets) {
		fmt.Fprintln(w, "Targets: all met")
	}
	if r.Verify != nil {
		for _, p := range r.Verify.Problems {
			fmt.Fprintf(w, "Allocations: %s\n", p)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "Error: %s\n", e)
	}
	return nil
}

func hasTargets(t Targets) bool { return t != Targets{} }

// role renders a server's part in the run.
func (s ServerResult) role() string {
	role := "follower"
	if s.Leader {
		role = "leader"
	}
	switch {
	case s.Killed:
		role += ", killed"
	case s.Elected:
		role += ", then leader"
	}
	return role
}

// String renders the kill in one line.
func (k *KillResult) String() string {
	if k.AtSeconds == 0 {
		return fmt.Sprintf("asked for after %s, none: %s", fmtSeconds(k.AfterSeconds), orDash(k.Error))
	}
	out := fmt.Sprintf("%s (pid %d, %s) SIGKILLed at %s; ", k.Server, k.PID, orDash(k.RPCAddr), fmtSeconds(k.AtSeconds))
	if k.ElectionSeconds == 0 {
		return out + "no new leader seen: " + orDash(k.Error)
	}
	return out + fmt.Sprintf("new leader %s known %s later", k.NewLeader, fmtSeconds(k.ElectionSeconds))
}

func unresolved(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d not complete at the end", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON renders the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MarkdownHeader is the header of the table MarkdownRow fills.
const MarkdownHeader = "| scenario | nodes | allocs | placed | running | placements/s | write -> eval complete p50 / p95 / p99 | leader CPU s (% of a core) | leader peak RSS | followers CPU s | Raft data | leader kill at / election | jobs converged / duplicate allocs | load avg start / end |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"

// MarkdownRow renders the result as one row under MarkdownHeader.
func (r *Result) MarkdownRow() string {
	leader, followers := "-", "-"
	rss := "-"
	var fcpu []string
	for _, s := range r.Servers {
		switch {
		case s.PID == 0 || s.Error != "":
		case s.Leader:
			leader = fmt.Sprintf("%.2f (%.0f%%)", s.CPUSeconds, s.CPUPercent)
			rss = fmtBytes(s.PeakRSSBytes)
		default:
			fcpu = append(fcpu, fmt.Sprintf("%.2f", s.CPUSeconds))
		}
	}
	if len(fcpu) > 0 {
		followers = strings.Join(fcpu, ", ")
	}
	placed, running, rate := "-", "-", "-"
	allocs := fmtCount(float64(r.Allocs))
	switch r.Kind {
	case KindPlace:
		placed = fmtSeconds(r.PlacedSeconds)
		if r.PlacedSeconds == 0 {
			placed = fmt.Sprintf("not reached (%s)", fmtCount(float64(r.Placed)))
		}
		running = fmtSeconds(r.RunningSeconds)
		if r.RunningSeconds == 0 {
			running = fmt.Sprintf("not reached (%s)", fmtCount(float64(r.Running)))
		}
		rate = fmtCount(r.PlacementsPerSec)
	case KindChurn:
		allocs = fmt.Sprintf("%s writes (%.1f/s)", fmtCount(float64(r.Ops)), r.OpsPerSec)
	case KindIdle:
		allocs = fmt.Sprintf("idle %s, %d down", fmtSeconds(r.WindowSeconds), r.NodesDown)
	case KindJoinStorm:
		placed, running = fmtSeconds(r.PlacedSeconds), fmtSeconds(r.RunningSeconds)
		if e := r.Evals; e != nil {
			allocs = fmt.Sprintf("%s (%s evals, %s canceled)", allocs, fmtCount(float64(e.Written)), fmtCount(float64(e.Canceled)))
		}
	}
	lat := "-"
	if r.EvalLatency.Count > 0 {
		lat = fmt.Sprintf("%s / %s / %s", fmtSeconds(r.EvalLatency.P50), fmtSeconds(r.EvalLatency.P95), fmtSeconds(r.EvalLatency.P99))
	}
	kill := "-"
	if k := r.Kill; k != nil {
		switch {
		case k.AtSeconds == 0:
			kill = "no kill"
		case k.ElectionSeconds == 0:
			kill = fmt.Sprintf("%s / no new leader", fmtSeconds(k.AtSeconds))
		default:
			kill = fmt.Sprintf("%s / %s", fmtSeconds(k.AtSeconds), fmtSeconds(k.ElectionSeconds))
		}
	}
	checked := "-"
	if v := r.Verify; v != nil {
		conv := "-"
		if v.Expected > 0 {
			conv = fmt.Sprintf("%s/%s", fmtCount(float64(v.Converged)), fmtCount(float64(v.Expected)))
		}
		checked = fmt.Sprintf("%s / %d", conv, v.Duplicates)
		if v.Duplicates > 0 {
			checked += " **DUPLICATES**"
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |",
		r.Scenario, fmtCount(float64(r.Nodes)), allocs, placed, running, rate, lat, leader, rss, followers,
		fmtBytes(r.RaftBytes), kill, checked, orDash(r.LoadStart), orDash(r.LoadEnd))
}

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Repeated runs. The same binary varies by 10-15% from one c1m-small run
// to the next on a 2-core machine, so a change is judged on several runs,
// of the old and the new binary alternately (scripts/bench-repeat.sh). A
// summary gives, per label (one per binary), each figure's minimum,
// median and maximum over the runs.

// Labeled is one run's result and the label it is summarized under.
type Labeled struct {
	Label  string
	Result *Result
}

// Spread is a figure's minimum, median and maximum over N runs.
type Spread struct {
	N                int
	Min, Median, Max float64
}

func spreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{N: len(v), Min: v[0], Median: med, Max: v[len(v)-1]}
}

// SummaryRow is one label's runs of one scenario.
type SummaryRow struct {
	Label, Scenario string
	Runs            int
	// Placed and Running are seconds (runs that reached them); EvalP99 the
	// write -> eval complete p99 in seconds; CPU the CPU seconds of every
	// measured server and of the bench process together; LeaderRSS the
	// leader's peak RSS in bytes; Misses the runs that missed a target.
	Placed, Running, EvalP99, CPU, LeaderRSS Spread
	// Evals is the evaluations written for the jobs (join storms).
	Evals Spread
	// Calibration is the reference loop's milliseconds before each run
	// (the machine's speed then; runs without it are left out).
	Calibration Spread
	Misses      int
}

// SummarizeRuns groups runs by label and scenario, in the order each first
// appears.
func SummarizeRuns(runs []Labeled) []SummaryRow {
	type key struct{ label, scenario string }
	type acc struct {
		row                                        SummaryRow
		placed, running, p99, cpu, rss, cal, evals []float64
	}
	var order []key
	groups := map[key]*acc{}
	for _, r := range runs {
		k := key{r.Label, r.Result.Scenario}
		a := groups[k]
		if a == nil {
			a = &acc{row: SummaryRow{Label: r.Label, Scenario: r.Result.Scenario}}
			groups[k] = a
			order = append(order, k)
		}
		res := r.Result
		a.row.Runs++
		if len(res.Misses) > 0 {
			a.row.Misses++
		}
		if res.PlacedSeconds > 0 {
			a.placed = append(a.placed, res.PlacedSeconds)
		}
		if res.RunningSeconds > 0 {
			a.running = append(a.running, res.RunningSeconds)
		}
		if res.EvalLatency.Count > 0 {
			a.p99 = append(a.p99, res.EvalLatency.P99)
		}
		cpu := res.Self.CPUSeconds
		for _, s := range res.Servers {
			cpu += s.CPUSeconds
		}
		if cpu > 0 {
			a.cpu = append(a.cpu, cpu)
		}
		if l, ok := res.Leader(); ok && l.PeakRSSBytes > 0 {
			a.rss = append(a.rss, float64(l.PeakRSSBytes))
		}
		if res.CalibrationMS > 0 {
			a.cal = append(a.cal, res.CalibrationMS)
		}
		if res.Evals != nil {
			a.evals = append(a.evals, float64(res.Evals.Written))
		}
	}
	out := make([]SummaryRow, 0, len(order))
	for _, k := range order {
		a := groups[k]
		a.row.Placed, a.row.Running, a.row.EvalP99 = spreadOf(a.placed), spreadOf(a.running), spreadOf(a.p99)
		a.row.CPU, a.row.LeaderRSS, a.row.Calibration = spreadOf(a.cpu), spreadOf(a.rss), spreadOf(a.cal)
		a.row.Evals = spreadOf(a.evals)
		out = append(out, a.row)
	}
	return out
}

// WriteSummary prints rows as a table: each figure as "median (min-max)".
func WriteSummary(w io.Writer, rows []SummaryRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "label\tscenario\truns\tplaced\trunning\teval p99\tevals written\tCPU s (all)\tleader peak RSS\treference loop\tmissed a target")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Label, r.Scenario, r.Runs,
			fmtSpread(r.Placed, fmtSeconds), fmtSpread(r.Running, fmtSeconds), fmtSpread(r.EvalP99, fmtSeconds),
			fmtSpread(r.Evals, fmtCount),
			fmtSpread(r.CPU, func(v float64) string { return fmt.Sprintf("%.1f", v) }),
			fmtSpread(r.LeaderRSS, func(v float64) string { return fmtBytes(int64(v)) }),
			fmtSpread(r.Calibration, func(v float64) string { return fmt.Sprintf("%.1f ms", v) }), r.Misses)
	}
	return tw.Flush()
}

func fmtSpread(s Spread, f func(float64) string) string {
	switch s.N {
	case 0:
		return "-"
	case 1:
		return f(s.Median)
	}
	lo, hi := f(s.Min), f(s.Max)
	// "12.20-14.66 s", not "12.20 s-14.66 s", when both have the unit.
	if i := strings.LastIndexByte(hi, ' '); i > 0 && strings.HasSuffix(lo, hi[i:]) {
		lo = strings.TrimSuffix(lo, hi[i:])
	}
	return fmt.Sprintf("%s (%s-%s)", f(s.Median), lo, hi)
}

// ReadResultFile reads a result written with -json-out.
func ReadResultFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Table reads results (one JSON Result a line, as the chaos command
// appends them) and writes a markdown table of runs per scenario:
// passes, operations, porcupine's verdicts, lost writes, the overlap of
// each sentinel, election, the slowest first acknowledged write through
// a server the fault did not hit, and convergence (min-max).
func Table(r io.Reader, w io.Writer) error {
	type agg struct {
		runs, pass, ops, unknown, lost  int
		lin                             map[string]int
		elected, ack, conv, def, fenced []float64
	}
	by := map[string]*agg{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return err
		}
		if res.Skipped != "" {
			continue
		}
		a := by[res.Scenario]
		if a == nil {
			a = &agg{lin: map[string]int{}}
			by[res.Scenario] = a
		}
		a.runs++
		if res.Pass {
			a.pass++
		}
		a.ops += res.Ops
		a.unknown += res.Unknown
		a.lost += len(res.Lost)
		a.lin[res.Linearizable]++
		if res.ElectedAfter > 0 {
			a.elected = append(a.elected, res.ElectedAfter)
		}
		slowest := -1.0
		for name, d := range res.ServerAckAfter {
			if !slices.Contains(res.Faulted, name) {
				slowest = max(slowest, d)
			}
		}
		if slowest >= 0 {
			a.ack = append(a.ack, slowest)
		}
		a.conv = append(a.conv, res.ConvergedAfter)
		a.def = append(a.def, res.Overlap["sentinel-default"].Seconds)
		a.fenced = append(a.fenced, res.Overlap["sentinel-fenced"].Seconds)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	span := func(v []float64) string {
		if len(v) == 0 {
			return "-"
		}
		sort.Float64s(v)
		if fmt.Sprintf("%.1f", v[0]) == fmt.Sprintf("%.1f", v[len(v)-1]) {
			return fmt.Sprintf("%.1f", v[0])
		}
		return fmt.Sprintf("%.1f-%.1f", v[0], v[len(v)-1])
	}
	fmt.Fprintln(w, "| scenario | runs | passed | operations (unknown) | porcupine | lost writes | default job overlap s | fenced job overlap s | new leader s | slowest first ack through a server not hit s | converged s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	var names []string
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := by[n]
		var lin []string
		for k, v := range a.lin {
			lin = append(lin, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(lin)
		fmt.Fprintf(w, "| %s | %d | %d | %d (%d) | %s | %d | %s | %s | %s | %s | %s |\n", n, a.runs, a.pass, a.ops, a.unknown,
			strings.Join(lin, ", "), a.lost, span(a.def), span(a.fenced), span(a.elected), span(a.ack), span(a.conv))
	}
	return nil
}

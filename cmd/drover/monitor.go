package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// Exit codes of commands that monitor an evaluation (job run, job stop,
// alloc stop), as Nomad's.
const (
	exitOK               = 0
	exitError            = 1
	exitPlacementFailure = 2
)

// maxEvalNotFound bounds how many times a monitor retries an evaluation
// that a server does not know yet.
const maxEvalNotFound = 5

// evalMonitor follows one evaluation (and the ones it chains to) with
// blocking queries, printing what changes: the allocations it creates,
// its status, and at the end why any placement failed.
type evalMonitor struct {
	e       *env
	c       *api.Client
	verbose bool

	// placed lists the allocations the followed evaluations created to
	// run, in the order they were printed (job run follows them).
	placed []*structs.AllocListStub
}

// monitor follows evalID until it is terminal and returns the exit code:
// 0, 1 when the evaluation failed or could not be read, 2 when
// allocations could not be placed.
func (m *evalMonitor) monitor(ctx context.Context, evalID string) int {
	out := m.e.stdout
	fmt.Fprintf(out, "==> Monitoring evaluation %q\n", shortID(evalID, m.verbose))
	var (
		index      uint64
		lastStatus string
		seen       = map[string]bool{}
		notFound   int
	)
	for {
		ev, qm, err := m.c.Eval(ctx, evalID, &api.QueryOptions{WaitIndex: index, WaitTime: m.e.monitorWait})
		if api.IsNotFound(err) && notFound < maxEvalNotFound {
			notFound++
			continue
		}
		if err != nil {
			return errorf(m.e, "reading evaluation %q: %v", evalID, err)
		}
		if lastStatus == "" {
			switch {
			case ev.NodeID != "":
				fmt.Fprintf(out, "    Evaluation triggered by node %q\n", shortID(ev.NodeID, m.verbose))
			default:
				fmt.Fprintf(out, "    Evaluation triggered by job %q\n", ev.JobID)
			}
		}
		allocs, _, err := m.c.EvalAllocations(ctx, evalID, nil)
		if err != nil {
			return errorf(m.e, "reading the evaluation's allocations: %v", err)
		}
		sort.Slice(allocs, func(i, j int) bool {
			if allocs[i].CreateIndex != allocs[j].CreateIndex {
				return allocs[i].CreateIndex < allocs[j].CreateIndex
			}
			return allocs[i].Name < allocs[j].Name
		})
		for _, a := range allocs {
			if seen[a.ID] {
				continue
			}
			seen[a.ID] = true
			verb := "modified"
			if a.EvalID == evalID {
				verb = "created"
				if a.DesiredStatus == structs.AllocDesiredStatusRun {
					m.placed = append(m.placed, a)
				}
			}
			fmt.Fprintf(out, "    Allocation %q %s: node %q, group %q\n",
				shortID(a.ID, m.verbose), verb, shortID(a.NodeID, m.verbose), a.TaskGroup)
		}
		if lastStatus != "" && ev.Status != lastStatus {
			fmt.Fprintf(out, "    Evaluation status changed: %q -> %q\n", lastStatus, ev.Status)
		}
		if !ev.TerminalStatus() {
			if lastStatus != "" && qm.LastIndex == index {
				fmt.Fprintf(out, "    Evaluation %q is still %s; waiting\n", shortID(evalID, m.verbose), ev.Status)
			}
			lastStatus = ev.Status
			index = qm.LastIndex
			continue
		}
		if lastStatus == "" && ev.Status != structs.EvalStatusPending {
			fmt.Fprintf(out, "    Evaluation status changed: %q -> %q\n", structs.EvalStatusPending, ev.Status)
		}
		return m.finish(ctx, ev)
	}
}

// finish prints the outcome of a terminal evaluation and follows its next
// evaluation, if it chains to one.
func (m *evalMonitor) finish(ctx context.Context, ev *structs.Evaluation) int {
	out := m.e.stdout
	id := shortID(ev.ID, m.verbose)
	if len(ev.FailedTGAllocs) == 0 {
		fmt.Fprintf(out, "==> Evaluation %q finished with status %q\n", id, ev.Status)
	} else {
		fmt.Fprintf(out, "==> Evaluation %q finished with status %q but failed to place all allocations:\n", id, ev.Status)
		writeFailedPlacements(out, ev.FailedTGAllocs, "    ")
		if ev.BlockedEval != "" {
			fmt.Fprintf(out, "    Evaluation %q waiting for additional capacity to place remainder\n",
				shortID(ev.BlockedEval, m.verbose))
		}
	}
	if ev.Status == structs.EvalStatusFailed {
		if ev.StatusDescription != "" {
			fmt.Fprintf(m.e.stderr, "Evaluation failed: %s\n", ev.StatusDescription)
		}
		return exitError
	}
	if ev.NextEval != "" && len(ev.FailedTGAllocs) == 0 {
		fmt.Fprintf(out, "==> Monitoring next evaluation %q\n", shortID(ev.NextEval, m.verbose))
		return m.monitor(ctx, ev.NextEval)
	}
	if len(ev.FailedTGAllocs) > 0 {
		return exitPlacementFailure
	}
	return exitOK
}

// writeFailedPlacements writes each group's placement failure, groups in
// name order, every line after indent.
func writeFailedPlacements(w io.Writer, failed map[string]*structs.AllocMetric, indent string) {
	groups := make([]string, 0, len(failed))
	for g := range failed {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		m := failed[g]
		n := m.CoalescedFailures + 1
		noun := "allocation"
		if n > 1 {
			noun += "s"
		}
		fmt.Fprintf(w, "%sTask Group %q (failed to place %d %s):\n", indent, g, n, noun)
		for _, line := range allocMetricLines(m) {
			fmt.Fprintf(w, "%s  * %s\n", indent, line)
		}
	}
}

// allocMetricLines explains a placement failure: why nodes were filtered
// out and which resources ran out, most general first, each list sorted.
func allocMetricLines(m *structs.AllocMetric) []string {
	var lines []string
	if m.NodesEvaluated == 0 {
		lines = append(lines, "No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			lines = append(lines, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, k := range sortedKeys(m.ClassFiltered) {
		lines = append(lines, fmt.Sprintf("Class %q: %d nodes excluded by filter", k, m.ClassFiltered[k]))
	}
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		lines = append(lines, fmt.Sprintf("Constraint %q: %d nodes excluded by filter", k, m.ConstraintFiltered[k]))
	}
	if m.NodesExhausted > 0 {
		lines = append(lines, fmt.Sprintf("Resources exhausted on %d nodes", m.NodesExhausted))
	}
	for _, k := range sortedKeys(m.ClassExhausted) {
		lines = append(lines, fmt.Sprintf("Class %q exhausted on %d nodes", k, m.ClassExhausted[k]))
	}
	for _, k := range sortedKeys(m.DimensionExhausted) {
		lines = append(lines, fmt.Sprintf("Dimension %q exhausted on %d nodes", k, m.DimensionExhausted[k]))
	}
	if len(m.QuotaExhausted) > 0 {
		lines = append(lines, "Quota exhausted: "+strings.Join(m.QuotaExhausted, ", "))
	}
	return lines
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

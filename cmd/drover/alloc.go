package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func allocCommands() []*command {
	return []*command{
		{name: "alloc status", synopsis: "Show an allocation and its tasks", run: runAllocStatus},
		{name: "alloc stop", synopsis: "Stop an allocation (its job replaces it)", run: runAllocStop},
		{name: "alloc logs", synopsis: "Print a task's stdout or stderr", run: runAllocLogs},
	}
}

// resolveAlloc finds an allocation by ID or unique prefix (at least two
// characters, as Nomad requires).
func resolveAlloc(e *env, c *api.Client, id string, verbose bool) (*structs.AllocListStub, int, bool) {
	if len(id) < 2 {
		return nil, usagef(e, "an allocation ID or prefix needs at least two characters"), false
	}
	return resolve(e, "allocation", id,
		func(prefix string) ([]*structs.AllocListStub, error) {
			allocs, _, err := c.Allocations(context.Background(), &api.QueryOptions{Prefix: prefix, Namespace: "*"})
			return allocs, err
		},
		func(a *structs.AllocListStub) string { return a.ID },
		func(allocs []*structs.AllocListStub) { allocTable(e, e.stderr, allocs, verbose, true) })
}

func runAllocStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "alloc status", "[options] <alloc>",
		"Show an allocation (an ID or a unique prefix): where it runs, its status and its tasks' events.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs, all task events and the placement metrics (the best nodes' scores)")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	stub, code, ok := resolveAlloc(e, c, fs.Arg(0), verbose)
	if !ok {
		return code
	}
	alloc, _, err := c.Allocation(context.Background(), stub.ID, nil)
	if err != nil {
		return errorf(e, "querying allocation: %v", err)
	}
	if asJSON {
		return printJSON(e, alloc)
	}
	var checks map[string]*structs.CheckQueryResult
	if alloc.Job != nil {
		if tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup); tg != nil && tg.HasServices() {
			// As in Nomad, the section is left out when the client
			// cannot be asked.
			checks, _ = c.AllocChecks(context.Background(), alloc.ID, nil)
		}
	}
	var stats *driver.AllocResourceUsage
	if alloc.ClientStatus == structs.AllocClientStatusRunning {
		// As in Nomad, usage is left out when the client cannot be asked.
		stats, _ = c.AllocStats(context.Background(), alloc.ID, nil)
	}
	e.printAlloc(alloc, checks, stats, verbose)
	return exitOK
}

// printAllocChecks prints Nomad's "Nomad Service Checks" table, sorted.
func printAllocChecks(out io.Writer, checks map[string]*structs.CheckQueryResult) {
	if len(checks) == 0 {
		return
	}
	rows := make([][]string, 0, len(checks))
	for _, r := range checks {
		task := "(group)"
		if r.Task != "" {
			task = r.Task
		}
		rows = append(rows, []string{r.Service, task, r.Check, r.Mode, r.Status})
	}
	sort.Slice(rows, func(i, j int) bool { return strings.Join(rows[i], "|") < strings.Join(rows[j], "|") })
	fmt.Fprintln(out, "Nomad Service Checks:")
	t := newTable(out)
	t.row("Service", "Task", "Name", "Mode", "Status")
	for _, r := range rows {
		t.row(r...)
	}
	t.flush()
}

func (e *env) printAlloc(a *structs.Allocation, checks map[string]*structs.CheckQueryResult, stats *driver.AllocResourceUsage, verbose bool) {
	out := e.stdout
	pairs := []string{
		"ID", shortID(a.ID, verbose),
		"Eval ID", shortID(a.EvalID, verbose),
		"Name", a.Name,
		"Node ID", shortID(a.NodeID, verbose),
		"Node Name", a.NodeName,
		"Job ID", a.JobID,
		"Job Version", strconv.FormatUint(a.JobVersion, 10),
		"Client Status", a.ClientStatus,
		"Client Description", orNone(a.ClientDescription),
		"Desired Status", a.DesiredStatus,
		"Desired Description", orNone(a.DesiredDescription),
		"Created", e.agoUnixNano(a.CreateTime),
		"Modified", e.agoUnixNano(a.ModifyTime),
	}
	if a.PreviousAllocation != "" {
		pairs = append(pairs, "Replaces", shortID(a.PreviousAllocation, verbose))
	}
	if a.NextAllocation != "" {
		pairs = append(pairs, "Replaced By", shortID(a.NextAllocation, verbose))
	}
	if m := a.Metrics; verbose && m != nil {
		pairs = append(pairs,
			"Evaluated Nodes", strconv.Itoa(m.NodesEvaluated),
			"Filtered Nodes", strconv.Itoa(m.NodesFiltered),
			"Exhausted Nodes", strconv.Itoa(m.NodesExhausted),
			"Allocation Time", m.AllocationTime.String(),
			"Failures", strconv.Itoa(m.CoalescedFailures),
		)
	}
	kv(out, pairs...)
	printAllocAddresses(out, a)
	printAllocChecks(out, checks)

	var tg *structs.TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	// Read from JSON, so encoded by NewTaskStates: it decodes.
	states := a.TaskStates.MustMap()
	var names []string
	if tg != nil {
		for _, t := range tg.Tasks {
			names = append(names, t.Name)
		}
	}
	for name := range states {
		if tg == nil || !hasTask(tg, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		state := states[name]
		st := structs.TaskStatePending
		if state != nil {
			st = state.State
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "Task %q is %q\n", name, st)
		if res := a.AllocatedResources; res != nil && res.Tasks[name] != nil {
			tr := res.Tasks[name]
			fmt.Fprintln(out, "Task Resources:")
			t := newTable(out)
			t.row("CPU", "Memory")
			t.row(taskUsage(tr, stats, name))
			t.flush()
		}
		if state == nil {
			continue
		}
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Task Events:")
		kv(out,
			"Started At", e.formatTime(state.StartedAt),
			"Finished At", e.formatTime(state.FinishedAt),
			"Total Restarts", strconv.FormatUint(state.Restarts, 10),
			"Last Restart", e.formatTime(state.LastRestart),
		)
		if len(state.Events) == 0 {
			continue
		}
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Recent Events:")
		t := newTable(out)
		t.row("Time", "Type", "Description")
		events := append([]*structs.TaskEvent(nil), state.Events...)
		sort.SliceStable(events, func(i, j int) bool { return events[i].Time > events[j].Time })
		if len(events) > 10 && !verbose {
			events = events[:10]
		}
		for _, ev := range events {
			t.row(e.formatTime(time.Unix(0, ev.Time)), ev.Type, taskEventText(ev))
		}
		t.flush()
	}
	if verbose && a.Metrics != nil {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Placement Metrics")
		printPlacementMetrics(out, a.Metrics, "  ")
	}
}

// printPlacementMetrics writes what filtered or exhausted nodes, then, as
// Nomad's alloc status -verbose does, the scores of the best nodes: one
// column per score name (sorted), then the final score.
func printPlacementMetrics(out io.Writer, m *structs.AllocMetric, indent string) {
	for _, line := range allocMetricLines(m) {
		if line == "No nodes were eligible for evaluation" && len(m.ScoreMetaData) > 0 {
			continue
		}
		fmt.Fprintf(out, "%s* %s\n", indent, line)
	}
	if len(m.ScoreMetaData) == 0 {
		return
	}
	names := sortedKeys(m.ScoreMetaData[0].Scores)
	t := newTable(out)
	t.row(append(append([]string{indent + "Node"}, names...), "final score")...)
	for _, sm := range m.ScoreMetaData {
		cells := []string{indent + sm.NodeID}
		for _, n := range names {
			cells = append(cells, strconv.FormatFloat(sm.Scores[n], 'g', 3, 64))
		}
		t.row(append(cells, strconv.FormatFloat(sm.NormScore, 'g', 3, 64))...)
	}
	t.flush()
}

func hasTask(tg *structs.TaskGroup, name string) bool {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return true
		}
	}
	return false
}

// taskEventText is the description of a task event.
func taskEventText(ev *structs.TaskEvent) string {
	switch {
	case ev.DisplayMessage != "":
		return ev.DisplayMessage
	case ev.Message != "":
		return ev.Message
	case ev.DriverError != "":
		return ev.DriverError
	case ev.DownloadError != "":
		return ev.DownloadError
	case ev.Type == structs.TaskTerminated:
		return fmt.Sprintf("Exit Code: %d", ev.ExitCode)
	case ev.KillReason != "":
		return ev.KillReason
	case ev.RestartReason != "":
		return ev.RestartReason
	}
	return ""
}

func runAllocStop(e *env, args []string) int {
	var af apiFlags
	var detach, verbose bool
	fs := newFlagSet(e, "alloc stop", "[options] <alloc>",
		"Stop an allocation; the scheduler replaces it as its job says. Monitors the evaluation unless -detach.")
	af.register(fs, e)
	fs.BoolVar(&detach, "detach", false, "return once the stop is registered, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	stub, code, ok := resolveAlloc(e, c, fs.Arg(0), verbose)
	if !ok {
		return code
	}
	ctx := context.Background()
	resp, _, err := c.StopAllocation(ctx, stub.ID, nil)
	if err != nil {
		return errorf(e, "stopping allocation: %v", err)
	}
	if detach || resp.EvalID == "" {
		fmt.Fprintln(e.stdout, resp.EvalID)
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}

// printAllocAddresses prints the allocation's group ports as Nomad's
// `alloc status` does: label (starred), whether the port was dynamic, and
// host address:port, with "-> to" when the port maps to another inside.
// Nothing is printed for an allocation without ports.
func printAllocAddresses(out io.Writer, a *structs.Allocation) {
	if a.AllocatedResources == nil || len(a.AllocatedResources.Shared.Ports) == 0 {
		return
	}
	static := map[string]bool{}
	for _, n := range a.AllocatedResources.Shared.Networks {
		for _, p := range n.ReservedPorts {
			static[p.Label] = true
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Allocation Addresses:")
	t := newTable(out)
	t.row("Label", "Dynamic", "Address")
	for _, p := range a.AllocatedResources.Shared.Ports {
		dynamic := "yes"
		if static[p.Label] {
			dynamic = "no"
		}
		addr := net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value))
		if p.To > 0 && p.To != p.Value {
			addr += " -> " + strconv.Itoa(p.To)
		}
		t.row("*"+p.Label, dynamic, addr)
	}
	t.flush()
}

// taskUsage is the task's CPU and memory cells: "used/allocated" as
// Nomad shows them when the client reported the task's usage, the
// allocation alone otherwise.
func taskUsage(tr *structs.AllocatedTaskResources, stats *driver.AllocResourceUsage, task string) (string, string) {
	if stats != nil {
		if u := stats.Tasks[task]; u != nil && u.ResourceUsage != nil && u.ResourceUsage.CpuStats != nil && u.ResourceUsage.MemoryStats != nil {
			ms := u.ResourceUsage.MemoryStats
			used := ms.RSS
			if used == 0 {
				used = ms.Usage
			}
			return fmt.Sprintf("%d/%d MHz", int64(math.Floor(u.ResourceUsage.CpuStats.TotalTicks)), tr.Cpu.CpuShares),
				formatBytes(used) + "/" + formatMiB(tr.Memory.MemoryMB)
		}
	}
	return fmt.Sprintf("%d MHz", tr.Cpu.CpuShares), formatMiB(tr.Memory.MemoryMB)
}

// formatBytes is a byte count in binary units, as Nomad's humanize.
func formatBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
	case b >= 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
	case b >= 1<<10:
		return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatUint(b, 10) + " B"
}

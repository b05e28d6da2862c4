package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func nodeCommands() []*command {
	return []*command{
		{name: "node status", synopsis: "List nodes, or show one node with its allocations", run: runNodeStatus},
		{name: "node drain", synopsis: "Start or stop draining a node's allocations", run: runNodeDrain},
		{name: "node eligibility", synopsis: "Mark a node eligible or ineligible for new work", run: runNodeEligibility},
	}
}

// resolveNode finds a node by ID or unique prefix.
func resolveNode(e *env, c *api.Client, id string, verbose bool) (*structs.NodeListStub, int, bool) {
	return resolve(e, "node", id,
		func(prefix string) ([]*structs.NodeListStub, error) {
			nodes, _, err := c.Nodes(context.Background(), &api.QueryOptions{Prefix: prefix})
			return nodes, err
		},
		func(n *structs.NodeListStub) string { return n.ID },
		func(nodes []*structs.NodeListStub) { nodeTable(e.stderr, nodes, verbose) })
}

// selfNodeID returns the node ID of the agent's own client.
func selfNodeID(e *env, c *api.Client) (string, int, bool) {
	self, err := c.AgentSelf(context.Background())
	if err != nil {
		return "", errorf(e, "querying agent info: %v", err), false
	}
	id := self.Stats["client"]["node_id"]
	if id == "" {
		return "", usagef(e, "-self: the agent at -address is not running a client"), false
	}
	return id, exitOK, true
}

func runNodeStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose, self bool
	fs := newFlagSet(e, "node status", "[options] [node]",
		"Without a node, list nodes. With one (an ID or a unique prefix), or -self, show it with its allocations.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.BoolVar(&self, "self", false, "show the node of the agent at -address")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	c := af.client()
	ctx := context.Background()
	var id string
	switch {
	case self && fs.NArg() > 0:
		return usagef(e, "give a node or -self, not both")
	case self:
		var code int
		var ok bool
		if id, code, ok = selfNodeID(e, c); !ok {
			return code
		}
	case fs.NArg() == 0:
		nodes, _, err := c.Nodes(ctx, nil)
		if err != nil {
			return errorf(e, "querying nodes: %v", err)
		}
		if asJSON {
			return printJSON(e, nodes)
		}
		if len(nodes) == 0 {
			fmt.Fprintln(e.stdout, "No nodes registered")
			return exitOK
		}
		nodeTable(e.stdout, nodes, verbose)
		return exitOK
	default:
		stub, code, ok := resolveNode(e, c, fs.Arg(0), verbose)
		if !ok {
			return code
		}
		id = stub.ID
	}
	node, _, err := c.Node(ctx, id, nil)
	if err != nil {
		return errorf(e, "querying node %q: %v", id, err)
	}
	allocs, _, err := c.NodeAllocations(ctx, id, nil)
	if err != nil {
		return errorf(e, "querying node allocations: %v", err)
	}
	if asJSON {
		return printJSON(e, map[string]any{"Node": node, "Allocations": allocs})
	}
	e.printNode(node, allocs, verbose)
	return exitOK
}

func nodeTable(w io.Writer, nodes []*structs.NodeListStub, verbose bool) {
	t := newTable(w)
	t.row("ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status")
	for _, n := range nodes {
		t.row(shortID(n.ID, verbose), orDefault(n.NodePool, "default"), n.Datacenter, n.Name, orNone(n.NodeClass),
			fmt.Sprint(n.Drain), n.SchedulingEligibility, n.Status)
	}
	t.flush()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (e *env) printNode(n *structs.Node, allocs []*structs.Allocation, verbose bool) {
	out := e.stdout
	var drivers []string
	for name, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	sort.Strings(drivers)
	drain := fmt.Sprint(n.Drain)
	if ds := n.DrainStrategy; ds != nil {
		switch {
		case ds.Deadline < 0:
			drain = "true (force)"
		case !ds.ForceDeadline.IsZero():
			drain = "true (deadline " + e.formatTime(ds.ForceDeadline) + ")"
		case ds.Deadline > 0:
			drain = "true (deadline " + ds.Deadline.String() + ")"
		default:
			drain = "true (no deadline)"
		}
	}
	fields := []string{
		"ID", shortID(n.ID, verbose),
		"Name", n.Name,
		"Node Pool", orDefault(n.NodePool, "default"),
		"Class", orNone(n.NodeClass),
		"DC", n.Datacenter,
		"Drain", drain,
		"Eligibility", n.SchedulingEligibility,
		"Status", n.Status,
	}
	if r := n.Readiness; r != nil && !r.Passed {
		// Drover's readiness gate: why the node is still initializing.
		fields = append(fields, "Readiness", "pending since "+e.formatTime(r.Since)+": "+r.Message)
	}
	fields = append(fields,
		"Address", orNone(n.Attributes["unique.network.ip-address"]),
		"Drivers", orNone(strings.Join(drivers, ",")),
	)
	kv(out, fields...)

	if verbose && len(n.HostVolumes) > 0 {
		// Nomad's -verbose section: each host volume by name.
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Host Volumes")
		t := newTable(out)
		t.row("Name", "ReadOnly", "Source")
		names := make([]string, 0, len(n.HostVolumes))
		for name := range n.HostVolumes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if hv := n.HostVolumes[name]; hv != nil {
				t.row(name, fmt.Sprint(hv.ReadOnly), hv.Path)
			}
		}
		t.flush()
	}

	if len(n.Events) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Node Events")
		t := newTable(out)
		t.row("Time", "Subsystem", "Message")
		events := n.Events
		if len(events) > 10 {
			events = events[len(events)-10:]
		}
		for i := len(events) - 1; i >= 0; i-- {
			ev := events[i]
			t.row(e.formatTime(ev.Timestamp), ev.Subsystem, ev.Message)
		}
		t.flush()
	}

	var used structs.ComparableResources
	for _, a := range allocs {
		if !a.TerminalStatus() {
			used.Add(a.AllocatedResources.Comparable())
		}
	}
	var total structs.ComparableResources
	if r := n.NodeResources; r != nil {
		total = structs.ComparableResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB}
	}
	if r := n.ReservedResources; r != nil {
		total.Subtract(structs.ComparableResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB})
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Allocated Resources")
	t := newTable(out)
	t.row("CPU", "Memory", "Disk")
	t.row(fmt.Sprintf("%d/%d MHz", used.CPU, total.CPU),
		formatMiB(used.MemoryMB)+"/"+formatMiB(total.MemoryMB),
		formatMiB(used.DiskMB)+"/"+formatMiB(total.DiskMB))
	t.flush()

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Allocations")
	if len(allocs) == 0 {
		fmt.Fprintln(out, "No allocations placed")
		return
	}
	stubs := make([]*structs.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		stubs = append(stubs, a.Stub())
	}
	allocTable(e, out, stubs, verbose, false)
}

func runNodeDrain(e *env, args []string) int {
	var af apiFlags
	var enable, disable, self, force, noDeadline, ignoreSystem, keepIneligible, detach, yes, verbose bool
	var deadline time.Duration
	fs := newFlagSet(e, "node drain", "[options] <node>",
		"Start (-enable) or stop (-disable) draining a node: its allocations move to other nodes, at most\n"+
			"each group's migrate max_parallel at a time, and the node takes no new work. Without -detach the\n"+
			"command follows the drain until the node's allocations have stopped.")
	af.register(fs, e)
	fs.BoolVar(&enable, "enable", false, "start draining")
	fs.BoolVar(&disable, "disable", false, "stop draining")
	fs.BoolVar(&self, "self", false, "drain the node of the agent at -address")
	fs.DurationVar(&deadline, "deadline", time.Hour, "after this long, remaining allocations are stopped")
	fs.BoolVar(&force, "force", false, "stop every allocation at once (no deadline to wait for)")
	fs.BoolVar(&noDeadline, "no-deadline", false, "wait for allocations to migrate however long it takes")
	fs.BoolVar(&ignoreSystem, "ignore-system", false, "leave system jobs' allocations running")
	fs.BoolVar(&keepIneligible, "keep-ineligible", false, "with -disable: leave the node ineligible")
	fs.BoolVar(&detach, "detach", false, "return once the drain is set, without following it")
	fs.BoolVar(&yes, "yes", false, "do not ask for confirmation")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	switch {
	case enable == disable:
		return usagef(e, "exactly one of -enable or -disable is required")
	case self == (fs.NArg() == 1):
		return usagef(e, "give a node or -self")
	case force && noDeadline:
		return usagef(e, "-force and -no-deadline are mutually exclusive")
	case disable && (force || noDeadline || ignoreSystem):
		return usagef(e, "-force, -no-deadline and -ignore-system apply to -enable only")
	}
	c := af.client()
	ctx := context.Background()
	var nodeID string
	if self {
		var code int
		var ok bool
		if nodeID, code, ok = selfNodeID(e, c); !ok {
			return code
		}
	} else {
		stub, code, ok := resolveNode(e, c, fs.Arg(0), verbose)
		if !ok {
			return code
		}
		nodeID = stub.ID
	}
	if !yes {
		verb := "enable"
		if disable {
			verb = "disable"
		}
		if !e.confirm(fmt.Sprintf("Are you sure you want to %s drain mode for node %q? [y/N] ", verb, shortID(nodeID, verbose))) {
			fmt.Fprintln(e.stdout, "Canceling drain")
			return exitError
		}
	}
	var spec *structs.DrainSpec
	if enable {
		spec = &structs.DrainSpec{Deadline: deadline, IgnoreSystemJobs: ignoreSystem}
		switch {
		case force:
			spec.Deadline = -1
		case noDeadline:
			spec.Deadline = 0
		}
	}
	if _, _, err := c.DrainNode(ctx, nodeID, spec, disable && !keepIneligible, nil); err != nil {
		return errorf(e, "updating drain: %v", err)
	}
	if disable {
		fmt.Fprintf(e.stdout, "Node %q drain strategy unset\n", shortID(nodeID, verbose))
		return exitOK
	}
	fmt.Fprintf(e.stdout, "Node %q drain strategy set\n", shortID(nodeID, verbose))
	if detach {
		return exitOK
	}
	return e.monitorDrain(ctx, c, nodeID, ignoreSystem, verbose)
}

// monitorDrain follows a node's allocations until every one the drain
// moves has stopped on it, printing each client status change.
func (e *env) monitorDrain(ctx context.Context, c *api.Client, nodeID string, ignoreSystem, verbose bool) int {
	fmt.Fprintln(e.stdout, "Following the drain; Ctrl-C stops following, not the drain")
	status := map[string]string{}
	var index uint64
	for {
		allocs, qm, err := c.NodeAllocations(ctx, nodeID, &api.QueryOptions{WaitIndex: index, WaitTime: e.monitorWait})
		if err != nil {
			return errorf(e, "querying node allocations: %v", err)
		}
		sort.Slice(allocs, func(i, j int) bool { return allocs[i].ID < allocs[j].ID })
		remaining := 0
		for _, a := range allocs {
			if prev, ok := status[a.ID]; ok && prev != a.ClientStatus {
				fmt.Fprintf(e.stdout, "Alloc %q status %s -> %s\n", shortID(a.ID, verbose), prev, a.ClientStatus)
			}
			status[a.ID] = a.ClientStatus
			system := a.Job != nil && structs.IsSystemType(a.Job.Type)
			if !a.ClientTerminalStatus() && !(system && ignoreSystem) {
				remaining++
			}
		}
		if remaining == 0 {
			fmt.Fprintf(e.stdout, "All allocations on node %q have stopped\n", shortID(nodeID, verbose))
			return exitOK
		}
		index = qm.LastIndex
	}
}

// confirm asks a yes/no question on stdin; only "y" or "yes" is yes.
func (e *env) confirm(question string) bool {
	fmt.Fprint(e.stdout, question)
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

func runNodeEligibility(e *env, args []string) int {
	var af apiFlags
	var enable, disable, self, verbose bool
	fs := newFlagSet(e, "node eligibility", "[options] <node>",
		"Mark a node eligible (-enable) or ineligible (-disable) for new allocations; running ones stay.")
	af.register(fs, e)
	fs.BoolVar(&enable, "enable", false, "make the node eligible")
	fs.BoolVar(&disable, "disable", false, "make the node ineligible")
	fs.BoolVar(&self, "self", false, "the node of the agent at -address")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	switch {
	case enable == disable:
		return usagef(e, "exactly one of -enable or -disable is required")
	case self == (fs.NArg() == 1):
		return usagef(e, "give a node or -self")
	}
	c := af.client()
	var nodeID string
	if self {
		var code int
		var ok bool
		if nodeID, code, ok = selfNodeID(e, c); !ok {
			return code
		}
	} else {
		stub, code, ok := resolveNode(e, c, fs.Arg(0), verbose)
		if !ok {
			return code
		}
		nodeID = stub.ID
	}
	if _, _, err := c.SetNodeEligibility(context.Background(), nodeID, enable, nil); err != nil {
		return errorf(e, "updating scheduling eligibility: %v", err)
	}
	what := "eligible"
	if disable {
		what = "ineligible"
	}
	fmt.Fprintf(e.stdout, "Node %q scheduling eligibility set: %s for scheduling\n", shortID(nodeID, verbose), what)
	return exitOK
}

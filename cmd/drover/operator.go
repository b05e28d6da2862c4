package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func operatorCommands() []*command {
	return []*command{
		{name: "operator raft list-peers", synopsis: "List the Raft peers and their state", run: runRaftListPeers},
		{name: "operator raft remove-peer", synopsis: "Remove a server from the Raft configuration", run: runRaftRemovePeer},
		{name: "operator raft transfer-leadership", synopsis: "Transfer leadership to another server", run: runRaftTransferLeadership},
		{name: "operator queue", synopsis: "Show the scheduling queue: waiting and blocked work, longest wait, placements", run: runOperatorQueue},
		{name: "operator scheduler get-config", synopsis: "Display the current scheduler configuration", run: runSchedulerGetConfig},
		{name: "operator scheduler set-config", synopsis: "Modify the current scheduler configuration", run: runSchedulerSetConfig},
	}
}

func runRaftListPeers(e *env, args []string) int {
	var af apiFlags
	var stale, asJSON bool
	fs := newFlagSet(e, "operator raft list-peers", "[options]",
		"Show the servers in the Raft configuration, which is the leader and which vote.")
	af.register(fs, e)
	fs.BoolVar(&stale, "stale", false, "let any server answer from its local state")
	fs.BoolVar(&asJSON, "json", false, "print JSON (the configuration as GET /v1/operator/raft/configuration returns it)")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	rc, err := af.client().RaftConfiguration(context.Background(), &api.QueryOptions{AllowStale: stale})
	if err != nil {
		return errorf(e, "retrieving the Raft configuration: %v", err)
	}
	if asJSON {
		return printJSON(e, rc)
	}
	t := newTable(e.stdout)
	t.row("Node", "ID", "Address", "State", "Voter", "RaftProtocol")
	for _, s := range rc.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		node := s.Node
		if node == "" {
			node = "(unknown)"
		}
		t.row(node, s.ID, s.Address, state, strconv.FormatBool(s.Voter), s.RaftProtocol)
	}
	t.flush()
	return 0
}

func runRaftRemovePeer(e *env, args []string) int {
	var af apiFlags
	var addr, id string
	fs := newFlagSet(e, "operator raft remove-peer", "[options]",
		"Remove a server from the Raft configuration, by address or by ID.")
	af.register(fs, e)
	fs.StringVar(&addr, "peer-address", "", "address (host:port) of the peer to remove")
	fs.StringVar(&id, "peer-id", "", "server ID of the peer to remove")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if (addr == "") == (id == "") {
		return errorf(e, "exactly one of -peer-address or -peer-id is required")
	}
	c := af.client()
	var err error
	if addr != "" {
		err = c.RaftRemovePeerByAddress(context.Background(), addr, nil)
	} else {
		err = c.RaftRemovePeerByID(context.Background(), id, nil)
	}
	if err != nil {
		return errorf(e, "removing peer: %v", err)
	}
	target := addr
	if target == "" {
		target = id
	}
	fmt.Fprintf(e.stdout, "Removed peer %s\n", target)
	return 0
}

func runRaftTransferLeadership(e *env, args []string) int {
	var af apiFlags
	var addr, id string
	fs := newFlagSet(e, "operator raft transfer-leadership", "[options]",
		"Transfer Raft leadership from the current leader to the server named by\n"+
			"-peer-address or -peer-id (see operator raft list-peers). Needs a\n"+
			"management token with ACLs.")
	af.register(fs, e)
	fs.StringVar(&addr, "peer-address", "", "Raft address (host:port) of the server to lead")
	fs.StringVar(&id, "peer-id", "", "Raft ID of the server to lead")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if (addr == "") == (id == "") {
		return errorf(e, "exactly one of -peer-address or -peer-id is required")
	}
	c := af.client()
	var out *structs.LeadershipTransferResponse
	var err error
	if addr != "" {
		out, err = c.RaftTransferLeadershipByAddress(context.Background(), addr, nil)
	} else {
		out, err = c.RaftTransferLeadershipByID(context.Background(), id, nil)
	}
	if err != nil {
		return errorf(e, "transferring leadership: %v", err)
	}
	if out.Noop {
		fmt.Fprintf(e.stdout, "Server %s (%s) already leads; nothing was transferred\n", out.To.ID, out.To.Address)
		return 0
	}
	fmt.Fprintf(e.stdout, "Transferred leadership to server %s (%s)\n", out.To.ID, out.To.Address)
	return 0
}

func runSchedulerGetConfig(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "operator scheduler get-config", "[options]",
		"Display the current scheduler configuration. Needs operator:read with ACLs.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON (as GET /v1/operator/scheduler/configuration returns it)")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	resp, err := af.client().SchedulerConfiguration(context.Background(), nil)
	if err != nil {
		return errorf(e, "querying for scheduler configuration: %v", err)
	}
	if asJSON {
		return printJSON(e, resp)
	}
	c := resp.SchedulerConfig
	b := strconv.FormatBool
	kv(e.stdout,
		"Scheduler Algorithm", string(c.SchedulerAlgorithm),
		"Memory Oversubscription", b(c.MemoryOversubscriptionEnabled),
		"Reject Job Registration", b(c.RejectJobRegistration),
		"Pause Eval Broker", b(c.PauseEvalBroker),
		"Preemption System Scheduler", b(c.PreemptionConfig.SystemSchedulerEnabled),
		"Preemption Service Scheduler", b(c.PreemptionConfig.ServiceSchedulerEnabled),
		"Preemption Batch Scheduler", b(c.PreemptionConfig.BatchSchedulerEnabled),
		"Preemption SysBatch Scheduler", b(c.PreemptionConfig.SysBatchSchedulerEnabled),
		"Modify Index", strconv.FormatUint(c.ModifyIndex, 10))
	return 0
}

// runSchedulerSetConfig reads the configuration, changes what the flags
// set and writes it back with check-and-set, as Nomad's command does.
func runSchedulerSetConfig(e *env, args []string) int {
	var af apiFlags
	var checkIndex, algorithm string
	var memOver, reject, pause, preBatch, preService, preSysBatch, preSystem boolFlag
	fs := newFlagSet(e, "operator scheduler set-config", "[options]",
		"Modify the current scheduler configuration. Needs operator:write with ACLs.")
	af.register(fs, e)
	fs.StringVar(&checkIndex, "check-index", "", "update only if the configuration's modify index is this one")
	fs.StringVar(&algorithm, "scheduler-algorithm", "", `"binpack" (fill nodes) or "spread" (prefer empty nodes)`)
	fs.Var(&memOver, "memory-oversubscription", "memory oversubscription (Drover refuses true)")
	fs.Var(&reject, "reject-job-registration", "reject job registrations (Drover refuses true)")
	fs.Var(&pause, "pause-eval-broker", "pause the evaluation broker (Drover refuses true)")
	fs.Var(&preBatch, "preempt-batch-scheduler", "whether batch jobs may preempt")
	fs.Var(&preService, "preempt-service-scheduler", "whether service jobs may preempt")
	fs.Var(&preSysBatch, "preempt-sysbatch-scheduler", "whether sysbatch jobs may preempt")
	fs.Var(&preSystem, "preempt-system-scheduler", "whether system jobs may preempt")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	var want uint64
	if checkIndex != "" {
		v, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			return errorf(e, "parsing check-index value %q: %v", checkIndex, err)
		}
		want = v
	}
	c := af.client()
	resp, err := c.SchedulerConfiguration(context.Background(), nil)
	if err != nil {
		return errorf(e, "querying for scheduler configuration: %v", err)
	}
	conf := *resp.SchedulerConfig
	if want > 0 && conf.ModifyIndex != want {
		return errorf(e, "performing check index set: check-index %d does not match the current index %d", want, conf.ModifyIndex)
	}
	if algorithm != "" {
		conf.SchedulerAlgorithm = structs.SchedulerAlgorithm(algorithm)
	}
	for _, f := range []struct {
		flag *boolFlag
		dst  *bool
	}{{&memOver, &conf.MemoryOversubscriptionEnabled}, {&reject, &conf.RejectJobRegistration}, {&pause, &conf.PauseEvalBroker},
		{&preBatch, &conf.PreemptionConfig.BatchSchedulerEnabled}, {&preService, &conf.PreemptionConfig.ServiceSchedulerEnabled},
		{&preSysBatch, &conf.PreemptionConfig.SysBatchSchedulerEnabled}, {&preSystem, &conf.PreemptionConfig.SystemSchedulerEnabled}} {
		if f.flag.set {
			*f.dst = f.flag.value
		}
	}
	out, err := c.SchedulerCASConfiguration(context.Background(), &conf, nil)
	if err != nil {
		return errorf(e, "setting scheduler configuration: %v", err)
	}
	if !out.Updated {
		fmt.Fprintln(e.stdout, "Scheduler configuration could not be atomically updated, please try again")
		return 1
	}
	fmt.Fprintln(e.stdout, "Scheduler configuration updated!")
	return 0
}

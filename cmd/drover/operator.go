package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/drover-project/drover/api"
)

func operatorCommands() []*command {
	return []*command{
		{name: "operator raft list-peers", synopsis: "List the Raft peers and their state", run: runRaftListPeers},
		{name: "operator raft remove-peer", synopsis: "Remove a server from the Raft configuration", run: runRaftRemovePeer},
		{name: "operator queue", synopsis: "Show the scheduling queue: waiting and blocked work, longest wait, placements", run: runOperatorQueue},
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

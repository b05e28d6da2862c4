package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/drover-project/drover/structs"
)

func serverCommands() []*command {
	return []*command{{name: "server members", synopsis: "List the servers of the cluster", run: runServerMembers}}
}

func runServerMembers(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "server members", "[options]", "List the servers the agent knows, with their state and the leader.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	resp, err := af.client().AgentMembers(context.Background())
	if err != nil {
		return errorf(e, "querying servers: %v", err)
	}
	members := append([]*structs.AgentMember(nil), resp.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	if asJSON {
		return printJSON(e, members)
	}
	t := newTable(e.stdout)
	t.row("Name", "Address", "Port", "Status", "Leader", "Raft Version", "Build", "Datacenter", "Region")
	for _, m := range members {
		leader := m.Tags["leader"]
		if leader == "" {
			leader = "false"
		}
		t.row(m.Name, m.Addr, fmt.Sprint(m.Port), m.Status, leader, m.Tags["raft_vsn"], m.Tags["build"], m.Tags["dc"], m.Tags["region"])
	}
	t.flush()
	return exitOK
}

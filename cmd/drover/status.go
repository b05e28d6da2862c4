package main

import "context"

func statusCommands() []*command {
	return []*command{{name: "status", synopsis: "Show the cluster leader and Raft peers", run: runStatus}}
}

// statusJSON is `drover status -json`.
type statusJSON struct {
	Leader string
	Peers  []string
}

func runStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "status", "[options]", "Show the cluster's leader and its Raft peers.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	c := af.client()
	ctx := context.Background()
	leader, err := c.Leader(ctx)
	if err != nil {
		return errorf(e, "querying leader: %v", err)
	}
	peers, err := c.Peers(ctx)
	if err != nil {
		return errorf(e, "querying peers: %v", err)
	}
	if asJSON {
		if peers == nil {
			peers = []string{}
		}
		return printJSON(e, statusJSON{Leader: leader, Peers: peers})
	}
	if leader == "" {
		leader = "(none)"
	}
	t := newTable(e.stdout)
	t.row("Leader", leader)
	if len(peers) == 0 {
		t.row("Peers", "(none)")
	}
	for i, p := range peers {
		label := ""
		if i == 0 {
			label = "Peers"
		}
		t.row(label, p)
	}
	t.flush()
	return 0
}

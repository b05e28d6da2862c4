package client

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestNodeFaultsSentWithUpdates: the node faults the runners report go
// to the servers with the next allocation updates, stamped with the node's
// ID; a send that fails keeps them for the next one.
func TestNodeFaultsSentWithUpdates(t *testing.T) {
	f := newFakeCluster(t, time.Minute)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	sent := func() []*structs.NodeFault {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []*structs.NodeFault
		for _, u := range f.updates {
			out = append(out, u.NodeFaults...)
		}
		return out
	}

	f.setDown("s1:4647", true)
	c.updates.addFault(&structs.NodeFault{Kind: structs.NodeFaultSetup, AllocID: "a1", TaskName: "t"})
	c.updates.add(&structs.Allocation{ID: "a1", ClientStatus: structs.AllocClientStatusFailed})
	c.updates.flush() // fails: the server is down
	if n := len(sent()); n != 0 {
		t.Fatalf("%d faults sent to a server that is down", n)
	}
	f.setDown("s1:4647", false)
	waitFor(t, "the fault sent", 5*time.Second, func() bool { return len(sent()) == 1 })
	got := sent()[0]
	if got.NodeID != c.NodeID() || got.Kind != structs.NodeFaultSetup || got.AllocID != "a1" {
		t.Fatalf("fault sent %+v", got)
	}
	// A later round carries no copy of it.
	c.updates.add(&structs.Allocation{ID: "a2", ClientStatus: structs.AllocClientStatusRunning})
	waitFor(t, "the next round", 5*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		last := f.updates[len(f.updates)-1]
		return len(last.Alloc) == 1 && last.Alloc[0].ID == "a2"
	})
	if n := len(sent()); n != 1 {
		t.Fatalf("the fault was sent %d times", n)
	}
}

package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestLaggingServerAnswerKeepsAllocations: a stale answer below the
// client's index (a follower that timed out before catching up, missing
// the allocation) must not remove a running allocation; the client asks
// the leader, whose answer still lists it.
func TestLaggingServerAnswerKeepsAllocations(t *testing.T) {
	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	a := mockAlloc(c.NodeID(), structs.JobTypeService, map[string]any{"run_for": "1h"})
	f.upsertAlloc(a)
	waitFor(t, "running", 5*time.Second, func() bool { return f.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning })

	f.mu.Lock()
	consistent := f.consistentWatches
	f.lagging = &structs.NodeClientAllocsResponse{Allocs: structs.AllocIndexes{}, QueryMeta: structs.QueryMeta{Index: 1}}
	f.bumpLocked() // wake the waiting query
	f.mu.Unlock()
	waitFor(t, "a consistent watch", 5*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.lagging == nil && f.consistentWatches > consistent
	})
	// The confirmed answer has been acted on once the next stale query
	// waits; give the client a moment to (wrongly) remove the runner.
	time.Sleep(100 * time.Millisecond)
	if c.runner(a.ID) == nil {
		t.Fatal("a lagging server's answer removed the allocation")
	}
	if _, err := os.Stat(filepath.Join(c.allocRoot, a.ID)); err != nil {
		t.Fatalf("alloc dir: %v", err)
	}
	if st := f.alloc(a.ID).ClientStatus; st != structs.AllocClientStatusRunning {
		t.Fatalf("client status %s, want running", st)
	}
}

package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestWatchIndex walks the watch's index through the answers it can get:
// the first query and any confirmation go to the leader unblocked; an
// answer below the index is confirmed before it is acted on, and the
// leader's answer is taken as is.
func TestWatchIndex(t *testing.T) {
	const wait = time.Minute
	type step struct {
		answer     uint64
		wantAccept bool
		// options of the query after this step
		wantMin   uint64
		wantStale bool
	}
	steps := []struct {
		name string
		step
	}{
		{"first answer", step{answer: 10, wantAccept: true, wantMin: 10, wantStale: true}},
		{"timeout at the same index", step{answer: 10, wantAccept: true, wantMin: 10, wantStale: true}},
		{"a change", step{answer: 12, wantAccept: true, wantMin: 12, wantStale: true}},
		{"a lower answer is confirmed", step{answer: 8, wantAccept: false, wantMin: 0, wantStale: false}},
		{"the leader's lower answer is taken", step{answer: 8, wantAccept: true, wantMin: 8, wantStale: true}},
		{"another lower answer", step{answer: 5, wantAccept: false, wantMin: 0, wantStale: false}},
		{"the leader is ahead", step{answer: 15, wantAccept: true, wantMin: 15, wantStale: true}},
	}
	var w watchIndex
	if o := w.options("r", wait); o.MinQueryIndex != 0 || o.AllowStale || o.Region != "r" {
		t.Fatalf("first query options %+v, want a consistent unblocked read", o)
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			accepted := w.accept(s.answer)
			if accepted != s.wantAccept {
				t.Fatalf("accept(%d) = %v, want %v", s.answer, accepted, s.wantAccept)
			}
			if accepted {
				w.done(s.answer)
			}
			o := w.options("r", wait)
			if o.MinQueryIndex != s.wantMin || o.AllowStale != s.wantStale {
				t.Fatalf("next query MinQueryIndex %d stale %v, want %d %v", o.MinQueryIndex, o.AllowStale, s.wantMin, s.wantStale)
			}
			if o.AllowStale && o.MaxQueryTime != wait {
				t.Fatalf("blocking query without MaxQueryTime: %+v", o)
			}
		})
	}
}

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
	f.lagging = &structs.NodeClientAllocsResponse{Allocs: map[string]uint64{}, QueryMeta: structs.QueryMeta{Index: 1}}
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

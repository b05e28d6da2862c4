package blockedevals

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/drover-project/drover/structs"
)

var evalSeq atomic.Int64

// mockBlocked returns a blocked evaluation for job, planned at snapshot
// index snap, with the given class eligibility.
func mockBlocked(job string, snap uint64, elig map[string]bool) *structs.Evaluation {
	n := evalSeq.Add(1)
	return &structs.Evaluation{
		ID:               fmt.Sprintf("eval-%04d", n),
		Namespace:        "default",
		Priority:         50,
		Type:             "service",
		TriggeredBy:      structs.EvalTriggerQueuedAllocs,
		JobID:            job,
		Status:           structs.EvalStatusBlocked,
		ClassEligibility: elig,
		SnapshotIndex:    snap,
		CreateIndex:      uint64(n),
		ModifyIndex:      uint64(n),
	}
}

// recorder is an Enqueuer that records every batch.
type recorder struct {
	mu      sync.Mutex
	batches []map[*structs.Evaluation]string
}

func (r *recorder) EnqueueAll(evals map[*structs.Evaluation]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, evals)
}

// calls returns how many EnqueueAll calls were made.
func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

// released returns how often each eval ID was released, and its token.
func (r *recorder) released() (count map[string]int, tokens map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count, tokens = map[string]int{}, map[string]string{}
	for _, batch := range r.batches {
		for e, tok := range batch {
			count[e.ID]++
			tokens[e.ID] = tok
		}
	}
	return count, tokens
}

// testTracker returns an enabled tracker on a fake clock.
func testTracker(t testing.TB) (*BlockedEvals, *fakeClock, *recorder) {
	t.Helper()
	clock, rec := newFakeClock(), &recorder{}
	cfg := DefaultConfig()
	cfg.Clock, cfg.Enqueuer = clock, rec
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.SetEnabled(true)
	return b, clock, rec
}

// assertReleased checks exactly the given evals were released, once each.
func assertReleased(t *testing.T, rec *recorder, want ...*structs.Evaluation) {
	t.Helper()
	count, _ := rec.released()
	for _, e := range want {
		if count[e.ID] != 1 {
			t.Errorf("%s released %d times, want once", e.ID, count[e.ID])
		}
	}
	if len(count) != len(want) {
		t.Errorf("released %d distinct evals, want %d: %v", len(count), len(want), count)
	}
}

package blockedevals

import (
	"fmt"
	"testing"
)

// BenchmarkCoalescedUnblock: 10,000 blocked evals over 50 classes, then a
// burst of 5,000 node registrations applied in one flush.
func BenchmarkCoalescedUnblock(b *testing.B) {
	const evals, classes, nodes = 10_000, 50, 5_000
	b.ReportAllocs()
	for b.Loop() {
		tr, clock, rec := testTracker(b)
		for i := range evals {
			elig := map[string]bool{fmt.Sprintf("class-%d", i%classes): true}
			tr.Block(mockBlocked(fmt.Sprintf("job-%d", i), 1, elig))
		}
		for n := range nodes {
			tr.Unblock(fmt.Sprintf("class-%d", n%classes), uint64(10+n))
		}
		clock.Advance(DefaultCoalesceWindow)
		if count, _ := rec.released(); len(count) != evals {
			b.Fatalf("released %d, want %d", len(count), evals)
		}
	}
}

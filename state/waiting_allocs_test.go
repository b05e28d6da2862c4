package state

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/structs"
)

// The waiting index holds exactly the allocations placed and not started
// (on a node, desired run, client pending), after any sequence of
// allocation writes, batches, aborts and restores.
func TestWaitingAllocsProperty(t *testing.T) {
	checkRandomAllocWrites(t, func(rt *rapid.T, s *StateStore, when string) {
		allocs, err := s.Allocs(nil)
		ok(rt, err)
		var want, got []string
		for _, a := range allocs {
			if a.NodeID != "" && a.DesiredStatus == structs.AllocDesiredStatusRun &&
				a.ClientStatus == structs.AllocClientStatusPending {
				want = append(want, a.ID)
			}
		}
		ok(rt, s.WaitingAllocs(nil, func(a *structs.Allocation) bool {
			got = append(got, a.ID)
			return true
		}))
		if !slices.Equal(got, want) {
			rt.Fatalf("%s: waiting %v, want %v", when, got, want)
		}
	})
}

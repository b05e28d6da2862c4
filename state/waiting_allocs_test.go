package state

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/structs"
)

// WaitingAllocs lists exactly the allocations placed and not started (on
// a node, desired run, client pending) of the jobs the store holds, after
// any sequence of allocation writes, batches, aborts and restores (a job
// purged and registered again included): the job summaries it starts
// from never miss a job with one.
func TestWaitingAllocsProperty(t *testing.T) {
	checkRandomAllocWrites(t, func(rt *rapid.T, s *StateStore, when string) {
		allocs, err := s.Allocs(nil)
		ok(rt, err)
		var want, got []string
		for _, a := range allocs {
			if _, err := s.JobSummary(nil, a.Namespace, a.JobID); err != nil {
				continue // a purged job's allocations are not listed
			}
			if a.NodeID != "" && a.DesiredStatus == structs.AllocDesiredStatusRun &&
				a.ClientStatus == structs.AllocClientStatusPending {
				want = append(want, a.ID)
			}
		}
		ok(rt, s.WaitingAllocs(nil, func(a *structs.Allocation) bool {
			got = append(got, a.ID)
			return true
		}))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("%s: waiting %v, want %v", when, got, want)
		}
	})
}

package server

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestNormalizePlan: allocations running the plan's job travel without it;
// others keep theirs; the caller's plan is untouched.
func TestNormalizePlan(t *testing.T) {
	job := mock.Job()
	job.Version = 3
	older := job.Copy()
	older.Version = 2
	node := mock.Node()
	same, other, bare := mock.Alloc(job, node), mock.Alloc(older, node), mock.Alloc(job, node)
	bare.Job = nil
	plan := &structs.Plan{Job: job}
	for _, a := range []*structs.Allocation{same, other, bare} {
		plan.AppendAlloc(a)
	}
	plan.AppendStoppedAlloc(mock.Alloc(job, node), "stop", "")

	out := normalizePlan(plan)
	for _, a := range out.NodeAllocation[node.ID] {
		switch a.ID {
		case same.ID:
			if a.Job != nil {
				t.Error("allocation of the plan's job still carries it")
			}
		case other.ID:
			if a.Job != older {
				t.Error("allocation of an older job version lost it")
			}
		}
	}
	if same.Job != job || len(plan.NodeAllocation[node.ID]) != 3 || plan.NodeAllocation[node.ID][0] != same {
		t.Fatal("normalizePlan changed the caller's plan")
	}
	if len(out.NodeUpdate[node.ID]) != 1 || out.Job != job {
		t.Fatalf("normalized plan lost its stops or job: %+v", out)
	}
	if got := normalizePlan(&structs.Plan{Job: job, NodeAllocation: map[string][]*structs.Allocation{node.ID: {bare}}}); got.NodeAllocation[node.ID][0] != bare {
		t.Error("a plan with nothing to strip should be sent as is")
	}
}

// TestCompletePlanResult: a slim result is rebuilt from the plan and the
// rejected nodes.
func TestCompletePlanResult(t *testing.T) {
	job := mock.Job()
	n1, n2 := mock.Node(), mock.Node()
	plan := &structs.Plan{Job: job}
	plan.AppendAlloc(mock.Alloc(job, n1))
	plan.AppendAlloc(mock.Alloc(job, n2))
	plan.AppendStoppedAlloc(mock.Alloc(job, n2), "stop", "")

	tests := []struct {
		name      string
		allAtOnce bool
		rejected  []string
		placed    int
		stopped   int
	}{
		{"all committed", false, nil, 2, 1},
		{"one node refused", false, []string{n2.ID}, 1, 0},
		{"all at once refused", true, []string{n2.ID}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := *plan
			p.AllAtOnce = tc.allAtOnce
			r := &structs.PlanResult{RejectedNodes: tc.rejected, AllocIndex: 7}
			completePlanResult(&p, r)
			_, _, placed := r.FullCommit(&p)
			stopped := 0
			for _, as := range r.NodeUpdate {
				stopped += len(as)
			}
			if placed != tc.placed || stopped != tc.stopped {
				t.Fatalf("placed %d stopped %d, want %d and %d", placed, stopped, tc.placed, tc.stopped)
			}
		})
	}
}

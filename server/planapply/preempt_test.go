package planapply

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestEvaluatePlanPreemptions: evictions free what their victims hold on
// the node; only victims still live are evicted; a plan that evicts too
// little is refused; each job with evicted allocations gets one
// preemption evaluation, and the entry stops the victims with
// DesiredStatus evict.
func TestEvaluatePlanPreemptions(t *testing.T) {
	// Capacity after reserve: 900 MHz, 900 MB.
	v1, v2 := testAlloc("n1", 400, 400), testAlloc("n1", 400, 400)
	s := newStore(t, testNode("n1", 1000, 1000))
	if err := s.UpsertAllocs(100, []*structs.Allocation{v1, v2}); err != nil {
		t.Fatal(err)
	}
	plan := func(victims ...*structs.Allocation) *structs.Plan {
		p := &structs.Plan{Job: testJob}
		a := testAlloc("n1", 700, 700)
		for _, v := range victims {
			p.AppendPreemptedAlloc(v, a.ID)
			a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		}
		p.AppendAlloc(a)
		return p
	}

	res, err := evaluatePlan(snapshot(t, s), nil, plan(v1))
	if err != nil || len(res.RejectedNodes) != 1 {
		t.Fatalf("evicting one of two: %+v %v, want refused", res, err)
	}
	res, err = evaluatePlan(snapshot(t, s), nil, plan(v1, v2))
	if err != nil || len(res.RejectedNodes) != 0 || len(res.NodePreemptions["n1"]) != 2 {
		t.Fatalf("evicting both: %+v %v", res, err)
	}
	evals, err := preemptionEvals(snapshot(t, s), res, time.Unix(10, 0))
	if err != nil || len(evals) != 1 || evals[0].JobID != testJob.ID || evals[0].TriggeredBy != structs.EvalTriggerPreemption {
		t.Fatalf("preemption evals %+v %v", evals, err)
	}
	a := New(Config{})
	req := a.request(plan(v1, v2), res)
	evicted := 0
	for _, st := range req.AllocsStopped {
		if st.DesiredStatus == structs.AllocDesiredStatusEvict && st.PreemptedByAllocation != "" {
			evicted++
		}
	}
	if evicted != 2 {
		t.Fatalf("entry evicts %d allocations, want 2", evicted)
	}

	// v2 stopped meanwhile: it needs no eviction, and its room is free.
	stopped := v2.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	if err := s.UpsertAllocs(101, []*structs.Allocation{stopped}); err != nil {
		t.Fatal(err)
	}
	res, err = evaluatePlan(snapshot(t, s), nil, plan(v1, v2))
	if err != nil || len(res.RejectedNodes) != 0 {
		t.Fatalf("after v2 stopped: %+v %v", res, err)
	}
	if got := res.NodePreemptions["n1"]; len(got) != 1 || got[0].ID != v1.ID {
		t.Fatalf("evictions %+v, want v1 only", got)
	}
}

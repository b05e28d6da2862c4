package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// windowsNode is a node the mock job's constraint (kernel linux) refuses.
func windowsNode() *structs.Node {
	n := mock.Node()
	n.Attributes["kernel.name"] = "windows"
	n.NodeClass = "windows-medium"
	n.ComputeClass()
	return n
}

// TestBlockedEvalUnblocks: a job that fits no node blocks; a new node of a
// class already known not to help leaves it blocked; a node that fits
// releases it and the job is placed.
func TestBlockedEvalUnblocks(t *testing.T) {
	s := schedServer(t, 2)
	st := s.State()
	registerNode(t, s, windowsNode())

	job := smallJob("web", 3)
	submitJob(t, s, job)
	var blocked *structs.Evaluation
	waitFor(t, 10*time.Second, func() string {
		blocked = nil
		var pending int
		for _, e := range jobEvals(t, st, job) {
			switch e.Status {
			case structs.EvalStatusBlocked:
				blocked = e
			case structs.EvalStatusPending:
				pending++
			}
		}
		if blocked == nil || pending > 0 {
			return fmt.Sprintf("no blocked evaluation yet (%d pending)", pending)
		}
		return ""
	})
	if len(liveAllocs(st, job.Namespace, job.ID)) != 0 {
		t.Fatal("job placed on a node its constraint refuses")
	}
	if elig, known := blocked.ClassEligibility[windowsNode().Class()]; !known || elig {
		t.Fatalf("blocked eval class eligibility %v, want the windows class known ineligible", blocked.ClassEligibility)
	}

	// Another node of the same (ineligible) class does not release it.
	before := len(jobEvals(t, st, job))
	registerNode(t, s, windowsNode())
	time.Sleep(300 * time.Millisecond) // well past the unblock coalescing window and a scheduling pass
	evals := jobEvals(t, st, job)
	if len(evals) != before {
		t.Fatalf("evaluations went from %d to %d after an unhelpful node registered", before, len(evals))
	}
	if e, err := st.EvalByID(nil, blocked.ID); err != nil || e.Status != structs.EvalStatusBlocked {
		t.Fatalf("blocked eval after an unhelpful node: %+v, %v", e, err)
	}

	// A node that fits releases it.
	registerNode(t, s, mock.Node())
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	e, err := st.EvalByID(nil, blocked.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != structs.EvalStatusComplete {
		t.Fatalf("released eval is %s, want complete", e.Status)
	}
	checkPlacements(t, st)
}

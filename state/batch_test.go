package state

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestBatch(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	eval := mock.EvalFor(job)
	node := mock.Node()

	b := s.Batch()
	must(t, b.UpsertJob(3, job, eval))
	must(t, b.UpsertNode(4, node, nil))
	// Later writes in the batch see earlier ones.
	if _, err := b.JobByID(job.Namespace, job.ID); err != nil {
		t.Fatalf("batch does not see its own job: %v", err)
	}
	if _, err := b.NodeByID(node.ID); err != nil {
		t.Fatalf("batch does not see its own node: %v", err)
	}
	done := eval.Copy()
	done.Status = structs.EvalStatusComplete
	must(t, b.UpsertEvals(5, []*structs.Evaluation{done}))
	// Readers see nothing before Commit.
	if _, err := s.JobByID(nil, job.Namespace, job.ID); err == nil {
		t.Fatal("a write is visible before Commit")
	}
	wantIndex(t, s, TableJobs, 0)
	must(t, b.Commit())
	b.Abort() // after Commit: does nothing

	wantIndex(t, s, TableJobs, 5) // the job's status changed at 5
	wantIndex(t, s, TableJobSummary, 3)
	wantIndex(t, s, TableNodes, 4)
	wantIndex(t, s, TableEvals, 5)
	wantIndex(t, s, TableAllocs, 0)
	stored, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if stored.CreateIndex != 3 || stored.JobModifyIndex != 3 || stored.Status != structs.JobStatusDead {
		t.Fatalf("job after batch: create %d, job modify %d, status %q", stored.CreateIndex, stored.JobModifyIndex, stored.Status)
	}
	e, err := s.EvalByID(nil, eval.ID)
	must(t, err)
	if e.CreateIndex != 3 || e.ModifyIndex != 5 {
		t.Fatalf("eval create %d, modify %d", e.CreateIndex, e.ModifyIndex)
	}

	aborted := s.Batch()
	must(t, aborted.UpsertNode(6, mock.Node(), nil))
	aborted.Abort()
	wantIndex(t, s, TableNodes, 4)
	nodes, err := s.Nodes(nil)
	must(t, err)
	if len(nodes) != 1 {
		t.Fatalf("an aborted batch left %d nodes", len(nodes))
	}
}

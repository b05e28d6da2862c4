package scheduler

import (
	"slices"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// finishOn marks the job's allocation on node with the client status.
func finishOn(t *testing.T, h *Harness, job *structs.Job, node, status string) {
	t.Helper()
	live, _ := jobAllocs(t, h, job)
	for _, a := range live {
		if a.NodeID == node {
			c := a.Copy()
			c.ClientStatus = status
			addAllocs(t, h, c)
			return
		}
	}
	t.Fatalf("no live allocation on %s", node)
}

// placedOn lists the nodes the harness's plans placed allocations on.
func placedOn(h *Harness) []string {
	var out []string
	for _, p := range h.Plans {
		for _, a := range PlanAllocs(p) {
			if a.CreateIndex == 0 || a.ClientStatus == structs.AllocClientStatusPending {
				out = append(out, a.NodeID)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSysBatchScheduler: a sysbatch job runs once on every eligible node,
// including a node that joins later; an allocation that finished, complete
// or failed, is not replaced (no rescheduling); a new version runs again
// everywhere.
func TestSysBatchScheduler(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 4, func(i int, n *structs.Node) {
		if i == 3 {
			n.Attributes["kernel.name"] = "windows" // not a match
		}
	})
	j := mock.SystemJob()
	j.Type = structs.JobTypeSysBatch
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	if got, want := liveNodes(t, h, job), ids(nodes[0], nodes[1], nodes[2]); !slices.Equal(got, want) {
		t.Fatalf("live on %v, want %v", got, want)
	}

	// Two finish, one of them failed: neither is placed again.
	finishOn(t, h, job, nodes[0].ID, structs.AllocClientStatusComplete)
	finishOn(t, h, job, nodes[1].ID, structs.AllocClientStatusFailed)
	h.Plans = nil
	process(t, h, job, structs.EvalTriggerAllocStop)
	if len(h.Plans) != 0 {
		t.Fatalf("finished allocations were placed again: %d plans", len(h.Plans))
	}
	if got, want := liveNodes(t, h, job), ids(nodes[2]); !slices.Equal(got, want) {
		t.Fatalf("live on %v, want %v", got, want)
	}

	// A node that joins while the job is current runs it once.
	added := mock.Node()
	addNodes(t, h, added)
	h.Plans = nil
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	if got := placedOn(h); !slices.Equal(got, []string{added.ID}) {
		t.Fatalf("placed on %v, want only the new node %s", got, added.ID)
	}
	finishOn(t, h, job, added.ID, structs.AllocClientStatusComplete)

	// A new version runs again on the nodes that finished the old one.
	job = updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["V"] = "2" })
	h.Plans = nil
	process(t, h, job, structs.EvalTriggerJobRegister)
	if got, want := liveNodes(t, h, job), ids(nodes[0], nodes[1], nodes[2], added); !slices.Equal(got, want) {
		t.Fatalf("after an update live on %v, want %v", got, want)
	}
	if e := lastEval(t, h); e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("eval %s failed %v", e.Status, e.FailedTGAllocs)
	}
}

// TestSysBatchDefaults: a sysbatch group gets the batch restart policy and
// no rescheduling, as in Nomad, and keeps one allocation per node.
func TestSysBatchDefaults(t *testing.T) {
	if rp := structs.DefaultRestartPolicy(structs.JobTypeSysBatch); rp.Attempts != 3 {
		t.Fatalf("restart policy %+v", rp)
	}
	if rs := structs.DefaultReschedulePolicy(structs.JobTypeSysBatch); rs.Attempts != 0 || rs.Unlimited {
		t.Fatalf("reschedule policy %+v", rs)
	}
	j := mock.SystemJob()
	j.Type = structs.JobTypeSysBatch
	j.TaskGroups[0].Count = 2
	if err := j.Validate(); err == nil {
		t.Fatal("count 2 accepted")
	}
}

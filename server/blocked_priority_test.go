package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// bigJob is a service job of one instance that takes most of a mock
// node's CPU: two never fit on one node.
func bigJob(id string, priority int) *structs.Job {
	job := smallJob(id, 1)
	job.Priority = priority
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 3000, MemoryMB: 64, DiskMB: 10}
	return job
}

// blockedWaiting returns "" once each job has a blocked evaluation and no
// pending one.
func blockedWaiting(t testing.TB, st *state.StateStore, jobs ...*structs.Job) string {
	for _, j := range jobs {
		blocked, pending := 0, 0
		for _, e := range jobEvals(t, st, j) {
			switch e.Status {
			case structs.EvalStatusBlocked:
				blocked++
			case structs.EvalStatusPending:
				pending++
			}
		}
		if blocked == 0 || pending > 0 {
			return fmt.Sprintf("job %s: %d blocked, %d pending evaluations", j.ID, blocked, pending)
		}
	}
	return ""
}

// evalsSettled returns "" once no evaluation in st is pending.
func evalsSettled(st *state.StateStore) string {
	evals, _ := st.Evals(nil)
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending {
			return fmt.Sprintf("eval %s (job %s, %s) is pending", e.ID, e.JobID, e.TriggeredBy)
		}
	}
	return ""
}

// TestClusterUnblocksByPriority: one node that takes one big job, held by
// a filler; a priority-10 and a priority-90 job wait blocked. When the
// filler stops, the freed capacity releases both together, and the
// priority-90 job must get it, every time: the broker hands out a batch of
// released evaluations one priority level at a time. Three servers with
// four workers each, so both evaluations would otherwise be scheduled at
// once and the first plan to reach the applier would win.
func TestClusterUnblocksByPriority(t *testing.T) {
	c := pipelineCluster(t, 3, 4)
	registerNode(t, c.WaitForLeader(t, 10*time.Second), mock.Node())
	// Reads from whichever server leads now; writes retried across a
	// leadership change (both are idempotent).
	st := func() *state.StateStore { return c.WaitForLeader(t, 10*time.Second).State() }
	submit := func(job *structs.Job) {
		retryWrite(t, c, func(s *server.Server) error {
			return s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
		})
	}
	stop := func(id string) {
		retryWrite(t, c, func(s *server.Server) error {
			return s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: id}, &structs.JobDeregisterResponse{})
		})
	}
	live := func(j *structs.Job) int { return len(liveAllocs(st(), j.Namespace, j.ID)) }
	const rounds = 10
	for r := range rounds {
		filler := bigJob(fmt.Sprintf("filler-%d", r), 50)
		submit(filler)
		waitFor(t, 10*time.Second, func() string { return jobsPlaced(st(), []*structs.Job{filler}) })

		// The low one first: it is also first in CreateIndex.
		low, high := bigJob(fmt.Sprintf("low-%d", r), 10), bigJob(fmt.Sprintf("high-%d", r), 90)
		submit(low)
		submit(high)
		waitFor(t, 10*time.Second, func() string { return blockedWaiting(t, st(), low, high) })

		stop(filler.ID)
		waitFor(t, 10*time.Second, func() string {
			if live(high)+live(low) == 0 {
				return "neither blocked job placed yet"
			}
			return evalsSettled(st())
		})
		if got := live(low); got != 0 {
			t.Fatalf("round %d: the priority-10 job took the freed capacity (%d allocations); the priority-90 job has %d",
				r, got, live(high))
		}
		if got := live(high); got != 1 {
			t.Fatalf("round %d: the priority-90 job has %d allocations, want 1", r, got)
		}
		checkPlacements(t, st())

		// Clear the node for the next round: the low job first, so the
		// high one's capacity releases nothing.
		stop(low.ID)
		stop(high.ID)
		waitFor(t, 10*time.Second, func() string {
			for _, j := range []*structs.Job{low, high} {
				if n := live(j); n != 0 {
					return fmt.Sprintf("job %s still has %d allocations", j.ID, n)
				}
			}
			return evalsSettled(st())
		})
	}
}

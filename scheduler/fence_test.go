package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// A lost allocation of a group with stop_after_client_disconnect is
// stopped as lost at once but keeps its place until its client's own stop
// is certain (the fence): no replacement before, one follow-up evaluation
// for then, and the replacement after. A client that reports the
// allocation finished ends the wait early.
func TestFencedLostReplacement(t *testing.T) {
	for _, early := range []bool{false, true} {
		name := "fence passes"
		if early {
			name = "client reports complete"
		}
		t.Run(name, func(t *testing.T) {
			h := testHarness(t)
			now := HarnessEpoch
			h.Now = func() time.Time { return now }
			nodes := mockNodes(t, h, 2)
			j := mock.Job()
			j.TaskGroups[0].Count = 1
			stop := 30 * time.Second
			j.TaskGroups[0].StopAfterClientDisconnect = &stop
			j.TaskGroups[0].Tasks[0].KillTimeout = 2 * time.Second
			job := addJob(t, h, j)
			allocs := running(t, h, job, nodes[:1], 1)
			if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[0].ID, structs.NodeStatusDown, 0, nil, nil); err != nil {
				t.Fatal(err)
			}
			fence, _ := job.TaskGroups[0].StopAfterFence()

			process(t, h, job, structs.EvalTriggerNodeUpdate)
			stopped := stopsIn(h)[allocs[0].ID]
			if stopped == nil || stopped.ClientStatus != structs.AllocClientStatusLost || stopped.FollowupEvalID == "" {
				t.Fatalf("lost stop %+v", stopped)
			}
			if placed := placedIn(h, allocs); len(placed) != 0 {
				t.Fatalf("replacement placed at once: %v", names(placed))
			}
			if len(h.CreateEvals) != 1 || h.CreateEvals[0].ID != stopped.FollowupEvalID ||
				!h.CreateEvals[0].WaitUntil.Equal(now.Add(fence+fenceApplySlack)) {
				t.Fatalf("follow-ups %+v, want one at +%v named by the stop", h.CreateEvals, fence+fenceApplySlack)
			}

			// Before the fence: still held.
			now = now.Add(10 * time.Second)
			if early {
				upd := allocs[0].Copy()
				upd.ClientStatus = structs.AllocClientStatusComplete
				if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{upd}, nil); err != nil {
					t.Fatal(err)
				}
			}
			process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
			placed := placedIn(h, allocs)
			if early {
				if len(placed) != 1 || placed[0].NodeID != nodes[1].ID {
					t.Fatalf("after the client's word: placed %v", names(placed))
				}
				return
			}
			if len(placed) != 0 {
				t.Fatalf("replacement placed before the fence: %v", names(placed))
			}

			// After it: replaced once.
			now = HarnessEpoch.Add(fence + fenceApplySlack)
			process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
			placed = placedIn(h, allocs)
			if len(placed) != 1 || placed[0].NodeID != nodes[1].ID || placed[0].Name != allocs[0].Name {
				t.Fatalf("after the fence: placed %v", names(placed))
			}
			process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
			if placed := placedIn(h, allocs); len(placed) != 1 {
				t.Fatalf("placed again: %v", names(placed))
			}
		})
	}
}

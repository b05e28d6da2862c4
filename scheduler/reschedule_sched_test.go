package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestRescheduleFailedAllocs(t *testing.T) {
	s := time.Second
	now := HarnessEpoch
	constant := &structs.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 5 * s, DelayFunction: structs.DelayFunctionConstant}
	exponential := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * s, MaxDelay: time.Hour, DelayFunction: structs.DelayFunctionExponential}
	fibonacci := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * s, MaxDelay: time.Hour, DelayFunction: structs.DelayFunctionFibonacci}
	capped := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * s, MaxDelay: 3 * time.Minute, DelayFunction: structs.DelayFunctionExponential}
	resets := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * s, MaxDelay: 12 * s, DelayFunction: structs.DelayFunctionExponential}

	cases := []struct {
		name      string
		batch     bool
		policy    *structs.ReschedulePolicy
		failedAgo time.Duration
		prior     []time.Duration // delays of earlier reschedules, the last one 2 minutes ago
		wantNow   bool            // replaced in this eval
		wantDelay time.Duration   // delay recorded (now) or waited for (later)
		wantLater bool            // follow-up eval instead
	}{
		{name: "constant, delay passed", policy: constant, failedAgo: time.Minute, wantNow: true, wantDelay: 5 * s},
		{name: "constant, delay pending", policy: constant, failedAgo: 0, wantLater: true, wantDelay: 5 * s},
		{name: "constant, second attempt", policy: constant, failedAgo: time.Minute, prior: []time.Duration{5 * s}, wantNow: true, wantDelay: 5 * s},
		{name: "constant, attempts exhausted", policy: constant, failedAgo: time.Minute, prior: []time.Duration{5 * s, 5 * s, 5 * s}},
		{name: "exponential, third", policy: exponential, failedAgo: 0, prior: []time.Duration{5 * s, 10 * s}, wantLater: true, wantDelay: 20 * s},
		{name: "exponential, due", policy: exponential, failedAgo: time.Minute, prior: []time.Duration{5 * s, 10 * s}, wantNow: true, wantDelay: 20 * s},
		{name: "exponential, capped", policy: capped, failedAgo: 0, prior: []time.Duration{60 * s, 120 * s}, wantLater: true, wantDelay: 3 * time.Minute},
		{name: "exponential, capped then reset after a long run", policy: resets, failedAgo: 0, prior: []time.Duration{5 * s, 10 * s}, wantLater: true, wantDelay: 5 * s},
		{name: "fibonacci, fourth", policy: fibonacci, failedAgo: 0, prior: []time.Duration{5 * s, 5 * s, 10 * s}, wantLater: true, wantDelay: 15 * s},
		{name: "fibonacci, due", policy: fibonacci, failedAgo: time.Minute, prior: []time.Duration{5 * s, 5 * s}, wantNow: true, wantDelay: 10 * s},
		{name: "no policy", policy: &structs.ReschedulePolicy{}, failedAgo: time.Minute},
		{name: "batch default policy", batch: true, policy: structs.DefaultReschedulePolicy(structs.JobTypeBatch), failedAgo: time.Minute, wantNow: true, wantDelay: 5 * s},
		{name: "batch attempt used", batch: true, policy: structs.DefaultReschedulePolicy(structs.JobTypeBatch), failedAgo: time.Minute, prior: []time.Duration{5 * s}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 3)
			j := mock.Job()
			if tc.batch {
				j = mock.BatchJob()
			}
			j.TaskGroups[0].Count = 2
			j.TaskGroups[0].ReschedulePolicy = tc.policy
			job := addJob(t, h, j)
			allocs := running(t, h, job, nodes, 2)
			failed := allocs[1].Copy()
			failed.ClientStatus = structs.AllocClientStatusFailed
			failed.ModifyTime = now.Add(-tc.failedAgo).UnixNano()
			if len(tc.prior) > 0 {
				failed.RescheduleTracker = trackerWith(now.Add(-2*time.Minute), tc.prior...)
			}
			addAllocs(t, h, failed)

			e := process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
			placed := placedIn(h, allocs)
			switch {
			case tc.wantNow:
				if len(placed) != 1 {
					t.Fatalf("placed %d, want the replacement", len(placed))
				}
				checkReplacement(t, placed[0], failed, nodes, len(tc.prior)+1, tc.wantDelay)
				if st := stopsIn(h)[failed.ID]; st == nil || st.DesiredDescription != descRescheduled {
					t.Fatalf("failed alloc not stopped as rescheduled: %+v", st)
				}
			case tc.wantLater:
				if len(placed) != 0 {
					t.Fatalf("placed %d before the delay passed", len(placed))
				}
				follow := onlyFollowup(t, h, structs.EvalTriggerRetryFailedAlloc)
				if want := now.Add(tc.wantDelay); !follow.WaitUntil.Equal(want) {
					t.Fatalf("follow-up at %s, want %s", follow.WaitUntil, want)
				}
				if follow.PreviousEval != e.ID {
					t.Fatalf("follow-up does not point back at the eval")
				}
				stored, err := h.State.AllocByID(nil, failed.ID)
				if err != nil || stored.FollowupEvalID != follow.ID {
					t.Fatalf("failed alloc FollowupEvalID %q, want %q (%v)", stored.FollowupEvalID, follow.ID, err)
				}
				if stored.Job.JobModifyIndex != job.JobModifyIndex || stored.ClientStatus != structs.AllocClientStatusFailed {
					t.Fatalf("marking the follow-up changed the alloc")
				}
				// Another eval before it is due does not schedule a second follow-up.
				process(t, h, job, structs.EvalTriggerJobRegister)
				onlyFollowup(t, h, structs.EvalTriggerRetryFailedAlloc)
				// The follow-up, run when due, replaces it.
				h.Now = func() time.Time { return follow.WaitUntil }
				if err := h.Process(follow); err != nil {
					t.Fatal(err)
				}
				placed = placedIn(h, allocs)
				if len(placed) != 1 {
					t.Fatalf("follow-up placed %d, want 1", len(placed))
				}
				checkReplacement(t, placed[0], failed, nodes, len(tc.prior)+1, tc.wantDelay)
			default:
				if len(h.Plans) != 0 || len(h.CreateEvals) != 0 {
					t.Fatalf("not reschedulable, yet %d plans and %d evals", len(h.Plans), len(h.CreateEvals))
				}
				if le := lastEval(t, h); le.Status != structs.EvalStatusComplete || le.QueuedAllocations["web"] != 0 {
					t.Fatalf("eval %s queued %v", le.Status, le.QueuedAllocations)
				}
			}
		})
	}
}

// checkReplacement asserts the rescheduled allocation's lineage.
func checkReplacement(t *testing.T, a, prev *structs.Allocation, nodes []*structs.Node, events int, delay time.Duration) {
	t.Helper()
	if a.Name != prev.Name || a.PreviousAllocation != prev.ID {
		t.Fatalf("replacement %s prev %q, want %s prev %s", a.Name, a.PreviousAllocation, prev.Name, prev.ID)
	}
	if a.NodeID == prev.NodeID {
		t.Fatalf("replacement placed on the node it failed on, with %d other nodes free", len(nodes)-1)
	}
	tr := a.RescheduleTracker
	if tr == nil || len(tr.Events) != events {
		t.Fatalf("tracker %+v, want %d events", tr, events)
	}
	last := tr.Events[len(tr.Events)-1]
	if last.PrevAllocID != prev.ID || last.PrevNodeID != prev.NodeID || last.Delay != delay {
		t.Fatalf("last event %+v, want prev %s delay %s", last, prev.ID, delay)
	}
}

// onlyFollowup returns the single created eval with trigger or fails.
func onlyFollowup(t *testing.T, h *Harness, trigger string) *structs.Evaluation {
	t.Helper()
	var found []*structs.Evaluation
	for _, e := range h.CreateEvals {
		if e.TriggeredBy == trigger {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s evals created, want 1", len(found), trigger)
	}
	return found[0]
}

func TestDelayedReschedulesShareFollowups(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2)
	j := mock.Job()
	j.TaskGroups[0].Count = 4
	j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: 10 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	job := addJob(t, h, j)
	allocs := running(t, h, job, nodes, 4)
	// Fail times: now, now-2s (within 5s of each other), now+30s... use
	// -2s, 0 and a third one that failed 8s later than the first.
	var upd []*structs.Allocation
	for i, ago := range []time.Duration{2 * time.Second, 0, -8 * time.Second} {
		c := allocs[i].Copy()
		c.ClientStatus = structs.AllocClientStatusFailed
		c.ModifyTime = HarnessEpoch.Add(-ago).UnixNano()
		upd = append(upd, c)
	}
	addAllocs(t, h, upd...)
	process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
	var follow []*structs.Evaluation
	for _, e := range h.CreateEvals {
		if e.TriggeredBy == structs.EvalTriggerRetryFailedAlloc {
			follow = append(follow, e)
		}
	}
	if len(follow) != 2 {
		t.Fatalf("%d follow-ups, want 2 (two failures within 5s share one)", len(follow))
	}
	if !follow[0].WaitUntil.Equal(HarnessEpoch.Add(8*time.Second)) || !follow[1].WaitUntil.Equal(HarnessEpoch.Add(18*time.Second)) {
		t.Fatalf("follow-ups at %s and %s", follow[0].WaitUntil, follow[1].WaitUntil)
	}
}

func TestFailedRescheduleKeepsTheFailedAlloc(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 1)
	j := mock.Job()
	j.TaskGroups[0].Count = 1
	job := addJob(t, h, j)
	failed := mock.Alloc(job, nodes[0], 0)
	failed.ClientStatus = structs.AllocClientStatusFailed
	failed.ModifyTime = HarnessEpoch.Add(-time.Hour).UnixNano()
	addAllocs(t, h, failed)
	if err := h.State.UpdateNodeEligibility(h.NextIndex(), &structs.NodeUpdateEligibilityRequest{
		NodeID: nodes[0].ID, Eligibility: structs.NodeSchedulingIneligible}); err != nil {
		t.Fatal(err)
	}
	process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
	if len(h.Plans) != 0 {
		t.Fatalf("nothing could be placed, yet a plan stopped %v", PlanStops(h.Plans[0]))
	}
	e := lastEval(t, h)
	if e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" {
		t.Fatalf("queued %v blocked %q", e.QueuedAllocations, e.BlockedEval)
	}
	// When a node is eligible again, the reschedule happens with its lineage.
	if err := h.State.UpdateNodeEligibility(h.NextIndex(), &structs.NodeUpdateEligibilityRequest{
		NodeID: nodes[0].ID, Eligibility: structs.NodeSchedulingEligible}); err != nil {
		t.Fatal(err)
	}
	process(t, h, job, structs.EvalTriggerQueuedAllocs)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 1 || live[0].PreviousAllocation != failed.ID || live[0].RescheduleTracker == nil {
		t.Fatalf("replacement %+v", live)
	}
}

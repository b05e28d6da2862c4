package scheduler

import (
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// rejectNodes refuses, in each plan numbered in which, every node of that
// plan for which pick returns true.
func rejectNodes(which func(attempt int) bool, pick func(i int) bool) func(*structs.Plan, int) []string {
	return func(p *structs.Plan, attempt int) []string {
		if !which(attempt) {
			return nil
		}
		var out []string
		for i, id := range sortedKeys(p.NodeAllocation) {
			if pick(i) {
				out = append(out, id)
			}
		}
		return out
	}
}

func TestPlanRejectionRetries(t *testing.T) {
	always := func(int) bool { return true }
	all := func(int) bool { return true }
	cases := []struct {
		name       string
		batch      bool
		reject     func(*structs.Plan, int) []string
		wantPlans  int
		wantPlaced int
		wantStatus string
		wantFollow bool
	}{
		{
			name:       "first plan wholly rejected, retry succeeds",
			reject:     rejectNodes(func(a int) bool { return a == 0 }, all),
			wantPlans:  2,
			wantPlaced: 8,
			wantStatus: structs.EvalStatusComplete,
		},
		{
			name:       "first plan partly rejected, retry places the rest",
			reject:     rejectNodes(func(a int) bool { return a == 0 }, func(i int) bool { return i%2 == 0 }),
			wantPlans:  2,
			wantPlaced: 8,
			wantStatus: structs.EvalStatusComplete,
		},
		{
			name:       "partial progress every time still finishes",
			reject:     rejectNodes(func(a int) bool { return a < 3 }, func(i int) bool { return i == 0 }),
			wantPlans:  -1, // 2 to 4: each rejected attempt commits all but one node
			wantPlaced: 8,
			wantStatus: structs.EvalStatusComplete,
		},
		{
			name:       "service gives up after 5 plans without progress",
			reject:     rejectNodes(always, all),
			wantPlans:  maxServiceAttempts,
			wantStatus: structs.EvalStatusFailed,
			wantFollow: true,
		},
		{
			name:       "batch gives up after 2 plans without progress",
			batch:      true,
			reject:     rejectNodes(always, all),
			wantPlans:  maxBatchAttempts,
			wantStatus: structs.EvalStatusFailed,
			wantFollow: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			h.Reject = tc.reject
			mockNodes(t, h, 4)
			j := mock.Job()
			if tc.batch {
				j = mock.BatchJob()
			}
			j.TaskGroups[0].Count = 8
			job := addJob(t, h, j)
			e := process(t, h, job, structs.EvalTriggerJobRegister)

			if tc.wantPlans < 0 && len(h.Plans) < 2 || tc.wantPlans >= 0 && len(h.Plans) != tc.wantPlans {
				t.Fatalf("%d plans, want %d", len(h.Plans), tc.wantPlans)
			}
			live, _ := jobAllocs(t, h, job)
			if len(live) != tc.wantPlaced {
				t.Fatalf("%d live allocs, want %d", len(live), tc.wantPlaced)
			}
			if got := indexesOf(live); tc.wantPlaced > 0 && (got[0] != 0 || got[len(got)-1] != tc.wantPlaced-1) {
				t.Fatalf("retries produced duplicate or skipped names: %v", got)
			}
			final := lastEval(t, h)
			if final.Status != tc.wantStatus {
				t.Fatalf("eval %s (%s), want %s", final.Status, final.StatusDescription, tc.wantStatus)
			}
			if tc.wantFollow {
				f := onlyFollowup(t, h, structs.EvalTriggerMaxPlans)
				if final.NextEval != f.ID || f.PreviousEval != e.ID || f.Status != structs.EvalStatusPending || !f.WaitUntil.After(HarnessEpoch) {
					t.Fatalf("follow-up %+v, eval NextEval %q", f, final.NextEval)
				}
			}
		})
	}
}

// failingPlanner fails every plan submission.
type failingPlanner struct {
	Harness
}

func (f *failingPlanner) SubmitPlan(*structs.Plan) (*structs.PlanResult, State, error) {
	return nil, nil, structs.ErrNoLeader
}

func TestPlannerErrorFailsEval(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 2)
	job := addJob(t, h, mock.Job())
	f := &failingPlanner{Harness: Harness{State: h.State, Now: h.Now}}
	snap, _ := h.Snapshot()
	sched := NewServiceScheduler(h.Logger, snap, f, h.Now)
	err := sched.Process(mock.Eval(job))
	if err == nil || structs.CodeOf(err) != structs.ErrCodeNoLeader {
		t.Fatalf("Process error %v, want one matching ErrNoLeader", err)
	}
	if len(f.Evals) != 1 || f.Evals[0].Status != structs.EvalStatusFailed {
		t.Fatalf("eval not marked failed: %+v", f.Evals)
	}
}

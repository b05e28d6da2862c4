package state

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestUpsertEvals(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	e1, e2 := mock.EvalFor(job), mock.Eval()
	must(t, s.UpsertEvals(10, []*structs.Evaluation{e1, e2}))
	stored, err := s.EvalByID(nil, e1.ID)
	must(t, err)
	if stored.CreateIndex != 10 || stored.ModifyIndex != 10 {
		t.Fatalf("new eval indexes %d/%d", stored.CreateIndex, stored.ModifyIndex)
	}

	upd := stored.Copy()
	upd.Status = structs.EvalStatusComplete
	upd.QueuedAllocations = map[string]int{"web": 4, "unknown-group": 1}
	must(t, s.UpsertEvals(12, []*structs.Evaluation{upd}))
	got, err := s.EvalByID(nil, e1.ID)
	must(t, err)
	if got.CreateIndex != 10 || got.ModifyIndex != 12 || got.Status != structs.EvalStatusComplete {
		t.Fatalf("updated eval %+v", got)
	}
	if stored.Status != structs.EvalStatusPending {
		t.Fatal("eval handed out earlier was modified")
	}
	sum, err := s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if sum.Summary["web"].Queued != 4 || sum.ModifyIndex != 12 {
		t.Fatalf("queued not taken from eval: %+v", sum)
	}
	wantIndex(t, s, TableEvals, 12)
	wantIndex(t, s, TableJobSummary, 12)
}

func TestCompleteEvalCancelsBlocked(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	other := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	must(t, s.UpsertJob(6, other, nil))
	blocked := mock.EvalFor(job)
	blocked.Status = structs.EvalStatusBlocked
	otherBlocked := mock.EvalFor(other)
	otherBlocked.Status = structs.EvalStatusBlocked
	must(t, s.UpsertEvals(10, []*structs.Evaluation{blocked, otherBlocked}))

	cases := []struct {
		name       string
		failed     bool
		wantStatus string
	}{
		{"complete with failed placements keeps blocked", true, structs.EvalStatusBlocked},
		{"complete without failures cancels blocked", false, structs.EvalStatusCancelled},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := mock.EvalFor(job)
			done.Status = structs.EvalStatusComplete
			// A blocked eval written in the same call is never cancelled.
			fresh := mock.EvalFor(job)
			fresh.Status = structs.EvalStatusBlocked
			if tc.failed {
				done.FailedTGAllocs = map[string]*structs.AllocMetric{"web": {NodesEvaluated: 1}}
			}
			must(t, s.UpsertEvals(uint64(20+i), []*structs.Evaluation{done, fresh}))
			got, err := s.EvalByID(nil, blocked.ID)
			must(t, err)
			if got.Status != tc.wantStatus {
				t.Fatalf("blocked eval status %q, want %q", got.Status, tc.wantStatus)
			}
			f, err := s.EvalByID(nil, fresh.ID)
			must(t, err)
			if f.Status != structs.EvalStatusBlocked {
				t.Fatalf("eval of the same batch was cancelled")
			}
			o, err := s.EvalByID(nil, otherBlocked.ID)
			must(t, err)
			if o.Status != structs.EvalStatusBlocked {
				t.Fatal("another job's blocked eval was cancelled")
			}
		})
	}
}

func TestDeleteEvalsAndAllocs(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	e := mock.EvalFor(job)
	must(t, s.UpsertEvals(6, []*structs.Evaluation{e}))
	a := mock.Alloc(job, mock.Node())
	must(t, s.UpsertAllocs(7, []*structs.Allocation{a}))

	must(t, s.DeleteEvalsAndAllocs(9, []string{e.ID, "missing"}, []string{a.ID, "missing"}))
	_, err := s.EvalByID(nil, e.ID)
	wantNotFound(t, err)
	_, err = s.AllocByID(nil, a.ID)
	wantNotFound(t, err)
	wantIndex(t, s, TableEvals, 9)
	wantIndex(t, s, TableAllocs, 9)

	// Deleting only missing IDs changes nothing, not even the index.
	must(t, s.DeleteEvalsAndAllocs(11, []string{"missing"}, nil))
	wantIndex(t, s, TableEvals, 9)
}

func TestEvalListing(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	var evals []*structs.Evaluation
	for i, st := range []string{structs.EvalStatusPending, structs.EvalStatusBlocked, structs.EvalStatusPending} {
		e := mock.EvalFor(job)
		e.ID = []string{"aa-1", "aa-2", "bb-1"}[i]
		e.Status = st
		evals = append(evals, e)
	}
	unrelated := mock.Eval()
	unrelated.ID = "cc-1"
	must(t, s.UpsertEvals(10, append(evals, unrelated)))

	ids := func(es []*structs.Evaluation, err error) []string {
		t.Helper()
		must(t, err)
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"all", ids(s.Evals(nil)), []string{"aa-1", "aa-2", "bb-1", "cc-1"}},
		{"prefix", ids(s.EvalsByIDPrefix(nil, "aa")), []string{"aa-1", "aa-2"}},
		{"by job", ids(s.EvalsByJob(nil, job.Namespace, job.ID)), []string{"aa-1", "aa-2", "bb-1"}},
		{"by status", ids(s.EvalsByStatus(nil, structs.EvalStatusPending)), []string{"aa-1", "bb-1", "cc-1"}},
		{"by missing job", ids(s.EvalsByJob(nil, "", "nope")), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.got) != len(tc.want) {
				t.Fatalf("got %v, want %v", tc.got, tc.want)
			}
			for i := range tc.got {
				if tc.got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", tc.got, tc.want)
				}
			}
		})
	}
}

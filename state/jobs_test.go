package state

import (
	"reflect"
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestUpsertJob(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	eval := mock.EvalFor(job)
	must(t, s.UpsertJob(10, job, eval))

	got, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if got.CreateIndex != 10 || got.ModifyIndex != 10 || got.JobModifyIndex != 10 || got.Version != 0 {
		t.Fatalf("new job indexes: create %d modify %d jobmodify %d version %d",
			got.CreateIndex, got.ModifyIndex, got.JobModifyIndex, got.Version)
	}
	if got.Status != structs.JobStatusPending {
		t.Fatalf("new job status %q, want pending", got.Status)
	}
	e, err := s.EvalByID(nil, eval.ID)
	must(t, err)
	if e.CreateIndex != 10 {
		t.Fatalf("eval written at %d, want 10 (same txn)", e.CreateIndex)
	}
	sum, err := s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if _, ok := sum.Summary["web"]; !ok || sum.CreateIndex != 10 {
		t.Fatalf("summary not created for the job's groups: %+v", sum)
	}

	update := got.Copy()
	update.TaskGroups[0].Count = 3
	update.TaskGroups = append(update.TaskGroups, update.TaskGroups[0].Copy())
	update.TaskGroups[1].Name = "api"
	must(t, s.UpsertJob(12, update, nil))
	got2, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if got2.CreateIndex != 10 || got2.ModifyIndex != 12 || got2.JobModifyIndex != 12 || got2.Version != 1 {
		t.Fatalf("updated job indexes: create %d modify %d jobmodify %d version %d",
			got2.CreateIndex, got2.ModifyIndex, got2.JobModifyIndex, got2.Version)
	}
	if got.TaskGroups[0].Count != 10 || got.Version != 0 || len(got.TaskGroups) != 1 {
		t.Fatal("a job handed out earlier was modified by a later write")
	}
	sum2, err := s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if _, ok := sum2.Summary["api"]; !ok {
		t.Fatalf("summary lacks the new group: %+v", sum2.Summary)
	}
	if _, ok := sum.Summary["api"]; ok {
		t.Fatal("summary handed out earlier was modified")
	}

	stopped := got2.Copy()
	stopped.Stop = true
	must(t, s.UpsertJob(13, stopped, nil))
	got3, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if got3.Status != structs.JobStatusDead || got3.Version != 2 {
		t.Fatalf("stopped job: status %q version %d", got3.Status, got3.Version)
	}
}

func TestJobStatus(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, s *StateStore, job *structs.Job)
		want  string
	}{
		{"new", func(t *testing.T, s *StateStore, job *structs.Job) {}, structs.JobStatusPending},
		{"running alloc", func(t *testing.T, s *StateStore, job *structs.Job) {
			must(t, s.UpsertAllocs(20, []*structs.Allocation{mock.Alloc(job, mock.Node())}))
		}, structs.JobStatusRunning},
		{"all allocs and evals terminal", func(t *testing.T, s *StateStore, job *structs.Job) {
			a := mock.Alloc(job, mock.Node())
			a.ClientStatus = structs.AllocClientStatusComplete
			must(t, s.UpsertAllocs(20, []*structs.Allocation{a}))
			e := mock.EvalFor(job)
			e.Status = structs.EvalStatusComplete
			must(t, s.UpsertEvals(21, []*structs.Evaluation{e}))
		}, structs.JobStatusDead},
		{"pending eval", func(t *testing.T, s *StateStore, job *structs.Job) {
			must(t, s.UpsertEvals(21, []*structs.Evaluation{mock.EvalFor(job)}))
		}, structs.JobStatusPending},
		{"stopped", func(t *testing.T, s *StateStore, job *structs.Job) {
			must(t, s.UpsertAllocs(20, []*structs.Allocation{mock.Alloc(job, mock.Node())}))
			must(t, s.DeregisterJob(22, job.Namespace, job.ID, false, 0, nil))
		}, structs.JobStatusDead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			job := mock.Job()
			must(t, s.UpsertJob(10, job, nil))
			tc.setup(t, s, job)
			got, err := s.JobByID(nil, job.Namespace, job.ID)
			must(t, err)
			if got.Status != tc.want {
				t.Fatalf("status %q, want %q", got.Status, tc.want)
			}
		})
	}
}

func TestDeregisterJob(t *testing.T) {
	for _, purge := range []bool{false, true} {
		name := map[bool]string{false: "stop", true: "purge"}[purge]
		t.Run(name, func(t *testing.T) {
			s := testStore(t)
			job := mock.Job()
			must(t, s.UpsertJob(10, job, nil))
			alloc := mock.Alloc(job, mock.Node())
			must(t, s.UpsertAllocs(11, []*structs.Allocation{alloc}))
			before, err := s.JobByID(nil, job.Namespace, job.ID)
			must(t, err)

			eval := mock.EvalFor(job)
			eval.TriggeredBy = structs.EvalTriggerJobDeregister
			must(t, s.DeregisterJob(15, job.Namespace, job.ID, purge, 777, eval))

			got, err := s.JobByID(nil, job.Namespace, job.ID)
			if purge {
				wantNotFound(t, err)
				_, err = s.JobSummary(nil, job.Namespace, job.ID)
				wantNotFound(t, err)
			} else {
				must(t, err)
				if !got.Stop || got.Status != structs.JobStatusDead || got.JobModifyIndex != 15 || got.SubmitTime != 777 {
					t.Fatalf("stopped job: %+v", got)
				}
			}
			if before.Stop || before.Status != structs.JobStatusRunning {
				t.Fatalf("job handed out before deregister changed: stop=%v status=%q", before.Stop, before.Status)
			}
			if _, err := s.AllocByID(nil, alloc.ID); err != nil {
				t.Fatalf("allocations must stay for GC: %v", err)
			}
			e, err := s.EvalByID(nil, eval.ID)
			must(t, err)
			if e.CreateIndex != 15 {
				t.Fatalf("eval index %d, want 15", e.CreateIndex)
			}
			wantIndex(t, s, TableJobs, 15)
			wantIndex(t, s, TableEvals, 15)
		})
	}
}

func TestJobListing(t *testing.T) {
	s := testStore(t)
	var ids []string
	for i, spec := range []struct{ ns, id string }{
		{"default", "web-b"}, {"default", "web-a"}, {"default", "api"}, {"other", "web-c"}, {"a", "zzz"},
	} {
		j := mock.Job()
		j.Namespace, j.ID, j.Name = spec.ns, spec.id, spec.id
		must(t, s.UpsertJob(uint64(10+i), j, nil))
		ids = append(ids, spec.ns+"/"+spec.id)
	}
	jobs, err := s.Jobs(nil)
	must(t, err)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Namespace+"/"+j.ID)
	}
	want := []string{"a/zzz", "default/api", "default/web-a", "default/web-b", "other/web-c"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Jobs order %v, want %v", got, want)
	}

	prefixCases := []struct {
		ns, prefix string
		want       []string
	}{
		{"default", "web", []string{"web-a", "web-b"}},
		{"default", "", []string{"api", "web-a", "web-b"}},
		{"other", "web", []string{"web-c"}},
		{"default", "x", nil},
		{"", "api", []string{"api"}},
	}
	for _, tc := range prefixCases {
		t.Run(tc.ns+"/"+tc.prefix, func(t *testing.T) {
			jobs, err := s.JobsByIDPrefix(nil, tc.ns, tc.prefix)
			must(t, err)
			var got []string
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

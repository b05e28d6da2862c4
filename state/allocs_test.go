package state

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// planFor returns n new allocations of job (Job omitted, as in a Raft plan
// entry) spread over nodes.
func planFor(job *structs.Job, nodes []*structs.Node, n int) []*structs.Allocation {
	out := make([]*structs.Allocation, n)
	for i := range out {
		a := mock.Alloc(job, nodes[i%len(nodes)])
		a.Job = nil
		out[i] = a
	}
	return out
}

func TestUpsertPlanResults(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	nodes := []*structs.Node{mock.Node(), mock.Node()}
	planEval := mock.EvalFor(job)
	must(t, s.UpsertEvals(6, []*structs.Evaluation{planEval}))
	stored, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)

	// First plan: five placements. The plan carries a decoded copy of the
	// job, which must not replace the stored one.
	placed := planFor(job, nodes, 5)
	followUp := mock.EvalFor(job)
	must(t, s.UpsertPlanResults(10, &structs.ApplyPlanResultsRequest{
		Job: stored.Copy(), AllocsUpdated: placed, EvalID: planEval.ID,
		Evals: []*structs.Evaluation{followUp}, UpdatedAt: 1234,
	}))
	jobAfter, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	allocs, err := s.AllocsByJob(nil, job.Namespace, job.ID)
	must(t, err)
	if len(allocs) != 5 {
		t.Fatalf("%d allocs, want 5", len(allocs))
	}
	for _, a := range allocs {
		if a.Job != stored {
			t.Fatalf("alloc %s does not share the stored job pointer", a.ID)
		}
		if a.CreateIndex != 10 || a.ModifyIndex != 10 || a.AllocModifyIndex != 10 || a.ModifyTime == 0 {
			t.Fatalf("new alloc indexes %d/%d/%d time %d", a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime)
		}
	}
	if jobAfter.Status != structs.JobStatusRunning || jobAfter.JobModifyIndex != 5 || jobAfter.Version != 0 {
		t.Fatalf("job after plan: status %q jobmodify %d version %d", jobAfter.Status, jobAfter.JobModifyIndex, jobAfter.Version)
	}
	pe, err := s.EvalByID(nil, planEval.ID)
	must(t, err)
	if pe.ModifyIndex != 10 {
		t.Fatalf("plan eval ModifyIndex %d, want 10", pe.ModifyIndex)
	}
	if _, err := s.EvalByID(nil, followUp.ID); err != nil {
		t.Fatalf("plan evals not written: %v", err)
	}
	sum, err := s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if got := sum.Summary["web"]; got.Starting != 5 {
		t.Fatalf("summary after placement %+v", got)
	}
	for _, tb := range []string{TableAllocs, TableEvals, TableJobSummary, TableJobs} {
		wantIndex(t, s, tb, 10)
	}

	// Second plan: stop two (one as lost), update one in place.
	old0, err := s.AllocByID(nil, placed[0].ID)
	must(t, err)
	stop0 := &structs.Allocation{ID: placed[0].ID, DesiredStatus: structs.AllocDesiredStatusStop,
		DesiredDescription: "alloc not needed", ModifyTime: 99}
	stop1 := &structs.Allocation{ID: placed[1].ID, DesiredStatus: structs.AllocDesiredStatusStop,
		DesiredDescription: "node down", ClientStatus: structs.AllocClientStatusLost}
	missing := &structs.Allocation{ID: "gone", DesiredStatus: structs.AllocDesiredStatusStop}
	inPlace := old0.CopySkipJob()
	inPlace.ID = placed[2].ID
	inPlace.Name = "updated-in-place"
	inPlace.ClientStatus = structs.AllocClientStatusPending
	must(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: placed[2].ID, ClientStatus: structs.AllocClientStatusRunning}}, nil))
	must(t, s.UpsertPlanResults(12, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{stop0, stop1, missing},
		AllocsUpdated: []*structs.Allocation{inPlace}, UpdatedAt: 555,
	}))
	a0, err := s.AllocByID(nil, placed[0].ID)
	must(t, err)
	if a0.DesiredStatus != structs.AllocDesiredStatusStop || a0.DesiredDescription != "alloc not needed" ||
		a0.ClientStatus != structs.AllocClientStatusPending || a0.ModifyTime != 99 || a0.ModifyIndex != 12 ||
		a0.CreateIndex != 10 || a0.Job != stored || a0.NodeID != placed[0].NodeID {
		t.Fatalf("stopped alloc merged wrongly: %+v", a0)
	}
	if old0.DesiredStatus != structs.AllocDesiredStatusRun || old0.ModifyIndex != 10 {
		t.Fatal("alloc handed out earlier was modified")
	}
	a1, err := s.AllocByID(nil, placed[1].ID)
	must(t, err)
	if a1.ClientStatus != structs.AllocClientStatusLost || a1.ModifyTime != 555 {
		t.Fatalf("lost stop: client status %q modify time %d", a1.ClientStatus, a1.ModifyTime)
	}
	a2, err := s.AllocByID(nil, placed[2].ID)
	must(t, err)
	if a2.Name != "updated-in-place" || a2.ClientStatus != structs.AllocClientStatusRunning || a2.CreateIndex != 10 || a2.Job != stored {
		t.Fatalf("in-place update: name %q client %q create %d", a2.Name, a2.ClientStatus, a2.CreateIndex)
	}
	sum, err = s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if got := sum.Summary["web"]; got.Starting != 3 || got.Running != 1 || got.Lost != 1 {
		t.Fatalf("summary after stops %+v", got)
	}
}

func TestUpsertPlanResultsJobVersion(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	planned, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	planJob := planned.Copy()
	// The job is updated after the scheduler planned for version 0.
	newer := planned.Copy()
	newer.TaskGroups[0].Count = 1
	must(t, s.UpsertJob(6, newer, nil))

	allocs := planFor(job, []*structs.Node{mock.Node()}, 3)
	must(t, s.UpsertPlanResults(7, &structs.ApplyPlanResultsRequest{Job: planJob, AllocsUpdated: allocs}))
	stored, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if stored.Version != 1 || stored.TaskGroups[0].Count != 1 {
		t.Fatal("a plan rolled the stored job back")
	}
	got, err := s.AllocsByJob(nil, job.Namespace, job.ID)
	must(t, err)
	for _, a := range got {
		if a.Job != planJob {
			t.Fatal("allocations of an older version must share the plan's job")
		}
	}
}

func TestUpsertPlanResultsWithoutJob(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	allocs := planFor(job, []*structs.Node{mock.Node()}, 1)
	err := s.UpsertPlanResults(7, &structs.ApplyPlanResultsRequest{AllocsUpdated: allocs})
	wantNotFound(t, err)
	if all, _ := s.Allocs(nil); len(all) != 0 {
		t.Fatal("a refused plan wrote allocations")
	}
	wantIndex(t, s, TableAllocs, 0)
}

func TestUpdateAllocsFromClient(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	node := mock.Node()
	a := mock.Alloc(job, node)
	a.Job = nil
	must(t, s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a}}))
	before, err := s.AllocByID(nil, a.ID)
	must(t, err)

	steps := []struct {
		status string
		want   structs.TaskGroupSummary
		job    string
	}{
		{structs.AllocClientStatusRunning, structs.TaskGroupSummary{Running: 1}, structs.JobStatusRunning},
		{structs.AllocClientStatusFailed, structs.TaskGroupSummary{Failed: 1}, structs.JobStatusDead},
	}
	for i, st := range steps {
		t.Run(st.status, func(t *testing.T) {
			index := uint64(10 + i)
			upd := &structs.Allocation{ID: a.ID, ClientStatus: st.status, ClientDescription: "desc " + st.status,
				TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning}}),
				// Server-owned fields in a client update are ignored.
				DesiredStatus: structs.AllocDesiredStatusStop, NodeID: "elsewhere"}
			var evals []*structs.Evaluation
			if st.status == structs.AllocClientStatusFailed {
				e := mock.EvalFor(job)
				e.TriggeredBy = structs.EvalTriggerRetryFailedAlloc
				e.Status = structs.EvalStatusComplete
				evals = append(evals, e)
			}
			must(t, s.UpdateAllocsFromClient(index, []*structs.Allocation{upd, {ID: "unknown", ClientStatus: "running"}}, evals))
			got, err := s.AllocByID(nil, a.ID)
			must(t, err)
			if got.ClientStatus != st.status || got.ClientDescription != "desc "+st.status || got.TaskStates.MustMap()["web"] == nil ||
				got.DesiredStatus != structs.AllocDesiredStatusRun || got.NodeID != node.ID || got.ModifyIndex != index ||
				got.AllocModifyIndex != 6 || got.Job == nil {
				t.Fatalf("merged alloc %+v", got)
			}
			sum, err := s.JobSummary(nil, job.Namespace, job.ID)
			must(t, err)
			if sum.Summary["web"] != st.want {
				t.Fatalf("summary %+v, want %+v", sum.Summary["web"], st.want)
			}
			j, err := s.JobByID(nil, job.Namespace, job.ID)
			must(t, err)
			if j.Status != st.job {
				t.Fatalf("job status %q, want %q", j.Status, st.job)
			}
			for _, e := range evals {
				if _, err := s.EvalByID(nil, e.ID); err != nil {
					t.Fatalf("eval not written: %v", err)
				}
			}
			wantIndex(t, s, TableAllocs, index)
		})
	}
	if before.ClientStatus != structs.AllocClientStatusPending || !before.TaskStates.IsZero() {
		t.Fatal("alloc handed out earlier was modified")
	}
	// An update without task states keeps the stored ones.
	must(t, s.UpdateAllocsFromClient(20, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusFailed}}, nil))
	got, err := s.AllocByID(nil, a.ID)
	must(t, err)
	if got.TaskStates.MustMap()["web"] == nil {
		t.Fatal("task states dropped by an update that carried none")
	}
}

func TestUpsertAllocs(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	node := mock.Node()
	withJob := mock.Alloc(job, node) // job not in the store, but set
	must(t, s.UpsertAllocs(5, []*structs.Allocation{withJob}))
	got, err := s.AllocByID(nil, withJob.ID)
	must(t, err)
	if got.Job != job || got.CreateIndex != 5 {
		t.Fatalf("alloc %+v", got)
	}
	upd := got.Copy()
	upd.ClientStatus = structs.AllocClientStatusRunning
	must(t, s.UpsertAllocs(6, []*structs.Allocation{upd}))
	got2, err := s.AllocByID(nil, withJob.ID)
	must(t, err)
	if got2.ClientStatus != structs.AllocClientStatusRunning || got2.CreateIndex != 5 || got2.ModifyIndex != 6 {
		t.Fatalf("UpsertAllocs must write the allocation as given: %+v", got2)
	}
	noJob := mock.Alloc(mock.Job(), node)
	noJob.Job = nil
	wantNotFound(t, s.UpsertAllocs(7, []*structs.Allocation{noJob}))
	wantIndex(t, s, TableAllocs, 6)
}

func TestAllocListing(t *testing.T) {
	s := testStore(t)
	j1, j2 := mock.Job(), mock.Job()
	n1, n2 := mock.Node(), mock.Node()
	a := mock.Alloc(j1, n1)
	b := mock.Alloc(j1, n2)
	c := mock.Alloc(j2, n1)
	a.ID, b.ID, c.ID = "ab-1", "ab-2", "cd-1"
	eval := mock.EvalFor(j1)
	a.EvalID, b.EvalID = eval.ID, eval.ID
	must(t, s.UpsertEvals(4, []*structs.Evaluation{eval}))
	must(t, s.UpsertAllocs(5, []*structs.Allocation{c, b, a}))
	ids := func(as []*structs.Allocation, err error) string {
		t.Helper()
		must(t, err)
		out := ""
		for _, x := range as {
			out += x.ID + " "
		}
		return out
	}
	cases := []struct{ name, got, want string }{
		{"all", ids(s.Allocs(nil)), "ab-1 ab-2 cd-1 "},
		{"prefix", ids(s.AllocsByIDPrefix(nil, "ab")), "ab-1 ab-2 "},
		{"by job", ids(s.AllocsByJob(nil, j1.Namespace, j1.ID)), "ab-1 ab-2 "},
		{"by node", ids(s.AllocsByNode(nil, n1.ID)), "ab-1 cd-1 "},
		{"by eval", ids(s.AllocsByEval(nil, eval.ID)), "ab-1 ab-2 "},
		{"by another eval", ids(s.AllocsByEval(nil, c.EvalID)), ""},
		{"by missing eval", ids(s.AllocsByEval(nil, "nope")), ""},
		{"by missing node", ids(s.AllocsByNode(nil, "nope")), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestUpdateAllocsDesiredTransition(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(5, job, nil))
	node := mock.Node()
	live, stopped := mock.Alloc(job, node), mock.Alloc(job, node)
	live.Job, stopped.Job = nil, nil
	must(t, s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{live, stopped}}))
	// A plan stops one allocation after the transition was decided: the
	// transition must not undo the stop.
	must(t, s.UpsertPlanResults(7, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: stopped.ID}}}))
	before, err := s.AllocByID(nil, live.ID)
	must(t, err)

	yes := true
	e := mock.EvalFor(job)
	e.TriggeredBy = structs.EvalTriggerNodeDrain
	must(t, s.UpdateAllocsDesiredTransition(8, map[string]*structs.DesiredTransition{
		live.ID: {Migrate: &yes}, stopped.ID: {Migrate: &yes}, "unknown": {Migrate: &yes},
	}, 99, []*structs.Evaluation{e}))
	for _, id := range []string{live.ID, stopped.ID} {
		got, err := s.AllocByID(nil, id)
		must(t, err)
		if !got.DesiredTransition.ShouldMigrate() || got.AllocModifyIndex != 8 || got.ModifyIndex != 8 ||
			got.ModifyTime != 99 || got.Job == nil {
			t.Fatalf("alloc %s after transition %+v", id, got)
		}
		if wantStop := id == stopped.ID; got.ServerTerminalStatus() != wantStop {
			t.Fatalf("alloc %s desired status %q", id, got.DesiredStatus)
		}
	}
	if _, err := s.EvalByID(nil, e.ID); err != nil {
		t.Fatalf("eval not written: %v", err)
	}
	if _, err := s.AllocByID(nil, "unknown"); err == nil {
		t.Fatal("an unknown allocation was created")
	}
	if before.DesiredTransition.Migrate != nil {
		t.Fatal("alloc handed out earlier was modified")
	}
	wantIndex(t, s, TableAllocs, 8)
	wantIndex(t, s, TableEvals, 8)
}

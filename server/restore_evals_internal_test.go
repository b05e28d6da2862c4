package server

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// restoreTestStore holds one node and, per given job, the job (if
// stored) and one allocation of it in the given desired and client status.
type restoreTestAlloc struct {
	job              *structs.Job
	storeJob         bool
	desired, cstatus string
}

func restoreTestStore(t *testing.T, allocs []restoreTestAlloc) (*state.StateStore, map[string]*structs.Allocation) {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	node := mock.Node()
	if err := st.UpsertNode(1, node, nil); err != nil {
		t.Fatal(err)
	}
	byJob := map[string]*structs.Allocation{}
	index := uint64(2)
	for _, a := range allocs {
		if a.storeJob {
			if err := st.UpsertJob(index, a.job, nil); err != nil {
				t.Fatal(err)
			}
			index++
		}
		alloc := mock.Alloc(a.job, node)
		alloc.DesiredStatus, alloc.ClientStatus = a.desired, a.cstatus
		if err := st.UpsertAllocs(index, []*structs.Allocation{alloc}); err != nil {
			t.Fatal(err)
		}
		index++
		byJob[a.job.ID] = alloc
	}
	return st, byJob
}

func namedJob(id, typ string, stop bool) *structs.Job {
	j := mock.Job()
	if typ == structs.JobTypeBatch {
		j = mock.BatchJob()
	}
	j.ID, j.Name, j.Stop = id, id, stop
	return j
}

// TestFinishedAllocEval: which client updates get an evaluation of their job.
func TestFinishedAllocEval(t *testing.T) {
	run, stop := structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
	running := structs.AllocClientStatusRunning
	st, allocs := restoreTestStore(t, []restoreTestAlloc{
		{job: namedJob("svc", structs.JobTypeService, false), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("bat", structs.JobTypeBatch, false), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("stopped-alloc", structs.JobTypeService, false), storeJob: true, desired: stop, cstatus: running},
		{job: namedJob("stopped-job", structs.JobTypeService, true), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("done", structs.JobTypeService, false), storeJob: true, desired: run, cstatus: structs.AllocClientStatusComplete},
	})
	cases := []struct {
		job, status, want string // want: the trigger, "" for none
	}{
		{"svc", structs.AllocClientStatusFailed, structs.EvalTriggerRetryFailedAlloc},
		{"svc", structs.AllocClientStatusComplete, structs.EvalTriggerAllocStop},
		{"svc", structs.AllocClientStatusLost, structs.EvalTriggerAllocStop},
		{"svc", structs.AllocClientStatusRunning, ""},
		{"bat", structs.AllocClientStatusComplete, ""},
		{"bat", structs.AllocClientStatusFailed, structs.EvalTriggerRetryFailedAlloc},
		{"stopped-alloc", structs.AllocClientStatusComplete, ""},
		{"stopped-job", structs.AllocClientStatusComplete, ""},
		{"done", structs.AllocClientStatusComplete, ""},
	}
	for _, tc := range cases {
		t.Run(tc.job+"/"+tc.status, func(t *testing.T) {
			upd := &structs.Allocation{ID: allocs[tc.job].ID, ClientStatus: tc.status}
			e := finishedAllocEval(st, upd, time.Now())
			got := ""
			if e != nil {
				got = e.TriggeredBy
				if e.JobID != tc.job || e.Status != structs.EvalStatusPending {
					t.Fatalf("eval %+v, want a pending eval of job %s", e, tc.job)
				}
			}
			if got != tc.want {
				t.Fatalf("trigger %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRestoredStateEvals: after a restore every job that is not stopped is
// evaluated, and so is a stopped or missing job with allocations to stop;
// a job with a pending evaluation is left to it.
func TestRestoredStateEvals(t *testing.T) {
	run, stop := structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
	running := structs.AllocClientStatusRunning
	pendingJob := namedJob("has-pending", structs.JobTypeService, false)
	st, _ := restoreTestStore(t, []restoreTestAlloc{
		{job: namedJob("svc", structs.JobTypeService, false), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("bat", structs.JobTypeBatch, false), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("stopped-live", structs.JobTypeService, true), storeJob: true, desired: run, cstatus: running},
		{job: namedJob("stopped-done", structs.JobTypeService, true), storeJob: true, desired: stop, cstatus: running},
		{job: namedJob("missing", structs.JobTypeService, false), storeJob: false, desired: run, cstatus: running},
		{job: pendingJob, storeJob: true, desired: run, cstatus: running},
	})
	if err := st.UpsertEvals(100, []*structs.Evaluation{structs.NewEval(pendingJob, structs.EvalTriggerJobRegister, time.Now())}); err != nil {
		t.Fatal(err)
	}
	evals, err := restoredStateEvals(st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evals {
		if e.TriggeredBy != structs.EvalTriggerSnapshotRestore || e.Status != structs.EvalStatusPending {
			t.Fatalf("eval %+v, want a pending snapshot-restore eval", e)
		}
		got = append(got, e.JobID)
	}
	sort.Strings(got)
	if want := "[bat missing stopped-live svc]"; fmt.Sprint(got) != want {
		t.Fatalf("evaluated %v, want %s", got, want)
	}
}

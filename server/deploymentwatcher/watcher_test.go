package deploymentwatcher

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture: job version 0 (stable) and version 1 with a running deployment
// of group "web" (auto-revert, one auto-promoted canary), one canary and
// one other allocation placed.
type fixture struct {
	st             *state.StateStore
	job            *structs.Job
	dep            *structs.Deployment
	canary, normal *structs.Allocation
	now            time.Time
	index          uint64
}

func newFixture(t *testing.T, canaries int) *fixture {
	t.Helper()
	st, err := state.NewStateStore()
	must(t, err)
	f := &fixture{st: st, now: time.Unix(1700000000, 0).UTC(), index: 1}
	node := mock.Node()
	must(t, st.UpsertNode(f.next(), node, nil))
	v0 := mock.Job()
	must(t, st.UpsertJob(f.next(), v0, nil))
	must(t, st.UpdateJobStability(f.next(), v0.Namespace, v0.ID, 0, true))
	v1 := v0.Copy()
	v1.Meta = map[string]string{"v": "1"}
	must(t, st.UpsertJob(f.next(), v1, nil))
	f.job, err = st.JobByID(nil, v0.Namespace, v0.ID)
	must(t, err)
	group := f.job.TaskGroups[0].Name
	f.dep = structs.NewDeployment(f.job, f.now)
	f.dep.TaskGroups[group] = &structs.DeploymentState{AutoRevert: true, AutoPromote: canaries > 0, DesiredCanaries: canaries,
		DesiredTotal: 2, ProgressDeadline: time.Minute, RequireProgressBy: f.now.Add(time.Minute)}
	f.canary = mock.Alloc(f.job, node)
	f.canary.Job, f.canary.DeploymentID = nil, f.dep.ID
	if canaries > 0 {
		f.canary.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
		f.dep.TaskGroups[group].PlacedCanaries = []string{f.canary.ID}
	}
	f.normal = mock.Alloc(f.job, node)
	f.normal.Job, f.normal.DeploymentID = nil, f.dep.ID
	must(t, st.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{Job: f.job, Deployment: f.dep,
		AllocsUpdated: []*structs.Allocation{f.canary, f.normal}}))
	return f
}

func (f *fixture) next() uint64 { f.index++; return f.index }

func (f *fixture) health(t *testing.T, a *structs.Allocation, healthy bool) {
	t.Helper()
	must(t, f.st.UpdateAllocsFromClient(f.next(), []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: f.now}}}, nil))
}

func TestPlanFailsUnhealthyAndReverts(t *testing.T) {
	f := newFixture(t, 0)
	p, err := Plan(f.st, memdb.NewWatchSet(), f.now)
	must(t, err)
	if len(p.Fail)+len(p.Promote) != 0 || !p.NextDeadline.Equal(f.now.Add(time.Minute)) {
		t.Fatalf("healthy-so-far deployment: %+v", p)
	}
	f.health(t, f.normal, false)
	p, err = Plan(f.st, memdb.NewWatchSet(), f.now)
	must(t, err)
	if len(p.Fail) != 1 || p.Fail[0].RevertTo == nil || p.Fail[0].RevertTo.Version != 0 ||
		p.Fail[0].Description != structs.DeploymentStatusDescriptionFailedAllocations+" - rolling back to job version 0" {
		t.Fatalf("unhealthy allocation: %+v", p.Fail)
	}
}

func TestPlanProgressDeadline(t *testing.T) {
	f := newFixture(t, 0)
	f.health(t, f.canary, true) // one of two healthy: not done
	p, err := Plan(f.st, memdb.NewWatchSet(), f.now.Add(2*time.Minute))
	must(t, err)
	if len(p.Fail) != 1 || !strings.HasPrefix(p.Fail[0].Description, structs.DeploymentStatusDescriptionProgressDeadline) {
		t.Fatalf("past the progress deadline: %+v", p.Fail)
	}
	// Paused deployments wait, deadline or not.
	must(t, f.st.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: &structs.DeploymentStatusUpdate{
		DeploymentID: f.dep.ID, Status: structs.DeploymentStatusPaused}}))
	p, err = Plan(f.st, memdb.NewWatchSet(), f.now.Add(2*time.Minute))
	must(t, err)
	if len(p.Fail) != 0 {
		t.Fatalf("paused deployment failed: %+v", p.Fail)
	}
}

func TestPlanAutoPromotes(t *testing.T) {
	f := newFixture(t, 1)
	p, err := Plan(f.st, memdb.NewWatchSet(), f.now)
	must(t, err)
	if len(p.Promote) != 0 {
		t.Fatal("promoted an unhealthy canary")
	}
	f.health(t, f.canary, true)
	// The deadline does not run against canaries waiting for promotion.
	p, err = Plan(f.st, memdb.NewWatchSet(), f.now.Add(2*time.Minute))
	must(t, err)
	if len(p.Promote) != 1 || len(p.Fail) != 0 {
		t.Fatalf("healthy auto-promoting canary: %+v", p)
	}
}

// fakeWriter records the watcher's writes.
type fakeWriter struct {
	failed   []string
	promoted []string
}

func (w *fakeWriter) FailDeployment(d *structs.Deployment, desc string, _ *structs.Job) error {
	w.failed = append(w.failed, d.ID+": "+desc)
	return nil
}

func (w *fakeWriter) PromoteDeployment(d *structs.Deployment) error {
	w.promoted = append(w.promoted, d.ID)
	return nil
}

func TestWatcherPassWrites(t *testing.T) {
	f := newFixture(t, 0)
	f.health(t, f.normal, false)
	fw := &fakeWriter{}
	w, err := New(Config{State: func() Reader { return f.st }, Writer: fw})
	must(t, err)
	if _, err := w.Pass(memdb.NewWatchSet()); err != nil {
		t.Fatal(err)
	}
	if len(fw.failed) != 1 || !strings.HasPrefix(fw.failed[0], f.dep.ID) {
		t.Fatalf("writes: %+v", fw)
	}
}

// countingReader counts the allocation reads of a pass.
type countingReader struct {
	*state.StateStore
	allocReads int
}

func (r *countingReader) AllocsByDeployment(ws memdb.WatchSet, id string) ([]*structs.Allocation, error) {
	r.allocReads++
	return r.StateStore.AllocsByDeployment(ws, id)
}

// A pass reads a deployment's allocations only when its counts call for
// it: an unhealthy allocation, or canaries that may be ready. A healthy
// canary that has since stopped is not promoted on the strength of the
// count alone.
func TestPlanReadsAllocationsOnlyWhenCountsSayTo(t *testing.T) {
	f := newFixture(t, 1)
	r := &countingReader{StateStore: f.st}
	p, err := Plan(r, memdb.NewWatchSet(), f.now)
	must(t, err)
	if r.allocReads != 0 || len(p.Fail)+len(p.Promote) != 0 || !p.NextDeadline.Equal(f.now.Add(time.Minute)) {
		t.Fatalf("nothing reported: %d allocation reads, %+v", r.allocReads, p)
	}
	f.health(t, f.canary, true)
	must(t, f.st.UpdateAllocsFromClient(f.next(), []*structs.Allocation{{ID: f.canary.ID, ClientStatus: structs.AllocClientStatusFailed}}, nil))
	p, err = Plan(r, memdb.NewWatchSet(), f.now)
	must(t, err)
	if r.allocReads != 1 || len(p.Promote) != 0 {
		t.Fatalf("healthy then failed canary: %d allocation reads, %+v", r.allocReads, p)
	}
}

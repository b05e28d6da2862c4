package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// deploymentFixture is a stored job, a node, and a deployment of the job's
// group "web" with one canary, written with a plan that places the canary
// and one other allocation.
type deploymentFixture struct {
	s              *StateStore
	job            *structs.Job
	dep            *structs.Deployment
	canary, normal *structs.Allocation
}

func newDeploymentFixture(t *testing.T) *deploymentFixture {
	t.Helper()
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(1, node, nil))
	job := mock.Job()
	must(t, s.UpsertJob(2, job, nil))
	job, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	group := job.TaskGroups[0].Name
	dep := structs.NewDeployment(job, time.Unix(1700000000, 0))
	dep.TaskGroups[group] = &structs.DeploymentState{DesiredCanaries: 1, DesiredTotal: 3,
		AutoRevert: true, ProgressDeadline: 10 * time.Minute}
	canary := mock.Alloc(job, node)
	canary.Job, canary.DeploymentID = nil, dep.ID
	canary.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	dep.TaskGroups[group].PlacedCanaries = []string{canary.ID}
	normal := mock.Alloc(job, node)
	normal.Job, normal.DeploymentID = nil, dep.ID
	must(t, s.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{Job: job,
		AllocsUpdated: []*structs.Allocation{canary, normal}, Deployment: dep, UpdatedAt: 1700000000}))
	return &deploymentFixture{s: s, job: job, dep: dep, canary: canary, normal: normal}
}

func (f *deploymentFixture) group(t *testing.T) *structs.DeploymentState {
	t.Helper()
	d, err := f.s.DeploymentByID(nil, f.dep.ID)
	must(t, err)
	return d.TaskGroups[f.job.TaskGroups[0].Name]
}

func (f *deploymentFixture) report(t *testing.T, index uint64, a *structs.Allocation, healthy bool, at time.Time) {
	t.Helper()
	must(t, f.s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}}}, nil))
}

func TestDeploymentWrittenWithPlan(t *testing.T) {
	f := newDeploymentFixture(t)
	d, err := f.s.DeploymentByID(nil, f.dep.ID)
	must(t, err)
	if d.CreateIndex != 3 || d.ModifyIndex != 3 || d.Status != structs.DeploymentStatusRunning || d.JobVersion != f.job.Version {
		t.Fatalf("deployment = %+v", d)
	}
	if g := f.group(t); g.PlacedAllocs != 2 || len(g.PlacedCanaries) != 1 || g.HealthyAllocs != 0 {
		t.Fatalf("group = %+v", g)
	}
	if idx, _ := f.s.Index(TableDeployments); idx != 3 {
		t.Fatalf("deployment table index %d, want 3", idx)
	}
	byJob, err := f.s.DeploymentsByJobID(nil, f.job.Namespace, f.job.ID, false)
	must(t, err)
	latest, err := f.s.LatestDeploymentByJobID(nil, f.job.Namespace, f.job.ID)
	must(t, err)
	all, err := f.s.DeploymentsByNamespace(nil, "*", f.dep.ID[:4])
	must(t, err)
	if len(byJob) != 1 || latest == nil || latest.ID != f.dep.ID || len(all) != 1 {
		t.Fatalf("by job %d, latest %v, by prefix %d", len(byJob), latest, len(all))
	}
	none, err := f.s.LatestDeploymentByJobID(nil, f.job.Namespace, "other")
	if err != nil || none != nil {
		t.Fatalf("latest of a job without deployments = %v, %v", none, err)
	}
	if _, err := f.s.DeploymentByID(nil, "nope"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("missing deployment: %v", err)
	}
	allocs, err := f.s.AllocsByDeployment(nil, f.dep.ID)
	must(t, err)
	if len(allocs) != 2 {
		t.Fatalf("%d allocations of the deployment, want 2", len(allocs))
	}

	// An in-place update by a later plan keeps the client's health.
	at := time.Unix(1700000010, 0).UTC()
	f.report(t, 4, f.normal, true, at)
	again := f.normal.Copy()
	again.DeploymentStatus = nil
	must(t, f.s.UpsertPlanResults(5, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{again}}))
	a, err := f.s.AllocByID(nil, f.normal.ID)
	must(t, err)
	if !a.DeploymentStatus.IsHealthy() {
		t.Fatalf("in-place update lost the health: %+v", a.DeploymentStatus)
	}
	if g := f.group(t); g.PlacedAllocs != 2 || g.HealthyAllocs != 1 {
		t.Fatalf("in-place update changed the counts: %+v", g)
	}
}

func TestDeploymentClientHealth(t *testing.T) {
	f := newDeploymentFixture(t)
	ws := memdb.NewWatchSet()
	if _, err := f.s.DeploymentByID(ws, f.dep.ID); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000010, 0).UTC()
	f.report(t, 4, f.canary, true, at)
	if ws.Watch(time.After(time.Second)) {
		t.Fatal("a health report did not wake a watch on the deployment")
	}
	g := f.group(t)
	if g.HealthyAllocs != 1 || g.UnhealthyAllocs != 0 || !g.RequireProgressBy.Equal(at.Add(10*time.Minute)) {
		t.Fatalf("after a healthy report: %+v", g)
	}
	a, err := f.s.AllocByID(nil, f.canary.ID)
	must(t, err)
	if !a.DeploymentStatus.IsHealthy() || !a.DeploymentStatus.Canary || !a.DeploymentStatus.Timestamp.Equal(at) || a.DeploymentStatus.ModifyIndex != 4 {
		t.Fatalf("canary status = %+v", a.DeploymentStatus)
	}
	// The client reports health once per deployment: a second report is
	// not counted again, nor can it flip the health.
	f.report(t, 5, f.canary, false, at.Add(time.Second))
	if g := f.group(t); g.HealthyAllocs != 1 || g.UnhealthyAllocs != 0 {
		t.Fatalf("a second report was counted: %+v", g)
	}
	f.report(t, 6, f.normal, false, at)
	if g := f.group(t); g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 {
		t.Fatalf("after an unhealthy report: %+v", g)
	}
}

func TestDeploymentPromotion(t *testing.T) {
	f := newDeploymentFixture(t)
	eval := mock.EvalFor(f.job)
	req := &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: structs.DeploymentPromoteRequest{
		DeploymentID: f.dep.ID, All: true}, Eval: eval}
	err := f.s.UpdateDeploymentPromotion(4, req)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("promotion of an unhealthy canary: %v", err)
	}
	if _, err := f.s.EvalByID(nil, eval.ID); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("a refused promotion wrote its evaluation: %v", err)
	}
	bad := &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: structs.DeploymentPromoteRequest{
		DeploymentID: f.dep.ID, Groups: []string{"nope"}}}
	if err := f.s.UpdateDeploymentPromotion(4, bad); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("promotion of an unknown group: %v", err)
	}
	f.report(t, 5, f.canary, true, time.Unix(1700000010, 0).UTC())
	must(t, f.s.UpdateDeploymentPromotion(6, req))
	if g := f.group(t); !g.Promoted {
		t.Fatalf("group not promoted: %+v", g)
	}
	a, err := f.s.AllocByID(nil, f.canary.ID)
	must(t, err)
	if a.DeploymentStatus.Canary || !a.DeploymentStatus.IsHealthy() {
		t.Fatalf("promoted canary status = %+v", a.DeploymentStatus)
	}
	if _, err := f.s.EvalByID(nil, eval.ID); err != nil {
		t.Fatalf("promotion evaluation: %v", err)
	}
}

func TestDeploymentAllocHealthAndStatus(t *testing.T) {
	f := newDeploymentFixture(t)
	node, err := f.s.NodeByID(nil, f.canary.NodeID)
	must(t, err)
	other := mock.Alloc(f.job, node)
	must(t, f.s.UpsertAllocs(4, []*structs.Allocation{other}))
	at := time.Unix(1700000020, 0).UTC()
	refused := &structs.ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{
		DeploymentID: f.dep.ID, HealthyAllocationIDs: []string{f.canary.ID, other.ID}}, Timestamp: at}
	if err := f.s.UpdateDeploymentAllocHealth(5, refused); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("health of another deployment's allocation: %v", err)
	}
	if g := f.group(t); g.HealthyAllocs != 0 {
		t.Fatalf("a refused health change was written: %+v", g)
	}

	// The normal allocation turns unhealthy, which fails the deployment
	// and reverts the job to a copy of itself (a new version).
	revert := f.job.Copy()
	eval := mock.EvalFor(revert)
	req := &structs.ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{
		DeploymentID: f.dep.ID, UnhealthyAllocationIDs: []string{f.normal.ID}}, Timestamp: at,
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: f.dep.ID, Status: structs.DeploymentStatusFailed,
			StatusDescription: structs.DeploymentStatusDescriptionFailedAllocations},
		Job: revert, Eval: eval}
	must(t, f.s.UpdateDeploymentAllocHealth(6, req))
	d, err := f.s.DeploymentByID(nil, f.dep.ID)
	must(t, err)
	g := d.TaskGroups[f.job.TaskGroups[0].Name]
	if d.Status != structs.DeploymentStatusFailed || g.UnhealthyAllocs != 1 || d.ModifyTime != at.UnixNano() {
		t.Fatalf("deployment after the unhealthy allocation: %+v %+v", d, g)
	}
	job, err := f.s.JobByID(nil, f.job.Namespace, f.job.ID)
	must(t, err)
	if job.Version != f.job.Version+1 {
		t.Fatalf("reverted job version %d, want %d", job.Version, f.job.Version+1)
	}
	// A terminal deployment takes no more health changes.
	if err := f.s.UpdateDeploymentAllocHealth(7, req); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("health change of a failed deployment: %v", err)
	}

	// A status change of a missing deployment is a not-found refusal.
	b := f.s.Batch()
	defer b.Abort()
	err = b.UpdateDeploymentStatus(8, &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: &structs.DeploymentStatusUpdate{
		DeploymentID: "nope", Status: structs.DeploymentStatusPaused}}, time.Time{})
	if structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("status change of a missing deployment: %v", err)
	}
}

// TestDeploymentStalePlanKeepsNewerState: a plan made before a health
// report and a failure carries an older copy of the deployment; applying
// it keeps the stored counts and status, and adds only the plan's canary.
func TestDeploymentStalePlanKeepsNewerState(t *testing.T) {
	f := newDeploymentFixture(t)
	stale, err := f.s.DeploymentByID(nil, f.dep.ID)
	must(t, err)
	stale = stale.Copy()
	f.report(t, 4, f.canary, true, time.Unix(1700000010, 0).UTC())
	must(t, f.s.UpdateDeploymentStatus(5, &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: &structs.DeploymentStatusUpdate{
		DeploymentID: f.dep.ID, Status: structs.DeploymentStatusFailed, StatusDescription: structs.DeploymentStatusDescriptionFailedAllocations}}))
	group := f.job.TaskGroups[0].Name
	stale.TaskGroups[group].PlacedCanaries = append(stale.TaskGroups[group].PlacedCanaries, "c2")
	must(t, f.s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{Deployment: stale}))
	d, err := f.s.DeploymentByID(nil, f.dep.ID)
	must(t, err)
	g := d.TaskGroups[group]
	if d.Status != structs.DeploymentStatusFailed || g.HealthyAllocs != 1 || g.PlacedAllocs != 2 || len(g.PlacedCanaries) != 2 {
		t.Fatalf("after a stale plan: %s, %+v", d.Status, g)
	}
}

// TestDeleteDeployments: deleted deployments are gone from every index;
// unknown IDs are skipped; a delete of nothing known writes no index.
func TestDeleteDeployments(t *testing.T) {
	f := newDeploymentFixture(t)
	other := structs.NewDeployment(f.job, time.Unix(1700000100, 0))
	must(t, f.s.UpsertDeployment(4, other))
	ws := memdb.NewWatchSet()
	if _, err := f.s.DeploymentsByJobID(ws, f.job.Namespace, f.job.ID, true); err != nil {
		t.Fatal(err)
	}
	must(t, f.s.DeleteDeployments(5, []string{f.dep.ID, "missing"}))
	if ws.Watch(time.After(time.Second)) {
		t.Fatal("the job's deployment list did not fire")
	}
	_, err := f.s.DeploymentByID(nil, f.dep.ID)
	wantNotFound(t, err)
	list, err := f.s.DeploymentsByJobID(nil, f.job.Namespace, f.job.ID, true)
	must(t, err)
	if len(list) != 1 || list[0].ID != other.ID {
		t.Fatalf("deployments of the job %v", list)
	}
	wantIndex(t, f.s, TableDeployments, 5)
	// The allocations that named it stay (the collector deletes them
	// itself, when they are garbage).
	if _, err := f.s.AllocByID(nil, f.canary.ID); err != nil {
		t.Fatal(err)
	}
	must(t, f.s.DeleteDeployments(7, []string{"missing"}))
	must(t, f.s.DeleteDeployments(8, nil))
	wantIndex(t, f.s, TableDeployments, 5)
}

// TestClientHealthOutsideDeployment: the client's health report of an
// allocation in no deployment (judged by its migrate block, which drains
// wait for) is stored once, like a deployment's.
func TestClientHealthOutsideDeployment(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(1, node, nil))
	job := mock.Job()
	must(t, s.UpsertJob(2, job, nil))
	a := mock.Alloc(job, node)
	a.DeploymentID, a.DeploymentStatus = "", nil
	must(t, s.UpsertAllocs(3, []*structs.Allocation{a}))
	at := time.Unix(1700000010, 0).UTC()
	report := func(index uint64, healthy bool, at time.Time) {
		must(t, s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}}}, nil))
	}
	report(4, true, at)
	got, err := s.AllocByID(nil, a.ID)
	must(t, err)
	if !got.DeploymentStatus.IsHealthy() || !got.DeploymentStatus.Timestamp.Equal(at) || got.DeploymentStatus.ModifyIndex != 4 {
		t.Fatalf("status = %+v", got.DeploymentStatus)
	}
	report(5, false, at.Add(time.Second))
	got, err = s.AllocByID(nil, a.ID)
	must(t, err)
	if !got.DeploymentStatus.IsHealthy() || got.DeploymentStatus.ModifyIndex != 4 {
		t.Fatalf("a second report changed the health: %+v", got.DeploymentStatus)
	}
}

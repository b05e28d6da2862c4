package fsm

import (
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// The deployment entries: a plan writes the deployment with its
// allocations; a promotion of an unhealthy canary is refused and writes
// nothing; a health change through the deployment, a promotion and a
// status change each apply with their evaluation, handed to the hooks.
func TestApplyDeployments(t *testing.T) {
	f, hooks := testFSM(t)
	node := mock.Node()
	if r := apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}); r != nil {
		t.Fatalf("node: %v", r)
	}
	job := mock.Job()
	if r := apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}); r != nil {
		t.Fatalf("register: %v", r)
	}
	stored, err := f.State().JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	group := stored.TaskGroups[0].Name
	dep := structs.NewDeployment(stored, time.Unix(1700000000, 0))
	dep.TaskGroups[group] = &structs.DeploymentState{DesiredCanaries: 1, DesiredTotal: 2}
	canary := mock.Alloc(stored, node)
	canary.Job, canary.DeploymentID = nil, dep.ID
	canary.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	dep.TaskGroups[group].PlacedCanaries = []string{canary.ID}
	if r := apply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored,
		AllocsUpdated: []*structs.Allocation{canary}, Deployment: dep}); r != nil {
		t.Fatalf("plan: %v", r)
	}

	promote := &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: structs.DeploymentPromoteRequest{
		DeploymentID: dep.ID, All: true}, Eval: mock.EvalFor(stored)}
	r := apply(t, f, 4, structs.DeploymentPromoteRequestType, promote)
	if err, ok := r.(error); !ok || structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("promotion of an unhealthy canary: %v", r)
	}
	if last, _ := f.State().LatestIndex(); last != 3 {
		t.Fatalf("a refused entry wrote: index %d", last)
	}

	health := &structs.ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{
		DeploymentID: dep.ID, HealthyAllocationIDs: []string{canary.ID}}, Timestamp: time.Unix(1700000001, 0).UTC(),
		Eval: mock.EvalFor(stored)}
	if r := apply(t, f, 5, structs.DeploymentAllocHealthRequestType, health); r != nil {
		t.Fatalf("alloc health: %v", r)
	}
	if r := apply(t, f, 6, structs.DeploymentPromoteRequestType, promote); r != nil {
		t.Fatalf("promotion: %v", r)
	}
	status := &structs.DeploymentStatusUpdateRequest{Eval: mock.EvalFor(stored), DeploymentUpdate: &structs.DeploymentStatusUpdate{
		DeploymentID: dep.ID, Status: structs.DeploymentStatusSuccessful, StatusDescription: structs.DeploymentStatusDescriptionSuccessful}}
	if r := apply(t, f, 7, structs.DeploymentStatusUpdateRequestType, status); r != nil {
		t.Fatalf("status: %v", r)
	}
	d, err := f.State().DeploymentByID(nil, dep.ID)
	must(t, err)
	g := d.TaskGroups[group]
	if d.Status != structs.DeploymentStatusSuccessful || !g.Promoted || g.HealthyAllocs != 1 || g.PlacedAllocs != 1 || d.ModifyIndex != 7 {
		t.Fatalf("deployment = %+v, group %+v", d, g)
	}

	// The garbage collector's delete entry removes the deployment (and
	// skips an unknown one) with the allocation that named it.
	del := &structs.EvalDeleteRequest{Allocs: []string{canary.ID}, Deployments: []string{dep.ID, "missing"}}
	if r := apply(t, f, 8, structs.EvalDeleteRequestType, del); r != nil {
		t.Fatalf("delete: %v", r)
	}
	if _, err := f.State().DeploymentByID(nil, dep.ID); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("deployment after the delete entry: %v", err)
	}
	if idx, err := f.State().Index(state.TableDeployments); err != nil || idx != 8 {
		t.Fatalf("deployment table index %d, %v", idx, err)
	}

	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	want := []string{"evals " + health.Eval.ID, "evals " + promote.Eval.ID, "evals " + status.Eval.ID}
	if got := hooks.calls[len(hooks.calls)-3:]; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("hooks %v, want to end with %v", hooks.calls, want)
	}
}

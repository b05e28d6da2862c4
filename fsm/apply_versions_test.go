package fsm

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// The job stability and scaling entries: a refusal (a version not kept, a
// stale job modify index) is the entry's result and writes nothing; a
// scaling entry writes the new version, its evaluation (handed to the
// hooks) and the event together.
func TestApplyStabilityAndScaling(t *testing.T) {
	f, hooks := testFSM(t)
	job := mock.Job()
	if r := apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}); r != nil {
		t.Fatalf("register: %v", r)
	}
	wr := structs.WriteRequest{Namespace: job.Namespace}
	if r := apply(t, f, 2, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: job.ID, JobVersion: 0, Stable: true, WriteRequest: wr}); r != nil {
		t.Fatalf("stability: %v", r)
	}
	r := apply(t, f, 3, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: job.ID, JobVersion: 5, Stable: true, WriteRequest: wr})
	if structs.CodeOf(r.(error)) != structs.ErrCodeNotFound {
		t.Fatalf("stability of a missing version: %v", r)
	}
	if j, _ := f.State().JobByID(nil, job.Namespace, job.ID); !j.Stable || j.ModifyIndex != 2 {
		t.Fatalf("job after stability: stable %v modify index %d", j.Stable, j.ModifyIndex)
	}

	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 7
	eval := mock.EvalFor(scaled)
	n := int64(7)
	req := &structs.ScalingEventRegisterRequest{JobID: job.ID, TaskGroup: job.TaskGroups[0].Name, Job: scaled, Eval: eval,
		Event: &structs.ScalingEvent{Count: &n, PreviousCount: 1}, JobModifyIndex: 99, WriteRequest: wr}
	r = apply(t, f, 4, structs.ScalingEventRegisterRequestType, req)
	if structs.CodeOf(r.(error)) != structs.ErrCodeConflict {
		t.Fatalf("stale scaling entry: %v", r)
	}
	if last, _ := f.State().LatestIndex(); last != 2 {
		t.Fatalf("a refused entry wrote: index %d", last)
	}
	req.JobModifyIndex = 1
	if r := apply(t, f, 5, structs.ScalingEventRegisterRequestType, req); r != nil {
		t.Fatalf("scaling entry: %v", r)
	}
	j, err := f.State().JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	events, err := f.State().ScalingEventsByJob(nil, job.Namespace, job.ID)
	must(t, err)
	if j.Version != 1 || j.TaskGroups[0].Count != 7 || len(events.ScalingEvents[job.TaskGroups[0].Name]) != 1 {
		t.Fatalf("after scaling: version %d count %d events %+v", j.Version, j.TaskGroups[0].Count, events)
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if got := hooks.calls[len(hooks.calls)-1]; got != "evals "+eval.ID {
		t.Fatalf("hooks %v", hooks.calls)
	}
}

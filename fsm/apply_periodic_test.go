package fsm

import (
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestApplyPeriodicLaunch: the entry registers the child with its
// evaluation (handed to the hooks) and records the launch; a launch not
// later than the recorded one is refused with code conflict and writes
// nothing; stopping the parent forgets the launch.
func TestApplyPeriodicLaunch(t *testing.T) {
	f, hooks := testFSM(t)
	parent := mock.BatchJob()
	parent.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "* * * * *", SpecType: structs.PeriodicSpecCron}
	if r := apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: parent}); r != nil {
		t.Fatalf("register: %v", r)
	}
	launch := func(index uint64, at time.Time) any {
		child := parent.Copy()
		child.ID, child.ParentID, child.Periodic = structs.PeriodicChildID(parent.ID, at), parent.ID, nil
		return apply(t, f, index, structs.PeriodicLaunchRequestType, &structs.PeriodicLaunchRequest{Job: child,
			Eval: mock.EvalFor(child), Launch: &structs.PeriodicLaunch{Namespace: parent.Namespace, ID: parent.ID, Launch: at}})
	}
	at := time.Unix(1700000060, 0).UTC()
	if r := launch(2, at); r != nil {
		t.Fatalf("launch: %v", r)
	}
	st := f.State()
	if l, err := st.PeriodicLaunchByID(nil, parent.Namespace, parent.ID); err != nil || !l.Launch.Equal(at) || l.ModifyIndex != 2 {
		t.Fatalf("launch record %+v, %v", l, err)
	}
	if _, err := st.JobByID(nil, parent.Namespace, structs.PeriodicChildID(parent.ID, at)); err != nil {
		t.Fatal(err)
	}
	if n := len(hooks.take()); n == 0 {
		t.Fatal("the child's evaluation did not reach the hooks")
	}
	for _, again := range []time.Time{at, at.Add(-time.Minute)} {
		r := launch(3, again)
		if err, ok := r.(error); !ok || structs.CodeOf(err) != structs.ErrCodeConflict {
			t.Fatalf("launch at %v again: %v, want a conflict", again, r)
		}
	}
	if idx, _ := f.State().Index("periodic_launch"); idx != 2 {
		t.Fatalf("refused launches wrote: index %d", idx)
	}
	if r := apply(t, f, 4, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: parent.ID,
		WriteRequest: structs.WriteRequest{Namespace: parent.Namespace}}); r != nil {
		t.Fatalf("deregister: %v", r)
	}
	if _, err := f.State().PeriodicLaunchByID(nil, parent.Namespace, parent.ID); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("launch record after stop: %v", err)
	}
	if j, _ := f.State().JobByID(nil, parent.Namespace, parent.ID); j.Status != structs.JobStatusDead {
		t.Fatalf("stopped periodic job status %q", j.Status)
	}
}

package fsm

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestApplyPoolAutoscale: an autoscaler of a missing pool is refused
// (not_found), an invalid one (invalid), and neither writes; the
// autoscaler's instance update writes instances and events; an operator's
// behaviour sets the instance's and survives the autoscaler's next write;
// a behaviour of an unknown instance is not_found; a delete removes the
// configuration.
func TestApplyPoolAutoscale(t *testing.T) {
	f, _ := testFSM(t)
	cfg := &structs.PoolAutoscaler{Pool: "burst", Enabled: true, Provider: "local", Max: 2,
		InstanceTypes: []*structs.InstanceType{{Name: "small", CPU: 1000, MemoryMB: 512}}}
	cfg.Canonicalize()
	upsert := func(index uint64, a *structs.PoolAutoscaler) any {
		return apply(t, f, index, structs.PoolAutoscalerUpsertRequestType, &structs.PoolAutoscalerUpsertRequest{Autoscaler: a})
	}
	if r, _ := upsert(5, cfg).(error); structs.CodeOf(r) != structs.ErrCodeNotFound {
		t.Fatalf("autoscaler of a missing pool: %v", r)
	}
	if r := apply(t, f, 6, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{{Name: "burst"}}}); r != nil {
		t.Fatal(r)
	}
	bad := cfg.Copy()
	bad.Max = 0
	if r, _ := upsert(7, bad).(error); structs.CodeOf(r) != structs.ErrCodeInvalid {
		t.Fatalf("invalid autoscaler: %v", r)
	}
	if r := upsert(8, cfg); r != nil {
		t.Fatal(r)
	}
	if a, err := f.State().PoolAutoscalerByPool(nil, "burst"); err != nil || a.CreateIndex != 8 || a.Max != 2 {
		t.Fatalf("stored: %+v %v", a, err)
	}
	inst := &structs.PoolInstance{ID: "i-1", Pool: "burst", Type: "small", State: structs.InstanceBooting, CreateTime: 1}
	update := func(index uint64, i *structs.PoolInstance, events ...*structs.PoolEvent) any {
		return apply(t, f, index, structs.PoolInstanceUpdateRequestType, &structs.PoolInstanceUpdateRequest{
			Instances: []*structs.PoolInstance{i}, Events: events})
	}
	if r := update(9, inst, &structs.PoolEvent{Pool: "burst", Type: structs.PoolEventCreate, InstanceID: "i-1", Message: "queue"}); r != nil {
		t.Fatal(r)
	}
	behave := func(index uint64, id, b string) any {
		return apply(t, f, index, structs.PoolInstanceBehaviorRequestType, &structs.PoolInstanceBehaviorRequest{InstanceID: id, Behavior: b})
	}
	if r := behave(10, "i-1", structs.InstanceBehaviorHold); r != nil {
		t.Fatal(r)
	}
	if r, _ := behave(11, "nope", structs.InstanceBehaviorHold).(error); structs.CodeOf(r) != structs.ErrCodeNotFound {
		t.Fatalf("behaviour of an unknown instance: %v", r)
	}
	if r, _ := behave(12, "i-1", "sleep").(error); structs.CodeOf(r) != structs.ErrCodeInvalid {
		t.Fatalf("unknown behaviour: %v", r)
	}
	booted := inst.Copy()
	booted.State, booted.Behavior = structs.InstanceRunning, structs.InstanceBehaviorRun
	if r := update(13, booted); r != nil {
		t.Fatal(r)
	}
	got, err := f.State().PoolInstanceByID(nil, "i-1")
	if err != nil || got.State != structs.InstanceRunning || got.Behavior != structs.InstanceBehaviorHold {
		t.Fatalf("instance: %+v %v", got, err)
	}
	if s, err := f.State().PoolAutoscaleStatusByPool(nil, "burst"); err != nil || len(s.Events) != 2 || s.Events[0].Type != structs.PoolEventBehavior {
		t.Fatalf("events: %+v %v", s, err)
	}
	if r := apply(t, f, 14, structs.PoolAutoscalerUpsertRequestType, &structs.PoolAutoscalerUpsertRequest{Delete: "burst"}); r != nil {
		t.Fatal(r)
	}
	if _, err := f.State().PoolAutoscalerByPool(nil, "burst"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("after delete: %v", err)
	}
}

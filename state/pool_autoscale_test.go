package state

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestPoolAutoscale: a configuration needs its pool and keeps a pool from
// being deleted; the autoscaler's instance writes keep the operator's
// behaviour; events are newest first and a quota event sets the back-off;
// a behaviour on an unknown instance is not_found.
func TestPoolAutoscale(t *testing.T) {
	s, err := NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	asg := &structs.PoolAutoscaler{Pool: "burst", Enabled: true, Provider: "local", Max: 2,
		InstanceTypes: []*structs.InstanceType{{Name: "small", CPU: 500, MemoryMB: 256}}}
	if err := s.UpsertPoolAutoscaler(10, &structs.PoolAutoscalerUpsertRequest{Autoscaler: asg}); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("autoscaler of a missing pool: %v", err)
	}
	if err := s.UpsertNodePools(11, []*structs.NodePool{{Name: "burst"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertPoolAutoscaler(12, &structs.PoolAutoscalerUpsertRequest{Autoscaler: asg}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNodePools(13, []string{"burst"}); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("delete an autoscaled pool: %v", err)
	}
	inst := &structs.PoolInstance{ID: "i-1", Pool: "burst", Type: "small", State: structs.InstanceBooting, CreateTime: 5}
	if err := s.UpdatePoolInstances(14, &structs.PoolInstanceUpdateRequest{Instances: []*structs.PoolInstance{inst},
		Events: []*structs.PoolEvent{{Pool: "burst", Time: 5, Type: structs.PoolEventCreate, InstanceID: "i-1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPoolInstanceBehavior(15, &structs.PoolInstanceBehaviorRequest{InstanceID: "i-1", Behavior: structs.InstanceBehaviorHold}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPoolInstanceBehavior(16, &structs.PoolInstanceBehaviorRequest{InstanceID: "nope", Behavior: structs.InstanceBehaviorHold}); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("behaviour of a missing instance: %v", err)
	}
	running := inst.Copy()
	running.State, running.Behavior = structs.InstanceRunning, structs.InstanceBehaviorRun
	if err := s.UpdatePoolInstances(17, &structs.PoolInstanceUpdateRequest{Instances: []*structs.PoolInstance{running},
		Events: []*structs.PoolEvent{{Pool: "burst", Time: 6, Type: structs.PoolEventQuota, QuotaBackoffUntil: 99}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.PoolInstanceByID(nil, "i-1")
	if err != nil || got.State != structs.InstanceRunning || got.Behavior != structs.InstanceBehaviorHold || got.CreateIndex != 14 || got.ModifyIndex != 17 {
		t.Fatalf("instance: %+v %v", got, err)
	}
	st, err := s.PoolAutoscaleStatusByPool(nil, "burst")
	if err != nil || len(st.Events) != 3 || st.Events[0].Type != structs.PoolEventQuota || st.Events[1].Type != structs.PoolEventBehavior || st.QuotaBackoffUntil != 99 {
		t.Fatalf("status: %+v %v", st, err)
	}
	if err := s.UpdatePoolInstances(18, &structs.PoolInstanceUpdateRequest{Remove: []string{"i-1"}}); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.PoolInstances(nil, "burst"); len(list) != 0 {
		t.Fatalf("removed instance still listed: %v", list)
	}
	if err := s.UpsertPoolAutoscaler(19, &structs.PoolAutoscalerUpsertRequest{Delete: "burst"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNodePools(20, []string{"burst"}); err != nil {
		t.Fatal(err)
	}
}

package fsm

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestApplySchedulerConfig: a set writes the row with its indexes; a
// check-and-set with a stale index is refused with code conflict and
// writes nothing; one with the stored index applies; an invalid
// configuration is refused.
func TestApplySchedulerConfig(t *testing.T) {
	f, _ := testFSM(t)
	st := f.State()
	if idx, c, err := st.SchedulerConfig(nil); err != nil || idx != 0 || !c.PreemptionConfig.SystemSchedulerEnabled ||
		c.PreemptionConfig.ServiceSchedulerEnabled || c.EffectiveAlgorithm() != structs.SchedulerAlgorithmBinpack {
		t.Fatalf("default: %d %+v %v", idx, c, err)
	}
	set := func(index uint64, c structs.SchedulerConfiguration, cas bool) any {
		return apply(t, f, index, structs.SchedulerConfigRequestType, &structs.SchedulerSetConfigRequest{Config: c, CAS: cas})
	}
	if r := set(5, structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmSpread}, false); r != nil {
		t.Fatalf("set: %v", r)
	}
	idx, c, err := f.State().SchedulerConfig(nil)
	if err != nil || idx != 5 || c.CreateIndex != 5 || c.SchedulerAlgorithm != structs.SchedulerAlgorithmSpread {
		t.Fatalf("after set: %d %+v %v", idx, c, err)
	}
	r := set(6, structs.SchedulerConfiguration{ModifyIndex: 4, PreemptionConfig: structs.PreemptionConfig{BatchSchedulerEnabled: true}}, true)
	if err, _ := r.(error); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("stale CAS: %v", r)
	}
	if r := set(7, structs.SchedulerConfiguration{ModifyIndex: 5, PreemptionConfig: structs.PreemptionConfig{BatchSchedulerEnabled: true}}, true); r != nil {
		t.Fatalf("CAS: %v", r)
	}
	idx, c, _ = f.State().SchedulerConfig(nil)
	if idx != 7 || c.CreateIndex != 5 || !c.PreemptionConfig.BatchSchedulerEnabled || c.EffectiveAlgorithm() != structs.SchedulerAlgorithmBinpack {
		t.Fatalf("after CAS: %d %+v", idx, c)
	}
	r = set(8, structs.SchedulerConfiguration{SchedulerAlgorithm: "worst"}, false)
	if err, _ := r.(error); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("invalid: %v", r)
	}
	if idx, _, _ := f.State().SchedulerConfig(nil); idx != 7 {
		t.Fatalf("an invalid configuration was written: index %d", idx)
	}
}

// TestApplyNodePools: an upsert writes the pools; a built-in or invalid
// one is refused and writes nothing; a delete of a pool in use is refused
// with code conflict, of an unused one applies.
func TestApplyNodePools(t *testing.T) {
	f, _ := testFSM(t)
	upsert := func(index uint64, pools ...*structs.NodePool) any {
		return apply(t, f, index, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: pools})
	}
	del := func(index uint64, names ...string) any {
		return apply(t, f, index, structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: names})
	}
	if r := upsert(5, &structs.NodePool{Name: "gpu"}, &structs.NodePool{Name: "arm"}); r != nil {
		t.Fatalf("upsert: %v", r)
	}
	if r := upsert(6, &structs.NodePool{Name: "x"}, &structs.NodePool{Name: "all"}); structs.CodeOf(r.(error)) != structs.ErrCodeInvalid {
		t.Fatalf("upsert with a built-in pool: %v", r)
	}
	if _, err := f.State().NodePoolByName(nil, "x"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("a refused upsert wrote x: %v", err)
	}
	job := mock.Job()
	job.NodePool = "gpu"
	if r := apply(t, f, 7, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}); r != nil {
		t.Fatalf("register: %v", r)
	}
	if r := del(8, "arm", "gpu"); structs.CodeOf(r.(error)) != structs.ErrCodeConflict {
		t.Fatalf("delete a pool in use: %v", r)
	}
	if _, err := f.State().NodePoolByName(nil, "arm"); err != nil {
		t.Fatalf("a refused delete removed arm: %v", err)
	}
	if r := del(9, "arm"); r != nil {
		t.Fatalf("delete: %v", r)
	}
	if _, err := f.State().NodePoolByName(nil, "arm"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("arm after delete: %v", err)
	}
}

// TestApplyNodeQuarantine: a quarantine entry writes the row and makes the
// node ineligible with its event; one for a node that is gone is refused
// (not_found) and writes nothing; one with a null fault is refused.
func TestApplyNodeQuarantine(t *testing.T) {
	f, _ := testFSM(t)
	node := mock.Node()
	if r := apply(t, f, 5, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}); r != nil {
		t.Fatalf("register: %v", r)
	}
	req := &structs.NodeQuarantineUpdateRequest{
		Quarantine: &structs.NodeQuarantine{NodeID: node.ID, Quarantined: true,
			Faults: []*structs.NodeFault{{NodeID: node.ID, Kind: structs.NodeFaultDriverStart}}},
		Eligibility: structs.NodeSchedulingIneligible,
		NodeEvent:   &structs.NodeEvent{Message: "Node quarantined", Subsystem: "Quarantine"},
	}
	if r := apply(t, f, 6, structs.NodeQuarantineUpdateRequestType, req); r != nil {
		t.Fatalf("quarantine: %v", r)
	}
	n, _ := f.State().NodeByID(nil, node.ID)
	q, err := f.State().NodeQuarantineByID(nil, node.ID)
	if err != nil || !q.Quarantined || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("after quarantine: %+v %v %s", q, err, n.SchedulingEligibility)
	}
	gone := &structs.NodeQuarantineUpdateRequest{Quarantine: &structs.NodeQuarantine{NodeID: "gone", Quarantined: true}}
	if r, _ := apply(t, f, 7, structs.NodeQuarantineUpdateRequestType, gone).(error); structs.CodeOf(r) != structs.ErrCodeNotFound {
		t.Fatalf("missing node: %v", r)
	}
	null := &structs.NodeQuarantineUpdateRequest{Quarantine: &structs.NodeQuarantine{NodeID: node.ID, Faults: []*structs.NodeFault{nil}}}
	if r, _ := apply(t, f, 8, structs.NodeQuarantineUpdateRequestType, null).(error); r == nil {
		t.Fatal("a null fault was applied")
	}
	if q, _ := f.State().NodeQuarantineByID(nil, node.ID); q.ModifyIndex != 6 {
		t.Fatalf("a refused entry wrote the row: %+v", q)
	}
}

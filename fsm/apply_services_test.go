package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestApplyServiceRegistrations drives the three service entries through
// Apply, then a snapshot and restore that keeps the registrations.
func TestApplyServiceRegistrations(t *testing.T) {
	f, _ := testFSM(t)
	st := f.State()
	node := mock.Node()
	job := mock.Job()
	must(t, st.UpsertNode(1, node, nil))
	must(t, st.UpsertJob(2, job, nil))
	a1, a2 := mock.Alloc(job, node), mock.Alloc(job, node)
	a1.Job, a2.Job = nil, nil
	must(t, st.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a1, a2}}))
	reg := func(a *structs.Allocation, svc string) *structs.ServiceRegistration {
		return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "web", "web", svc, "http"),
			ServiceName: svc, Namespace: a.Namespace, NodeID: a.NodeID, JobID: a.JobID, AllocID: a.ID,
			Address: "127.0.0.1", Port: 8080}
	}
	regs := []*structs.ServiceRegistration{reg(a1, "web"), reg(a1, "admin"), reg(a2, "web")}
	if r := apply(t, f, 4, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: regs}); r != nil {
		t.Fatalf("upsert: %v", r)
	}
	data := persist(t, f)
	g, _ := testFSM(t)
	must(t, g.Restore(io.NopCloser(bytes.NewReader(data))))
	sameState(t, f.State(), g.State())
	if got, _ := g.State().ServiceRegistrations(nil); len(got) != 3 {
		t.Fatalf("restored %d registrations, want 3", len(got))
	}

	r := apply(t, f, 5, structs.ServiceRegistrationDeleteByIDRequestType, &structs.ServiceRegistrationDeleteByIDRequest{ID: "missing"})
	if err, _ := r.(error); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("delete of a missing registration = %v", r)
	}
	if r := apply(t, f, 6, structs.ServiceRegistrationDeleteByIDRequestType, &structs.ServiceRegistrationDeleteByIDRequest{ID: regs[1].ID}); r != nil {
		t.Fatalf("delete: %v", r)
	}
	if r := apply(t, f, 7, structs.ServiceRegistrationDeleteByAllocIDsRequestType,
		&structs.ServiceRegistrationDeleteByAllocIDsRequest{AllocIDs: []string{a1.ID}}); r != nil {
		t.Fatalf("delete by alloc: %v", r)
	}
	left, _ := f.State().ServiceRegistrations(nil)
	if len(left) != 1 || left[0].AllocID != a2.ID {
		t.Fatalf("left %+v", left)
	}
}

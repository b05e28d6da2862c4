package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func regFor(a *structs.Allocation, service string, port int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "web", "web", service, "http"),
		ServiceName: service, Namespace: a.Namespace, NodeID: a.NodeID, Datacenter: "dc1",
		JobID: a.JobID, AllocID: a.ID, Tags: []string{"t"}, Address: "10.0.0.1", Port: port}
}

// svcFixture stores a job with three allocations on two nodes and one
// registration per allocation.
func svcFixture(t *testing.T) (*StateStore, *structs.Job, []*structs.Node, []*structs.Allocation) {
	s := testStore(t)
	job := mock.Job()
	nodes := []*structs.Node{mock.Node(), mock.Node()}
	must(t, s.UpsertNode(2, nodes[0], nil))
	must(t, s.UpsertNode(3, nodes[1], nil))
	must(t, s.UpsertJob(4, job, nil))
	placed := planFor(job, nodes, 3)
	must(t, s.UpsertPlanResults(5, &structs.ApplyPlanResultsRequest{AllocsUpdated: placed}))
	regs := make([]*structs.ServiceRegistration, len(placed))
	for i, a := range placed {
		regs[i] = regFor(a, "web", 20000+i)
	}
	must(t, s.UpsertServiceRegistrations(6, regs))
	return s, job, nodes, placed
}

func countRegs(t *testing.T, s *StateStore) int {
	t.Helper()
	all, err := s.ServiceRegistrations(nil)
	must(t, err)
	return len(all)
}

func TestServiceRegistrationsUpsertAndRead(t *testing.T) {
	s, job, nodes, placed := svcFixture(t)
	byName, err := s.ServiceRegistrationsByName(nil, job.Namespace, "web")
	must(t, err)
	if len(byName) != 3 || byName[0].CreateIndex != 6 || byName[0].ModifyIndex != 6 {
		t.Fatalf("by name: %d, %+v", len(byName), byName[0])
	}
	if idx, _ := s.Index(TableServiceRegs); idx != 6 {
		t.Fatalf("table index %d", idx)
	}
	// Registering the same again writes nothing.
	must(t, s.UpsertServiceRegistrations(7, []*structs.ServiceRegistration{regFor(placed[0], "web", 20000)}))
	if idx, _ := s.Index(TableServiceRegs); idx != 6 {
		t.Fatalf("an unchanged registration was rewritten (index %d)", idx)
	}
	// A change keeps CreateIndex.
	must(t, s.UpsertServiceRegistrations(8, []*structs.ServiceRegistration{regFor(placed[0], "web", 30000)}))
	r, err := s.ServiceRegistrationByID(nil, regFor(placed[0], "web", 0).ID)
	must(t, err)
	if r.Port != 30000 || r.CreateIndex != 6 || r.ModifyIndex != 8 {
		t.Fatalf("updated: %+v", r)
	}
	byAlloc, _ := s.ServiceRegistrationsByAllocID(nil, placed[1].ID)
	byJob, _ := s.ServiceRegistrationsByJobID(nil, job.Namespace, job.ID)
	byNode, _ := s.ServiceRegistrationsByNodeID(nil, nodes[0].ID)
	if len(byAlloc) != 1 || len(byJob) != 3 || len(byNode) != 2 {
		t.Fatalf("by alloc %d, job %d, node %d", len(byAlloc), len(byJob), len(byNode))
	}
	other, _ := s.ServiceRegistrationsByName(nil, "other", "web")
	if len(other) != 0 {
		t.Fatal("a name lookup crossed namespaces")
	}
	// Unknown allocations, another node's claim and a wrong shape are
	// skipped.
	ghost := regFor(mock.Alloc(job, nodes[0]), "ghost", 1)
	wrongNode := regFor(placed[0], "web2", 1)
	wrongNode.NodeID = nodes[1].ID
	bad := regFor(placed[0], "", 1)
	// An ID must start with its own allocation's prefix: the store finds
	// an allocation's registrations by it.
	foreignID := regFor(placed[0], "web3", 1)
	foreignID.ID = regFor(placed[1], "web3", 1).ID
	must(t, s.UpsertServiceRegistrations(9, []*structs.ServiceRegistration{ghost, wrongNode, bad, foreignID}))
	if n := countRegs(t, s); n != 3 {
		t.Fatalf("%d registrations after skipped writes, want 3", n)
	}
	stubs, _ := s.ServiceRegistrationsByNamespace(nil, "*")
	list := ServiceRegistrationStubs(stubs)
	if len(list) != 1 || len(list[0].Services) != 1 || list[0].Services[0].ServiceName != "web" || len(list[0].Services[0].Tags) != 1 {
		t.Fatalf("stubs %+v", list)
	}
}

func TestServiceRegistrationsDeletes(t *testing.T) {
	s, job, nodes, placed := svcFixture(t)
	id := regFor(placed[0], "web", 0).ID
	if err := s.DeleteServiceRegistrationByID(10, "other", id); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("delete in another namespace: %v", err)
	}
	must(t, s.DeleteServiceRegistrationByID(11, job.Namespace, id))
	if err := s.DeleteServiceRegistrationByID(12, job.Namespace, id); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("second delete: %v", err)
	}
	must(t, s.DeleteServiceRegistrationsByAllocIDs(13, []string{placed[1].ID}))
	if n := countRegs(t, s); n != 1 {
		t.Fatalf("%d left, want 1", n)
	}
	_ = nodes
}

// TestServiceRegistrationsEndWithTheirAllocation: a registration goes in
// the same write that makes its allocation terminal (client status,
// desired stop), purges its job or takes its node down, and a watch on
// it fires.
func TestServiceRegistrationsEndWithTheirAllocation(t *testing.T) {
	t.Run("client status", func(t *testing.T) {
		s, _, _, placed := svcFixture(t)
		ws := memdb.NewWatchSet()
		_, err := s.ServiceRegistrationsByAllocID(ws, placed[0].ID)
		must(t, err)
		must(t, s.UpdateAllocsFromClient(10, []*structs.Allocation{{ID: placed[0].ID, ClientStatus: structs.AllocClientStatusFailed}}, nil))
		if ws.Watch(time.After(time.Second)) {
			t.Fatal("watch did not fire")
		}
		if got, _ := s.ServiceRegistrationsByAllocID(nil, placed[0].ID); len(got) != 0 || countRegs(t, s) != 2 {
			t.Fatalf("left %d for the failed allocation, %d in all", len(got), countRegs(t, s))
		}
		// A late registration for the failed allocation is skipped.
		must(t, s.UpsertServiceRegistrations(11, []*structs.ServiceRegistration{regFor(placed[0], "web", 1)}))
		if countRegs(t, s) != 2 {
			t.Fatal("a terminal allocation was registered again")
		}
	})
	t.Run("desired stop", func(t *testing.T) {
		s, _, _, placed := svcFixture(t)
		must(t, s.UpsertPlanResults(10, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{
			{ID: placed[2].ID, DesiredStatus: structs.AllocDesiredStatusStop}}}))
		if got, _ := s.ServiceRegistrationsByAllocID(nil, placed[2].ID); len(got) != 0 || countRegs(t, s) != 2 {
			t.Fatalf("left %d for the stopped allocation", len(got))
		}
	})
	t.Run("job purge", func(t *testing.T) {
		s, job, _, _ := svcFixture(t)
		must(t, s.DeregisterJob(10, job.Namespace, job.ID, false, 0, nil))
		if countRegs(t, s) != 3 {
			t.Fatal("a stop without purge removed registrations (the allocations still run)")
		}
		must(t, s.DeregisterJob(11, job.Namespace, job.ID, true, 0, nil))
		if countRegs(t, s) != 0 {
			t.Fatal("purge left registrations")
		}
	})
	t.Run("node down", func(t *testing.T) {
		s, _, nodes, _ := svcFixture(t)
		must(t, s.UpdateNodeStatus(10, nodes[0].ID, structs.NodeStatusDown, 1, nil, nil))
		if got, _ := s.ServiceRegistrationsByNodeID(nil, nodes[0].ID); len(got) != 0 || countRegs(t, s) != 1 {
			t.Fatalf("left %d on the down node, %d in all", len(got), countRegs(t, s))
		}
	})
	t.Run("node deleted", func(t *testing.T) {
		s, _, nodes, _ := svcFixture(t)
		must(t, s.DeleteNodes(10, []string{nodes[1].ID}))
		if countRegs(t, s) != 2 {
			t.Fatalf("%d left, want 2", countRegs(t, s))
		}
	})
}

package server_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// servicesFixture runs a server with two nodes and a job of two
// allocations on each, and returns the allocations.
func servicesFixture(t *testing.T) (*server.Server, []*structs.Node, []*structs.Allocation) {
	t.Helper()
	s := schedServer(t, 1)
	nodes := []*structs.Node{mock.Node(), mock.Node()}
	for _, n := range nodes {
		registerNode(t, s, n)
	}
	job := smallJob("web", 4)
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string {
		if n := len(liveAllocs(s.State(), job.Namespace, job.ID)); n != 4 {
			return "allocations not placed"
		}
		return ""
	})
	return s, nodes, liveAllocs(s.State(), job.Namespace, job.ID)
}

func nodeOf(nodes []*structs.Node, id string) *structs.Node {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func svcReg(a *structs.Allocation, name string, port int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "web", "web", name, "http"),
		ServiceName: name, Namespace: a.Namespace, NodeID: a.NodeID, Datacenter: "dc1", JobID: a.JobID,
		AllocID: a.ID, Tags: []string{"v1"}, Address: "10.0.0.1", Port: port}
}

func TestServiceRegistrationEndpoints(t *testing.T) {
	s, nodes, allocs := servicesFixture(t)
	a := allocs[0]
	node := nodeOf(nodes, a.NodeID)
	var other *structs.Node
	for _, n := range nodes {
		if n.ID != node.ID {
			other = n
		}
	}
	upsert := func(secret string, regs ...*structs.ServiceRegistration) error {
		var resp structs.GenericResponse
		return s.RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{Services: regs,
			WriteRequest: structs.WriteRequest{AuthToken: secret}}, &resp)
	}
	// Another node's secret, or none, is refused.
	if err := upsert(other.SecretID, svcReg(a, "web", 8080)); structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("upsert with another node's secret: %v", err)
	}
	if err := upsert("", svcReg(a, "web", 8080)); structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("upsert without a secret: %v", err)
	}
	bad := svcReg(a, "", 8080)
	if err := upsert(node.SecretID, bad); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("invalid registration: %v", err)
	}
	for _, al := range allocs {
		if err := upsert(nodeOf(nodes, al.NodeID).SecretID, svcReg(al, "web", 8080)); err != nil {
			t.Fatal(err)
		}
	}

	var list structs.ServiceRegistrationListResponse
	if err := s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Services) != 1 || list.Services[0].Services[0].ServiceName != "web" || list.Index == 0 {
		t.Fatalf("list: %+v", list)
	}
	var byName structs.ServiceRegistrationByNameResponse
	if err := s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "web"}, &byName); err != nil {
		t.Fatal(err)
	}
	if len(byName.Services) != 4 {
		t.Fatalf("by name: %d", len(byName.Services))
	}
	// choose is stable per key and picks n.
	var c1, c2 structs.ServiceRegistrationByNameResponse
	must(t, s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "web", Choose: "2|abc"}, &c1))
	must(t, s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "web", Choose: "2|abc"}, &c2))
	if len(c1.Services) != 2 || c1.Services[0].ID != c2.Services[0].ID || c1.Services[1].ID != c2.Services[1].ID {
		t.Fatalf("choose: %d, not stable", len(c1.Services))
	}
	err := s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "web", Choose: "x"}, &c1)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("malformed choose: %v", err)
	}
	var byJob structs.JobServiceRegistrationsResponse
	must(t, s.RPC("Job.GetServiceRegistrations", &structs.JobServiceRegistrationsRequest{JobID: "web"}, &byJob))
	if len(byJob.Services) != 4 {
		t.Fatalf("by job: %d", len(byJob.Services))
	}
	must(t, s.RPC("Job.GetServiceRegistrations", &structs.JobServiceRegistrationsRequest{JobID: "nope"}, &byJob))
	if byJob.Services != nil {
		t.Fatal("a missing job has services")
	}

	// A blocking read by allocation wakes when the allocation's client
	// reports it failed: the registration goes in the same write.
	var byAlloc structs.AllocServiceRegistrationsResponse
	must(t, s.RPC("Alloc.GetServiceRegistrations", &structs.AllocServiceRegistrationsRequest{AllocID: a.ID}, &byAlloc))
	if len(byAlloc.Services) != 1 {
		t.Fatalf("by alloc: %d", len(byAlloc.Services))
	}
	done := make(chan error, 1)
	var blocked structs.AllocServiceRegistrationsResponse
	go func() {
		done <- s.RPC("Alloc.GetServiceRegistrations", &structs.AllocServiceRegistrationsRequest{AllocID: a.ID,
			QueryOptions: structs.QueryOptions{MinQueryIndex: byAlloc.Index, MaxQueryTime: 5 * time.Second}}, &blocked)
	}()
	time.Sleep(50 * time.Millisecond)
	failed := &structs.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: structs.AllocClientStatusFailed}
	var uresp structs.GenericResponse
	must(t, s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{failed},
		NodeSecrets: map[string]string{node.ID: node.SecretID}, WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &uresp))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(blocked.Services) != 0 || blocked.Index <= byAlloc.Index {
		t.Fatalf("after the failure: %d services at index %d", len(blocked.Services), blocked.Index)
	}
	// ... and a late registration for it is dropped.
	must(t, upsert(node.SecretID, svcReg(a, "late", 1)))
	if regs, _ := s.State().ServiceRegistrationsByAllocID(nil, a.ID); len(regs) != 0 {
		t.Fatal("a failed allocation was registered again")
	}

	// Deletes: by ID (user), by allocation (the node).
	var dresp structs.GenericResponse
	id := svcReg(allocs[1], "web", 0).ID
	must(t, s.RPC("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{ID: id}, &dresp))
	if err := s.RPC("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{ID: id}, &dresp); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("second delete: %v", err)
	}
	a2 := allocs[2]
	n2 := nodeOf(nodes, a2.NodeID)
	wrong := other
	if n2.ID == other.ID {
		wrong = node
	}
	err = s.RPC("ServiceRegistration.DeleteByAllocIDs", &structs.ServiceRegistrationDeleteByAllocIDsRequest{AllocIDs: []string{a2.ID},
		WriteRequest: structs.WriteRequest{AuthToken: wrong.SecretID}}, &dresp)
	if structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("delete by another node: %v", err)
	}
	must(t, s.RPC("ServiceRegistration.DeleteByAllocIDs", &structs.ServiceRegistrationDeleteByAllocIDsRequest{AllocIDs: []string{a2.ID},
		WriteRequest: structs.WriteRequest{AuthToken: n2.SecretID}}, &dresp))
	left, _ := s.State().ServiceRegistrations(nil)
	if len(left) != 1 || left[0].AllocID != allocs[3].ID {
		t.Fatalf("left: %d", len(left))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestServiceRegistrationACL: with ACLs on, reads need read-job, a user's
// delete needs submit-job, and writes by a node need its own secret (a
// user token is refused).
func TestServiceRegistrationACL(t *testing.T) {
	s, err := server.NewServer(&server.Config{Name: "dev", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond, NumSchedulers: 1, LeaderWorkerFraction: 1,
		ACLEnabled: true})
	must(t, err)
	t.Cleanup(func() { s.Shutdown() })
	var boot structs.ACLTokenUpsertResponse
	waitFor(t, 10*time.Second, func() string {
		if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
			return err.Error()
		}
		return ""
	})
	root := boot.Tokens[0].SecretID
	wr := func(tok string) structs.WriteRequest { return structs.WriteRequest{AuthToken: tok} }
	qo := func(tok string) structs.QueryOptions { return structs.QueryOptions{AuthToken: tok} }
	var gr structs.GenericResponse
	must(t, s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "read", Rules: `namespace "default" { policy = "read" }`},
		{Name: "write", Rules: `namespace "default" { policy = "write" }`}}, WriteRequest: wr(root)}, &gr))
	var tr structs.ACLTokenUpsertResponse
	must(t, s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: structs.ACLClientToken, Policies: []string{"read"}},
		{Type: structs.ACLClientToken, Policies: []string{"write"}}}, WriteRequest: wr(root)}, &tr))
	reader, writer := tr.Tokens[0].SecretID, tr.Tokens[1].SecretID

	node := mock.Node()
	var nr structs.NodeUpdateResponse
	must(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: wr(node.SecretID)}, &nr))
	var jr structs.JobRegisterResponse
	must(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: smallJob("web", 2), WriteRequest: wr(root)}, &jr))
	waitFor(t, 10*time.Second, func() string {
		if len(liveAllocs(s.State(), "default", "web")) != 2 {
			return "not placed"
		}
		return ""
	})
	allocs := liveAllocs(s.State(), "default", "web")
	up := func(tok string, reg *structs.ServiceRegistration) error {
		return s.RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{
			Services: []*structs.ServiceRegistration{reg}, WriteRequest: wr(tok)}, &gr)
	}
	if err := up(writer, svcReg(allocs[0], "web", 1)); !isDenied(err) {
		t.Fatalf("upsert with a user token: %v", err)
	}
	must(t, up(node.SecretID, svcReg(allocs[0], "web", 1)))
	must(t, up(node.SecretID, svcReg(allocs[1], "web", 2)))

	var list structs.ServiceRegistrationListResponse
	if err := s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{QueryOptions: qo("")}, &list); !isDenied(err) {
		t.Fatalf("anonymous list: %v", err)
	}
	must(t, s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{QueryOptions: qo(reader)}, &list))
	var byAlloc structs.AllocServiceRegistrationsResponse
	must(t, s.RPC("Alloc.GetServiceRegistrations", &structs.AllocServiceRegistrationsRequest{AllocID: allocs[0].ID, QueryOptions: qo(reader)}, &byAlloc))
	if len(byAlloc.Services) != 1 {
		t.Fatalf("by alloc: %d", len(byAlloc.Services))
	}
	del := func(tok string, a *structs.Allocation) error {
		return s.RPC("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{
			ID: svcReg(a, "web", 0).ID, WriteRequest: wr(tok)}, &gr)
	}
	if err := del(reader, allocs[0]); !isDenied(err) {
		t.Fatalf("delete with read-job only: %v", err)
	}
	if err := del("not-a-token", allocs[0]); !isDenied(err) {
		t.Fatalf("delete with an unknown secret: %v", err)
	}
	must(t, del(node.SecretID, allocs[0]))
	must(t, del(writer, allocs[1]))
}

// Registrations sent at once by many nodes are group-committed: every
// call succeeds, every registration is stored, and the calls share Raft
// entries (fewer entries than calls).
func TestServiceUpsertsGroupCommit(t *testing.T) {
	s, nodes, allocs := servicesFixture(t)
	before, _ := s.State().LatestIndex()
	const perAlloc = 20
	errs := make(chan error, len(allocs)*perAlloc)
	for _, al := range allocs {
		for i := range perAlloc {
			go func() {
				var resp structs.GenericResponse
				errs <- s.RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{
					Services:     []*structs.ServiceRegistration{svcReg(al, "svc"+strconv.Itoa(i), 8080)},
					WriteRequest: structs.WriteRequest{AuthToken: nodeOf(nodes, al.NodeID).SecretID}}, &resp)
			}()
		}
	}
	for range len(allocs) * perAlloc {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	regs, err := s.State().ServiceRegistrations(nil)
	if err != nil || len(regs) != len(allocs)*perAlloc {
		t.Fatalf("%d registrations stored (%v), want %d", len(regs), err, len(allocs)*perAlloc)
	}
	after, _ := s.State().LatestIndex()
	if calls := uint64(len(allocs) * perAlloc); after-before >= calls {
		t.Fatalf("%d calls took %d Raft entries: not group-committed", calls, after-before)
	}
}

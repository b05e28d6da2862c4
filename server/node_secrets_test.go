package server_test

import (
	"time"

	"github.com/drover-project/drover/state/mock"
	"testing"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// clientUpdate is the Node.UpdateAlloc a client would send for updates:
// with the secret of every node the updated allocations (as st holds
// them) are on.
func clientUpdate(t *testing.T, st *state.StateStore, updates ...*structs.Allocation) *structs.AllocUpdateRequest {
	t.Helper()
	req := &structs.AllocUpdateRequest{Alloc: updates, NodeSecrets: map[string]string{}}
	for _, u := range updates {
		a, err := st.AllocByID(nil, u.ID)
		if err != nil {
			t.Fatalf("update of %s: %v", u.ID, err)
		}
		node, err := st.NodeByID(nil, a.NodeID)
		if err != nil {
			t.Fatalf("node of %s: %v", u.ID, err)
		}
		req.NodeSecrets[node.ID] = node.SecretID
	}
	return req
}

// A node's calls need its secret: a heartbeat, an allocation update (for
// every node the updates touch) and the allocation watch without it, or
// with another node's, are refused with permission_denied and write
// nothing.
func TestNodeCallsNeedTheNodeSecret(t *testing.T) {
	s := schedServer(t, 2)
	st := s.State()
	node, other := mock.Node(), mock.Node()
	registerNode(t, s, node)
	registerNode(t, s, other)
	job := smallJob("secrets", 4)
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	live := liveAllocs(st, job.Namespace, job.ID)
	var onNode, onOther *structs.Allocation
	for _, a := range live {
		if a.NodeID == node.ID {
			onNode = a
		} else {
			onOther = a
		}
	}
	if onNode == nil || onOther == nil {
		t.Fatalf("want allocations on both nodes, got %d", len(live))
	}
	before, _ := st.LatestIndex()

	denied := func(what string, err error) {
		t.Helper()
		if structs.CodeOf(err) != structs.ErrCodePermissionDenied {
			t.Fatalf("%s: err = %v, want permission_denied", what, err)
		}
	}
	for _, secret := range []string{"", "wrong", other.SecretID} {
		var resp structs.NodeUpdateResponse
		denied("heartbeat with "+secret, s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
			NodeID: node.ID, SecretID: secret, Status: structs.NodeStatusDown}, &resp))
		var watch structs.NodeClientAllocsResponse
		denied("watch with "+secret, s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: secret}, &watch))
	}
	complete := func(a *structs.Allocation) *structs.Allocation {
		return &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete}
	}
	for name, req := range map[string]*structs.AllocUpdateRequest{
		"no secrets":     {Alloc: []*structs.Allocation{complete(onNode)}},
		"wrong secret":   {Alloc: []*structs.Allocation{complete(onNode)}, NodeSecrets: map[string]string{node.ID: "wrong"}},
		"other's secret": {Alloc: []*structs.Allocation{complete(onNode)}, NodeSecrets: map[string]string{other.ID: other.SecretID}},
		"one node of two": {Alloc: []*structs.Allocation{complete(onNode), complete(onOther)},
			NodeSecrets: map[string]string{node.ID: node.SecretID}},
		"one wrong of two": {Alloc: []*structs.Allocation{complete(onNode)},
			NodeSecrets: map[string]string{node.ID: node.SecretID, other.ID: "wrong"}},
	} {
		denied("update, "+name, s.RPC("Node.UpdateAlloc", req, &structs.GenericResponse{}))
	}
	if after, _ := st.LatestIndex(); after != before {
		t.Fatalf("refused calls wrote: index %d -> %d", before, after)
	}
	if got, _ := st.NodeByID(nil, node.ID); got.Status != structs.NodeStatusReady {
		t.Fatalf("node status %q after refused heartbeats", got.Status)
	}

	// With the secrets, the same calls go through.
	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID,
		Status: structs.NodeStatusReady}, &resp); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Node.UpdateAlloc", clientUpdate(t, st, complete(onNode), complete(onOther)), &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.AllocByID(nil, onOther.ID); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %s is %q after an update with its node's secret", onOther.ID, got.ClientStatus)
	}
}

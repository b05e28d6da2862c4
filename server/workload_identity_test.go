package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestWorkloadIdentity: a client agent gets its task's identity with its
// node's secret, for allocations on its node only; the identity reads
// and lists its job's variable paths and nothing else, is refused once
// altered, and stops working when its allocation finishes.
func TestWorkloadIdentity(t *testing.T) {
	s := schedServer(t, 1, func(cfg *server.Config) { cfg.ACLEnabled = true })
	waitKeyring(t, s)
	var boot structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatal(err)
	}
	root := boot.Tokens[0].SecretID
	node, other := mock.Node(), mock.Node()
	for _, n := range []*structs.Node{node, other} {
		var resp structs.NodeUpdateResponse
		if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n, WriteRequest: structs.WriteRequest{AuthToken: n.SecretID}}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	job := smallJob("web", 1)
	job.TaskGroups[0].Constraints = append(job.TaskGroups[0].Constraints, &structs.Constraint{LTarget: "${node.unique.id}", RTarget: node.ID, Operand: "="})
	var jr structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: root}}, &jr); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	alloc := liveAllocs(st, job.Namespace, job.ID)[0]
	group, task := alloc.TaskGroup, job.TaskGroups[0].Tasks[0].Name

	sign := func(nodeID, secret, allocID string) (*structs.AllocIdentitiesResponse, error) {
		var resp structs.AllocIdentitiesResponse
		err := s.RPC("Alloc.SignIdentities", &structs.AllocIdentitiesRequest{NodeID: nodeID, SecretID: secret, AllocID: allocID,
			Tasks: []string{task}, QueryOptions: structs.QueryOptions{AuthToken: secret}}, &resp)
		return &resp, err
	}
	if _, err := sign(node.ID, "wrong", alloc.ID); structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := sign(other.ID, other.SecretID, alloc.ID); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("another node's allocation: %v", err)
	}
	if _, err := sign(node.ID, root, alloc.ID); err == nil {
		t.Fatal("a management token is no node secret")
	}
	resp, err := sign(node.ID, node.SecretID, alloc.ID)
	if err != nil || len(resp.Identities) != 1 {
		t.Fatalf("sign: %+v %v", resp, err)
	}
	wi := resp.Identities[0].JWT

	base := "nomad/jobs/" + job.ID
	own := []string{base, base + "/" + group, base + "/" + group + "/" + task}
	for _, p := range append(own, "nomad/jobs/other", base+"/"+group+"/other-task", "app/x") {
		var ar structs.VariablesApplyResponse
		if err := s.RPC("Variables.Apply", &structs.VariablesApplyRequest{Op: structs.VarOpSet,
			Var:          &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: p}, Items: structs.VariableItems{"path": p}},
			WriteRequest: structs.WriteRequest{AuthToken: root}}, &ar); err != nil {
			t.Fatal(err)
		}
	}
	read := func(token, path string) (*structs.VariableDecrypted, error) {
		var rr structs.VariablesReadResponse
		err := s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: path, QueryOptions: structs.QueryOptions{AuthToken: token}}, &rr)
		return rr.Data, err
	}
	for _, p := range own {
		if v, err := read(wi, p); err != nil || v.Items["path"] != p {
			t.Errorf("identity reads %s: %+v %v", p, v, err)
		}
	}
	for _, p := range []string{"nomad/jobs/other", base + "/" + group + "/other-task", "app/x"} {
		if _, err := read(wi, p); !isDenied(err) {
			t.Errorf("identity reads %s: %v, want permission denied", p, err)
		}
	}
	var ar structs.VariablesApplyResponse
	if err := s.RPC("Variables.Apply", &structs.VariablesApplyRequest{Op: structs.VarOpSet,
		Var:          &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: base}, Items: structs.VariableItems{"k": "v"}},
		WriteRequest: structs.WriteRequest{AuthToken: wi}}, &ar); !isDenied(err) {
		t.Errorf("identity writes: %v", err)
	}
	var lr structs.VariablesListResponse
	if err := s.RPC("Variables.List", &structs.VariablesListRequest{QueryOptions: structs.QueryOptions{AuthToken: wi, Prefix: "nomad/jobs/"}}, &lr); err != nil {
		t.Fatal(err)
	}
	if len(lr.Data) != 3 {
		t.Errorf("identity lists %d variables, want its 3", len(lr.Data))
	}
	// Key material is for servers: not for an identity, a node's secret
	// or no token.
	active, _ := st.ActiveRootKeyMeta(nil)
	for _, tok := range []string{wi, node.SecretID, ""} {
		var kr structs.KeyringGetRootKeyResponse
		err := s.RPC("Keyring.Get", &structs.KeyringGetRootKeyRequest{KeyID: active.KeyID, QueryOptions: structs.QueryOptions{AuthToken: tok}}, &kr)
		if err == nil || kr.Key != nil {
			t.Errorf("Keyring.Get with token %.12q: %v", tok, err)
		}
	}
	// Not an ACL token: no job reads, no self.
	var jresp structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{AuthToken: wi}}, &jresp); !isDenied(err) {
		t.Errorf("identity reads the job: %v", err)
	}
	// Altered: any byte of the signature or claims.
	parts := strings.Split(wi, ".")
	flipped := parts[0] + "." + parts[1] + "." + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, parts[2][:1]) + parts[2][1:]
	if _, err := read(flipped, base); structs.CodeOf(err) != structs.ErrCodeTokenNotFound {
		t.Errorf("altered signature: %v", err)
	}
	// After a rotation the identity still verifies (its key is kept).
	var rot structs.KeyringRotateRootKeyResponse
	if err := s.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{WriteRequest: structs.WriteRequest{AuthToken: root}}, &rot); err != nil {
		t.Fatal(err)
	}
	if _, err := read(wi, base); err != nil {
		t.Errorf("after rotation: %v", err)
	}
	// The allocation finishes: its identity no longer works.
	up := clientUpdate(t, st, &structs.Allocation{ID: alloc.ID, ClientStatus: structs.AllocClientStatusComplete})
	up.AuthToken = node.SecretID
	var gr structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", up, &gr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string {
		if _, err := read(wi, base); structs.CodeOf(err) != structs.ErrCodeTokenNotFound {
			return "identity of a finished allocation still works"
		}
		return ""
	})
}

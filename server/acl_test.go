package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func isDenied(err error) bool { return errors.Is(err, structs.ErrPermissionDenied) }

// TestACLRPCClasses checks the RPC rules of rpc_acl.go on a follower and
// the leader of a three-server cluster with ACLs on: scheduler-internal
// methods take the cluster secret or a management token only; client
// methods refuse user tokens; user methods follow the token's policies;
// and a request forwarded by a follower is checked again by the leader.
func TestACLRPCClasses(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) { cfg.ACLEnabled = true }))
	leader := c.WaitForLeader(t, 15*time.Second)
	var follower *server.Server
	for _, s := range c.Servers() {
		if s != leader {
			follower = s
			break
		}
	}

	var boot structs.ACLTokenUpsertResponse
	if err := follower.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatalf("bootstrap through a follower: %v", err)
	}
	root := boot.Tokens[0].SecretID
	wr := func(token string) structs.WriteRequest {
		return structs.WriteRequest{Region: "global", AuthToken: token}
	}
	var gr structs.GenericResponse
	if err := leader.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "writer", Rules: `namespace "default" { policy = "write" }
node { policy = "write" }`}}, WriteRequest: wr(root)}, &gr); err != nil {
		t.Fatal(err)
	}
	var tr structs.ACLTokenUpsertResponse
	if err := leader.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: structs.ACLClientToken, Policies: []string{"writer"}}}, WriteRequest: wr(root)}, &tr); err != nil {
		t.Fatal(err)
	}
	writer := tr.Tokens[0].SecretID
	waitToken(t, follower, writer)

	// Scheduler-internal: refused to a user token however broad its
	// policies, and to none.
	for _, tok := range []string{"", writer} {
		err := leader.RPC("Eval.Ack", &structs.EvalAckRequest{EvalID: "x", Token: "y", WriteRequest: wr(tok)}, &gr)
		if !isDenied(err) {
			t.Errorf("Eval.Ack with token %q: %v, want permission denied", tok, err)
		}
		var pr structs.PlanResponse
		if err := follower.RPC("Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{}, WriteRequest: wr(tok)}, &pr); !isDenied(err) {
			t.Errorf("Plan.Submit with token %q: %v, want permission denied", tok, err)
		}
	}
	// A management token passes the ACL check (the broker then refuses
	// the unknown evaluation for its own reason).
	if err := leader.RPC("Eval.Ack", &structs.EvalAckRequest{EvalID: "x", Token: "y", WriteRequest: wr(root)}, &gr); isDenied(err) {
		t.Errorf("Eval.Ack with a management token: %v", err)
	}

	// Client methods: a user token is refused; a node's own secret goes
	// on to the node endpoint.
	node := mock.Node()
	var nr structs.NodeUpdateResponse
	if err := follower.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: wr(writer)}, &nr); !isDenied(err) {
		t.Errorf("Node.Register with a user token: %v, want permission denied", err)
	}
	if err := follower.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: wr("")}, &nr); !isDenied(err) {
		t.Errorf("Node.Register without a token: %v, want permission denied", err)
	}
	if err := follower.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: wr(node.SecretID)}, &nr); err != nil {
		t.Errorf("Node.Register with the node's secret: %v", err)
	}

	// User methods, through the follower (forwarded; the leader checks
	// again with its own state).
	job := mock.Job()
	var jr structs.JobRegisterResponse
	if err := follower.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: wr("")}, &jr); !isDenied(err) {
		t.Errorf("anonymous Job.Register: %v, want permission denied", err)
	}
	// The job's own namespace counts, not only the request's.
	other := mock.Job()
	other.Namespace = "prod"
	if err := follower.RPC("Job.Register", &structs.JobRegisterRequest{Job: other, WriteRequest: wr(writer)}, &jr); !isDenied(err) {
		t.Errorf("Job.Register into another namespace: %v, want permission denied", err)
	}
	if err := follower.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: wr(writer)}, &jr); err != nil {
		t.Fatalf("Job.Register with the write token: %v", err)
	}
	var gc structs.GenericResponse
	if err := follower.RPC("System.GarbageCollect", &structs.GenericRequest{QueryOptions: structs.QueryOptions{AuthToken: writer}}, &gc); !isDenied(err) {
		t.Errorf("GC with a client token: %v, want permission denied", err)
	}

	// A policy change applies at once to tokens already resolved (the
	// cache is keyed by the tables' index).
	if err := leader.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "writer", Rules: `namespace "default" { policy = "read" }`}}, WriteRequest: wr(root)}, &gr); err != nil {
		t.Fatal(err)
	}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job(), WriteRequest: wr(writer)}, &jr); !isDenied(err) {
		t.Errorf("Job.Register after the policy became read-only: %v, want permission denied", err)
	}

	// The evaluation the registration created is scheduled (by any
	// server's workers: a follower's reach the leader with the cluster
	// secret).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var er structs.SingleEvalResponse
		err := leader.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: jr.EvalID, QueryOptions: structs.QueryOptions{AuthToken: root}}, &er)
		if err == nil && er.Eval != nil && er.Eval.Status != structs.EvalStatusPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evaluation not processed: %+v %v", er.Eval, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitToken waits until s has applied the entry that created secret.
func waitToken(t *testing.T, s *server.Server, secret string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tok, _ := s.State().ACLTokenBySecretHash(structs.HashSecret(secret)); tok != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("token never replicated")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A new token's lifetime is bounded as in Nomad: by default at least a
// minute and at most a day (token_min_expiration_ttl,
// token_max_expiration_ttl), whether given as a TTL or an expiry time.
func TestACLTokenExpirationBounds(t *testing.T) {
	c := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.ACLEnabled = true
		cfg.ACLTokenMaxExpirationTTL = 2 * time.Hour
	}))
	leader := c.WaitForLeader(t, 15*time.Second)
	var boot structs.ACLTokenUpsertResponse
	if err := leader.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatal(err)
	}
	create := func(tok *structs.ACLToken) error {
		tok.Type = structs.ACLManagementToken
		var resp structs.ACLTokenUpsertResponse
		return leader.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok},
			WriteRequest: structs.WriteRequest{AuthToken: boot.Tokens[0].SecretID}}, &resp)
	}
	for _, tc := range []struct {
		name string
		tok  *structs.ACLToken
		ok   bool
	}{
		{"no expiry", &structs.ACLToken{}, true},
		{"ttl 10s, under the default minute", &structs.ACLToken{ExpirationTTL: 10 * time.Second}, false},
		{"ttl 1h", &structs.ACLToken{ExpirationTTL: time.Hour}, true},
		{"ttl 3h, over the configured 2h", &structs.ACLToken{ExpirationTTL: 3 * time.Hour}, false},
		{"expiry time in 30s", &structs.ACLToken{ExpirationTime: time.Now().Add(30 * time.Second)}, false},
		{"expiry time in 90m", &structs.ACLToken{ExpirationTime: time.Now().Add(90 * time.Minute)}, true},
	} {
		err := create(tc.tok)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && (structs.CodeOf(err) != structs.ErrCodeInvalid || !strings.Contains(err.Error(), "expiration time cannot be")) {
			t.Errorf("%s: %v, want an invalid-input error about the expiration time", tc.name, err)
		}
	}
}

// Rotating the cluster secret: every server moves to the new one; the
// old one is still accepted for the grace, then refused; only a
// management token may rotate it.
func TestACLRotateClusterSecret(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.ACLEnabled = true
		cfg.ACLClusterSecretGrace = 2 * time.Second
	}))
	leader := c.WaitForLeader(t, 15*time.Second)
	var boot structs.ACLTokenUpsertResponse
	if err := leader.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatal(err)
	}
	root := boot.Tokens[0].SecretID
	secretOf := func(s *server.Server) string {
		cs, _ := s.State().ACLClusterSecret()
		if cs == nil {
			return ""
		}
		return cs.Secret
	}
	deadline := time.Now().Add(10 * time.Second)
	for secretOf(leader) == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	old := secretOf(leader)
	if old == "" {
		t.Fatal("no cluster secret written")
	}
	for _, s := range c.Servers() {
		deadline := time.Now().Add(10 * time.Second)
		for secretOf(s) != old && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var follower *server.Server
	for _, s := range c.Servers() {
		if s != leader {
			follower = s
		}
	}
	internal := func(s *server.Server, secret string) error {
		var gr structs.GenericResponse
		return s.RPC("Eval.Ack", &structs.EvalAckRequest{EvalID: "x", Token: "y",
			WriteRequest: structs.WriteRequest{AuthToken: secret}}, &gr)
	}
	if err := internal(follower, old); isDenied(err) {
		t.Fatalf("the cluster secret refused before any rotation: %v", err)
	}

	var gr structs.GenericResponse
	if err := follower.RPC("ACL.RotateClusterSecret", &structs.ACLClusterSecretRotateRequest{}, &gr); !isDenied(err) {
		t.Fatalf("rotation without a token: %v, want permission denied", err)
	}
	waitToken(t, follower, root)
	if err := follower.RPC("ACL.RotateClusterSecret", &structs.ACLClusterSecretRotateRequest{
		WriteRequest: structs.WriteRequest{AuthToken: root}}, &gr); err != nil {
		t.Fatal(err)
	}
	var fresh string
	for _, s := range c.Servers() {
		deadline := time.Now().Add(10 * time.Second)
		for secretOf(s) == old && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := secretOf(s); got == old || (fresh != "" && got != fresh) {
			t.Fatalf("server %s holds %q after the rotation", s.RPCAddr(), got)
		}
		fresh = secretOf(s)
	}
	// Within the grace both are accepted; after it only the new one.
	if err := internal(follower, old); isDenied(err) {
		t.Fatalf("the old secret refused within the grace: %v", err)
	}
	if err := internal(follower, fresh); isDenied(err) {
		t.Fatalf("the new secret refused: %v", err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := internal(follower, old); !isDenied(err) {
		t.Fatalf("the old secret after the grace: %v, want permission denied", err)
	}
	if err := internal(leader, fresh); isDenied(err) {
		t.Fatalf("the new secret refused after the grace: %v", err)
	}
}

// TestACLScaleCapability: a token with Nomad's "scale" namespace policy
// may scale a job and read its scale status but not register it, as in
// Nomad; a read token may read the status but not scale.
func TestACLScaleCapability(t *testing.T) {
	c := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) { cfg.ACLEnabled = true }))
	s := c.WaitForLeader(t, 15*time.Second)
	var boot structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot); err != nil {
		t.Fatal(err)
	}
	root := boot.Tokens[0].SecretID
	wr := func(token string) structs.WriteRequest {
		return structs.WriteRequest{Region: "global", AuthToken: token}
	}
	var gr structs.GenericResponse
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "scaler", Rules: `namespace "default" { policy = "scale" }`},
		{Name: "reader", Rules: `namespace "default" { policy = "read" }`}}, WriteRequest: wr(root)}, &gr); err != nil {
		t.Fatal(err)
	}
	token := func(policy string) string {
		var tr structs.ACLTokenUpsertResponse
		if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
			{Type: structs.ACLClientToken, Policies: []string{policy}}}, WriteRequest: wr(root)}, &tr); err != nil {
			t.Fatal(err)
		}
		return tr.Tokens[0].SecretID
	}
	scaler, reader := token("scaler"), token("reader")

	job := mock.Job()
	var jr structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), WriteRequest: wr(scaler)}, &jr); !isDenied(err) {
		t.Fatalf("Job.Register with a scale token: %v, want permission denied", err)
	}
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), WriteRequest: wr(root)}, &jr); err != nil {
		t.Fatal(err)
	}
	three := int64(3)
	req := &structs.ScalingRequest{JobID: job.ID, Target: map[string]string{"Group": job.TaskGroups[0].Name}, Count: &three}
	req.WriteRequest = wr(reader)
	if err := s.RPC("Job.Scale", req, &jr); !isDenied(err) {
		t.Fatalf("Job.Scale with a read token: %v, want permission denied", err)
	}
	req.WriteRequest = wr(scaler)
	if err := s.RPC("Job.Scale", req, &jr); err != nil {
		t.Fatalf("Job.Scale with a scale token: %v", err)
	}
	for _, tok := range []string{scaler, reader} {
		var st structs.JobScaleStatusResponse
		args := &structs.JobSpecificRequest{JobID: job.ID}
		args.AuthToken = tok
		if err := s.RPC("Job.ScaleStatus", args, &st); err != nil || st.JobScaleStatus == nil {
			t.Fatalf("Job.ScaleStatus: %+v, %v", st.JobScaleStatus, err)
		}
	}
	var st structs.JobScaleStatusResponse
	if err := s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID}, &st); !isDenied(err) {
		t.Fatalf("anonymous Job.ScaleStatus: %v, want permission denied", err)
	}
}

package server_test

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestACLDispatchAndPeriodicForce: a dispatch needs dispatch-job and a
// periodic force submit-job in the job's namespace, as in Nomad.
func TestACLDispatchAndPeriodicForce(t *testing.T) {
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
		{Name: "dispatcher", Rules: `namespace "default" { capabilities = ["dispatch-job", "read-job"] }`},
		{Name: "submitter", Rules: `namespace "default" { capabilities = ["submit-job"] }`}}, WriteRequest: wr(root)}, &gr); err != nil {
		t.Fatal(err)
	}
	token := func(policy string) string {
		var tr structs.ACLTokenUpsertResponse
		if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
			{Type: structs.ACLClientToken, Policies: []string{policy}}}, WriteRequest: wr(root)}, &tr); err != nil {
			t.Fatal(err)
		}
		waitToken(t, s, tr.Tokens[0].SecretID)
		return tr.Tokens[0].SecretID
	}
	dispatcher, submitter := token("dispatcher"), token("submitter")

	param := mock.BatchJob()
	param.ID, param.Name = "param", "param"
	param.ParameterizedJob = &structs.ParameterizedJobConfig{}
	periodic := mock.BatchJob()
	periodic.ID, periodic.Name = "cron", "cron"
	periodic.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "@yearly"}
	for _, j := range []*structs.Job{param, periodic} {
		var jr structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j, WriteRequest: wr(root)}, &jr); err != nil {
			t.Fatal(err)
		}
	}

	var dr structs.JobDispatchResponse
	if err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "param", WriteRequest: wr(submitter)}, &dr); !isDenied(err) {
		t.Errorf("dispatch with submit-job only: %v, want permission denied", err)
	}
	if err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "param", WriteRequest: wr(dispatcher)}, &dr); err != nil {
		t.Errorf("dispatch with dispatch-job: %v", err)
	}
	var fr structs.PeriodicForceResponse
	if err := s.RPC("Job.PeriodicForce", &structs.PeriodicForceRequest{JobID: "cron", WriteRequest: wr(dispatcher)}, &fr); !isDenied(err) {
		t.Errorf("force with dispatch-job only: %v, want permission denied", err)
	}
	if err := s.RPC("Job.PeriodicForce", &structs.PeriodicForceRequest{JobID: "cron", WriteRequest: wr(submitter)}, &fr); err != nil {
		t.Errorf("force with submit-job: %v", err)
	}
}

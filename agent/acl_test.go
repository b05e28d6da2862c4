package agent

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
)

// aclCluster starts three servers with ACLs on over real TCP, each with
// an HTTP API, and returns the leader's index and the API URLs.
func aclCluster(t *testing.T) (leader int, urls []string) {
	t.Helper()
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) { cfg.ACLEnabled = true }),
		testcluster.WithStableLeader())
	ls := c.WaitForLeader(t, 15*time.Second)
	cfg := DevConfig()
	cfg.ACL.Enabled = true
	for _, s := range c.Servers() {
		ts := httptest.NewServer(NewHTTPHandler(s, cfg, testLogger()))
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	return c.Index(ls), urls
}

func nomadClient(t *testing.T, url, secret string) *nomad.Client {
	t.Helper()
	return nomadTLSClient(t, url, secret, nil)
}

// nomadTLSClient is Nomad's Go client of the agent at url, sending the
// token secret, with tlsConf's CA and certificate when it is set.
func nomadTLSClient(t *testing.T, url, secret string, tlsConf *nomad.TLSConfig) *nomad.Client {
	t.Helper()
	cfg := nomad.DefaultConfig()
	cfg.Address = url
	cfg.SecretID = secret
	if tlsConf != nil {
		cfg.TLSConfig = tlsConf
	}
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statusOf returns the HTTP status of an error from Nomad's client.
func statusOf(err error) int {
	var ue nomad.UnexpectedResponseError
	if errors.As(err, &ue) {
		return ue.StatusCode()
	}
	return 0
}

// TestACLCluster drives ACLs with Nomad's Go client against a
// three-server cluster: bootstrap (once), policies, tokens, self, and
// enforcement on jobs, through a follower, so every check is made again
// by the leader that serves the request.
func TestACLCluster(t *testing.T) {
	leader, urls := aclCluster(t)
	follower := urls[(leader+1)%3]

	anon := nomadClient(t, follower, "")
	_, _, err := anon.Jobs().Register(nomadJob("web"), nil)
	if statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("anonymous register: %v, want 403 Permission denied", err)
	}

	root, _, err := anon.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if root.SecretID == "" || root.Type != "management" || root.AccessorID == "" {
		t.Fatalf("bootstrap token: %+v", root)
	}
	if _, _, err := anon.ACLTokens().Bootstrap(nil); statusOf(err) != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "ACL bootstrap already done") {
		t.Fatalf("second bootstrap: %v, want 400 ACL bootstrap already done", err)
	}

	mgmt := nomadClient(t, urls[leader], root.SecretID)
	for name, rules := range map[string]string{
		"readonly": `namespace "default" { policy = "read" }`,
		"writer":   `namespace "default" { policy = "write" }`,
	} {
		if _, err := mgmt.ACLPolicies().Upsert(&nomad.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
	}
	if _, err := mgmt.ACLPolicies().Upsert(&nomad.ACLPolicy{Name: "vars",
		Rules: `namespace "default" {
  variables {
    path "*" { capabilities = ["read"] }
  }
}`}, nil); err != nil {
		t.Fatalf("policy with variables: %v", err)
	}
	policies, _, err := mgmt.ACLPolicies().List(nil)
	if err != nil || len(policies) != 3 {
		t.Fatalf("policies: %v %v", policies, err)
	}

	reader, _, err := mgmt.ACLTokens().Create(&nomad.ACLToken{Name: "r", Type: "client", Policies: []string{"readonly"}}, nil)
	if err != nil || reader.SecretID == "" {
		t.Fatalf("create read token: %+v %v", reader, err)
	}
	writer, _, err := mgmt.ACLTokens().Create(&nomad.ACLToken{Name: "w", Type: "client", Policies: []string{"writer"}}, nil)
	if err != nil {
		t.Fatalf("create write token: %v", err)
	}

	// The follower knows a token once it has applied its entry (the
	// writer's was written last).
	r := nomadClient(t, follower, reader.SecretID)
	w := nomadClient(t, follower, writer.SecretID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := w.ACLTokens().Self(nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("self on the follower: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	self, _, err := r.ACLTokens().Self(nil)
	if err != nil || self.AccessorID != reader.AccessorID || self.SecretID != reader.SecretID || self.Policies[0] != "readonly" {
		t.Fatalf("self: %+v %v", self, err)
	}

	if _, _, err := r.Jobs().List(nil); err != nil {
		t.Fatalf("read token lists jobs: %v", err)
	}
	if _, _, err := r.Jobs().Register(nomadJob("web"), nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read token registers: %v, want 403", err)
	}
	if _, _, err := r.ACLTokens().List(nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read token lists tokens: %v, want 403", err)
	}
	if _, _, err := r.Nodes().List(nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read token lists nodes without a node rule: %v, want 403", err)
	}
	if _, _, err := w.Jobs().Register(nomadJob("web"), nil); err != nil {
		t.Fatalf("write token registers: %v", err)
	}
	if job, _, err := r.Jobs().Info("web", nil); err != nil || *job.ID != "web" {
		t.Fatalf("read token reads the job: %v", err)
	}
	if err := w.System().GarbageCollect(); statusOf(err) != http.StatusForbidden {
		t.Fatalf("write token runs GC: %v, want 403 (management only)", err)
	}
	// The scheduler configuration needs operator read to read and
	// operator write to write.
	if _, _, err := r.Operator().SchedulerGetConfiguration(nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read token reads the scheduler configuration: %v, want 403", err)
	}
	if _, _, err := w.Operator().SchedulerSetConfiguration(&nomad.SchedulerConfiguration{SchedulerAlgorithm: "spread"}, nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("write token sets the scheduler configuration: %v, want 403", err)
	}
	mgmtFollower := nomadClient(t, follower, root.SecretID)
	if out, _, err := mgmtFollower.Operator().SchedulerSetConfiguration(&nomad.SchedulerConfiguration{SchedulerAlgorithm: "spread"}, nil); err != nil || !out.Updated {
		t.Fatalf("management sets the scheduler configuration through a follower: %+v %v", out, err)
	}

	// A secret no token has: 403, ACL token not found.
	bogus := nomadClient(t, follower, "00000000-0000-0000-0000-000000000000")
	if _, _, err := bogus.Jobs().List(nil); statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("unknown secret: %v", err)
	}

	// Reading a token by accessor does not show its secret: only its
	// hash is stored.
	info, _, err := mgmt.ACLTokens().Info(reader.AccessorID, nil)
	if err != nil || info.SecretID != "" || info.Name != "r" {
		t.Fatalf("token info: %+v %v", info, err)
	}
	// Deleting the token revokes it at once on the leader.
	if _, err := mgmt.ACLTokens().Delete(reader.AccessorID, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nomadClient(t, urls[leader], reader.SecretID).Jobs().List(nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("deleted token: %v, want 403", err)
	}
}

// The acl block reads Nomad's token expiration bounds; the other caching
// and replication settings are refused by name.
func TestACLConfigBlock(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "acl.hcl")
	if err := os.WriteFile(file, []byte(`acl {
  enabled                  = true
  token_min_expiration_ttl = "30s"
  token_max_expiration_ttl = "720h"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := LoadConfigFile(cfg, file); err != nil {
		t.Fatal(err)
	}
	if !cfg.ACL.Enabled || cfg.ACL.TokenMinExpirationTTL != 30*time.Second || cfg.ACL.TokenMaxExpirationTTL != 720*time.Hour {
		t.Fatalf("acl = %+v", cfg.ACL)
	}
	for attr, val := range map[string]string{"token_ttl": `"30s"`, "replication_token": `"x"`, "token_max_expiration_ttl": `"-1h"`} {
		bad := filepath.Join(dir, attr+".hcl")
		if err := os.WriteFile(bad, []byte("acl {\n  "+attr+" = "+val+"\n}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := LoadConfigFile(DefaultConfig(), bad); err == nil || !strings.Contains(err.Error(), attr) {
			t.Errorf("%s = %s: %v, want an error naming it", attr, val, err)
		}
	}
}

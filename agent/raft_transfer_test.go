package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
)

// TestRaftTransferLeadership drives PUT /v1/operator/raft/transfer-leadership
// with Nomad's Go client on a three-server cluster: by ID through a
// follower (forwarded to the leader), by address, the named follower
// leads afterwards, writes go on, and an unknown target is a 404 naming
// it with leadership left where it was.
func TestRaftTransferLeadership(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	old := c.WaitForLeader(t, 15*time.Second)
	cfg := DevConfig()
	var urls []string
	for _, s := range c.Servers() {
		ts := httptest.NewServer(NewHTTPHandler(s, cfg, testLogger()))
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	li := c.Index(old)
	target := c.Server((li + 1) % 3)
	// Ask through the third server, which forwards to the leader.
	via := nomadClient(t, urls[(li+2)%3], "")
	if _, _, err := via.Jobs().Register(nomadJob("before"), nil); err != nil {
		t.Fatalf("register before: %v", err)
	}

	if err := via.Operator().RaftTransferLeadershipByID(target.NodeID(), nil); err != nil {
		t.Fatalf("transfer to %s: %v", target.NodeID(), err)
	}
	waitLeader(t, c, target)
	if _, _, err := via.Jobs().Register(nomadJob("after"), nil); err != nil {
		t.Fatalf("register after the transfer: %v", err)
	}
	if j, _, err := nomadClient(t, urls[c.Index(target)], "").Jobs().Info("after", nil); err != nil || *j.ID != "after" {
		t.Fatalf("read after the transfer: %v", err)
	}

	// Back to the first leader, by address.
	if err := via.Operator().RaftTransferLeadershipByAddress(old.RPCAddr(), nil); err != nil {
		t.Fatalf("transfer to %s: %v", old.RPCAddr(), err)
	}
	waitLeader(t, c, old)

	for _, bad := range []struct {
		call func() error
		want string
	}{
		{func() error { return via.Operator().RaftTransferLeadershipByID("nobody", nil) }, `no raft peer with ID "nobody"`},
		{func() error { return via.Operator().RaftTransferLeadershipByAddress("127.0.0.1:1", nil) }, `no raft peer with address "127.0.0.1:1"`},
	} {
		err := bad.call()
		if statusOf(err) != http.StatusNotFound || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("bad target: %v, want 404 %s", err, bad.want)
		}
	}
	if !old.IsLeader() {
		t.Fatal("a refused transfer moved leadership")
	}

	// Round and round, each time asked through a follower that forwards
	// to the leader: the forward waits for the answer although the
	// leader it went to steps down before giving it (chaos leader-transfer
	// seed 202 got a 504 outcome_unknown here).
	for i := 0; i < 6; i++ {
		cur := c.WaitForLeader(t, 10*time.Second)
		ci := c.Index(cur)
		next := c.Server((ci + 1) % 3)
		through := nomadClient(t, urls[(ci+2)%3], "")
		if err := through.Operator().RaftTransferLeadershipByID(next.NodeID(), nil); err != nil {
			t.Fatalf("transfer %d to %s through a follower: %v", i, next.NodeID(), err)
		}
		waitLeader(t, c, next)
	}
	old = c.WaitForLeader(t, 10*time.Second)

	// Query parameters Drover cannot act on are refused by name.
	for target, want := range map[string]string{
		"?id=a&address=b:1": "only one of ?id= or ?address=",
		"?id=":              "?id= is empty",
		"?id=a&id=b":        "not several",
	} {
		req, _ := http.NewRequest(http.MethodPut, urls[0]+"/v1/operator/raft/transfer-leadership"+target, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := respText(t, resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Fatalf("PUT %s: %d %s, want 400 %s", target, resp.StatusCode, body, want)
		}
	}

	// Without a target Raft picks a follower.
	req, _ := http.NewRequest(http.MethodPut, urls[li]+"/v1/operator/raft/transfer-leadership", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := respText(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"Noop":false`) {
		t.Fatalf("transfer without a target: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for old.IsLeader() || c.WaitForLeader(t, 10*time.Second) == old {
		if time.Now().After(deadline) {
			t.Fatal("leadership did not move")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func respText(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitLeader waits until want is the cluster's only leader.
func waitLeader(t *testing.T, c *testcluster.Cluster, want *server.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if want.IsLeader() && c.WaitForLeader(t, 10*time.Second) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become the leader", want.NodeID())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRaftTransferLeadershipACL: with ACLs on, a transfer needs a
// management token, as in Nomad.
func TestRaftTransferLeadershipACL(t *testing.T) {
	leader, urls := aclCluster(t)
	anon := nomadClient(t, urls[leader], "")
	root, _, err := anon.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if err := anon.Operator().RaftTransferLeadershipByID("x", nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("anonymous transfer: %v, want 403", err)
	}
	mgmt := nomadClient(t, urls[leader], root.SecretID)
	if err := mgmt.Operator().RaftTransferLeadershipByID("nobody", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("management transfer to nobody: %v, want 404", err)
	}
}

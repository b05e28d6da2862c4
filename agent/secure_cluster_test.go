package agent

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/rpctest"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// secureMaxMessage is the servers' RPC message bound in the secure
// cluster: a quarter of the default, so the oversized message is quick
// to send over TLS.
const secureMaxMessage = 16 << 20

// secureCluster is a production-shaped cluster on one machine: three
// server agents and one client agent over real TCP, Raft in raft-boltdb
// in temporary data directories, each with TLS on RPC and HTTP
// (verify_server_hostname, verify_https_client) and ACLs on. The client
// runs the mock driver.
type secureCluster struct {
	ca      *tlstest.CA
	servers []*Agent
	leader  *Agent
	client  *Agent
	// cli is Nomad's Go client's TLS with a cli certificate: an operator
	// holding a certificate but not (yet) a token.
	cli *nomad.TLSConfig
}

func startSecureCluster(t *testing.T) *secureCluster {
	t.Helper()
	c := &secureCluster{ca: tlstest.NewCA(t)}
	var rpcAddrs []string
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.NodeName = "s" + strconv.Itoa(i)
		cfg.DataDir = t.TempDir()
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = Ports{}
		cfg.Server.Enabled = true
		cfg.Server.BootstrapExpect = 3
		cfg.Server.RetryJoin = append([]string(nil), rpcAddrs...)
		cfg.ACL.Enabled = true
		cfg.TLS = tlsBlock(t, c.ca, tlsutil.RoleServer, "server"+strconv.Itoa(i))
		cfg.serverConfigHook = func(sc *server.Config) {
			sc.RaftTimeoutScale = 0.25
			sc.RetryInterval = 50 * time.Millisecond
			sc.RPCMaxMessageBytes = secureMaxMessage
		}
		a, err := NewAgent(cfg, testLogger())
		if err != nil {
			t.Fatalf("server agent %d: %v", i, err)
		}
		t.Cleanup(func() { _ = a.Shutdown() })
		c.servers = append(c.servers, a)
		rpcAddrs = append(rpcAddrs, a.RPCAddr())
	}
	pollUntil(t, "a leader all three servers agree on", 20*time.Second, func() bool {
		c.leader = nil
		for _, a := range c.servers {
			if a.Server().IsLeader() {
				c.leader = a
			}
		}
		if c.leader == nil {
			return false
		}
		for _, a := range c.servers {
			if a.Server().Leader() != c.leader.RPCAddr() {
				return false
			}
		}
		return true
	})

	cfg := DefaultConfig()
	cfg.NodeName = "secure-client"
	cfg.DataDir = t.TempDir()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports = Ports{}
	cfg.Client.Enabled = true
	cfg.Client.Servers = rpcAddrs
	cfg.ACL.Enabled = true
	cfg.TLS = tlsBlock(t, c.ca, tlsutil.RoleClient, "client")
	cfg.Plugins[PluginMock] = &PluginConfig{Enabled: true}
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
		cc.DestroyOnShutdown = true
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("client agent: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	c.client = a

	cliCert, cliKey := c.ca.Cert(t, tlsutil.RoleCLI, "global", "cli")
	c.cli = &nomad.TLSConfig{CACert: c.ca.CAFile, ClientCert: cliCert, ClientKey: cliKey}
	return c
}

// follower is a server agent that does not lead.
func (c *secureCluster) follower() *Agent {
	for _, a := range c.servers {
		if a != c.leader {
			return a
		}
	}
	return nil
}

// TestSecureClusterRefusesEachAttack is issue 16's "done when": in one
// cluster with TLS and ACLs on, each attack of the threat model
// (docs/security.md) is refused, and the cluster goes on doing
// legitimate work: a job registered with a management token runs on the
// client.
func TestSecureClusterRefusesEachAttack(t *testing.T) {
	start := time.Now()
	c := startSecureCluster(t)
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))
	leaderRPC := c.leader.RPCAddr()
	httpURL := c.follower().HTTPURL()

	// HTTP without a client certificate: no TLS connection, so no answer.
	noCert := nomadTLSClient(t, httpURL, "", &nomad.TLSConfig{CACert: c.ca.CAFile})
	if _, err := noCert.Status().Leader(); err == nil || statusOf(err) != 0 {
		t.Fatalf("HTTPS without a client certificate: %v, want the TLS handshake refused", err)
	}

	// A certificate but no token: the anonymous policy, which is empty.
	anon := nomadTLSClient(t, httpURL, "", c.cli)
	if _, _, err := anon.Jobs().Register(secureJob("anon"), nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("anonymous job submission: %v, want 403", err)
	}

	// The job nested 75,000 deep that overflowed the parser's stack: a 400,
	// and the agent keeps answering.
	if _, err := anon.Jobs().ParseHCL(deepJobHCL(), false); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("deep job to /v1/jobs/parse: %v, want 400", err)
	}
	if leader, err := anon.Status().Leader(); err != nil || leader == "" {
		t.Fatalf("after the deep job: leader %q, %v", leader, err)
	}

	// The legitimate flow: a management token registers a job, and the
	// client (its client certificate, its node secret) runs it.
	root, _, err := anon.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("ACL bootstrap: %v", err)
	}
	mgmt := nomadTLSClient(t, httpURL, root.SecretID, c.cli)
	// The follower knows the token once it has applied its entry.
	pollUntil(t, "the follower to know the management token", 10*time.Second, func() bool {
		_, _, err := mgmt.ACLTokens().Self(nil)
		return err == nil
	})
	if _, _, err := mgmt.Jobs().Register(secureJob("web"), nil); err != nil {
		t.Fatalf("register with a management token: %v", err)
	}
	nodeID := c.client.Client().NodeID()
	var allocID string
	pollUntil(t, "the job running on the client", 20*time.Second, func() bool {
		allocs, _, err := mgmt.Jobs().Allocations("web", false, nil)
		if err != nil || len(allocs) != 1 {
			return false
		}
		allocID = allocs[0].ID
		return allocs[0].NodeID == nodeID && allocs[0].ClientStatus == structs.AllocClientStatusRunning
	})
	t.Logf("job running at %v", time.Since(start).Round(time.Millisecond))

	// A client certificate reaches no server-only RPC.
	clientPool := rpctest.Pool(t, c.ca, tlsutil.RoleClient)
	rpctest.WantServerOnlyRefused(t, clientPool, leaderRPC)

	// A client certificate is not the node's identity: without the node's
	// secret, through a follower, nothing about the node is written.
	st := c.leader.Server().State()
	nodeBefore, err := st.NodeByID(nil, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	allocBefore, err := st.AllocByID(nil, allocID)
	if err != nil {
		t.Fatal(err)
	}
	rpctest.WantNodeCallsRefused(t, clientPool, c.follower().RPCAddr(), nodeID, allocID)
	nodeAfter, _ := st.NodeByID(nil, nodeID)
	allocAfter, _ := st.AllocByID(nil, allocID)
	if nodeAfter.ModifyIndex != nodeBefore.ModifyIndex || nodeAfter.Status != structs.NodeStatusReady ||
		allocAfter.ModifyIndex != allocBefore.ModifyIndex || allocAfter.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("refused node calls wrote: node %s at %d (was %d), allocation %s at %d (was %d)",
			nodeAfter.Status, nodeAfter.ModifyIndex, nodeBefore.ModifyIndex,
			allocAfter.ClientStatus, allocAfter.ModifyIndex, allocBefore.ModifyIndex)
	}

	// A server without a server certificate cannot join: its announce is
	// refused, its Raft connection closed, and it never becomes a member.
	rpctest.WantDenied(t, "announce with a client certificate", rpctest.Announce(clientPool, leaderRPC))
	clientTLS := c.ca.Config(t, tlsutil.RoleClient, "global", nil)
	rpctest.WantRaftRefused(t, leaderRPC, clientTLS.OutgoingRPC())
	var servers []*server.Server
	for _, a := range c.servers {
		servers = append(servers, a.Server())
	}
	outsider := testcluster.StartOutsider(t, []string{leaderRPC}, clientTLS)
	testcluster.RequireNeverJoins(t, servers, outsider, 3, time.Second)
	outsider.Shutdown()

	// An oversized message closes its stream with too_large; the session
	// goes on, and the memory gathered for the message is released.
	sess := rpctest.Dial(t, leaderRPC, clientTLS.OutgoingRPC())
	if err := sess.Ping(); err != nil {
		t.Fatal(err)
	}
	base := rpctest.HeapAfterGC()
	if err := sess.SendOversized(t); structs.CodeOf(err) != structs.ErrCodeTooLarge {
		t.Fatalf("oversized message: %v, want too_large", err)
	}
	if err := sess.Ping(); err != nil {
		t.Fatalf("the session after a refused stream: %v", err)
	}
	after := rpctest.HeapAfterGC()
	t.Logf("heap after GC: %.1f MiB before the oversized message, %.1f MiB after (bound %d MiB)",
		float64(base)/(1<<20), float64(after)/(1<<20), secureMaxMessage>>20)
	if after > base+secureMaxMessage/2 {
		t.Fatalf("heap %d MiB after the refused message, %d MiB before: not released", after>>20, base>>20)
	}

	// The 101st connection from one address is closed at once; the limit
	// is per address, so the servers, the client and operators at other
	// addresses go on.
	closeAll := rpctest.FillConnLimit(t, leaderRPC, "127.0.0.2", server.DefaultRPCMaxConnsPerClient)
	defer closeAll()
	var leader string
	if err := rpctest.Pool(t, c.ca, tlsutil.RoleClient).RPC(leaderRPC, "Status.Leader", &structs.GenericRequest{}, &leader); err != nil {
		t.Fatalf("a caller at another address during the flood: %v", err)
	}

	// After all of it, the job still runs and the API still serves.
	allocs, _, err := mgmt.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("the job at the end: %v, %v", allocs, err)
	}
	t.Logf("all attacks refused in %v", time.Since(start).Round(time.Millisecond))
}

// secureJob is a service job of one mock_driver task that runs for an
// hour.
func secureJob(id string) *nomad.Job {
	task := nomad.NewTask("t", "mock_driver").
		SetConfig("run_for", "1h").
		Require(&nomad.Resources{CPU: new(100), MemoryMB: new(64)})
	tg := nomad.NewTaskGroup("g", 1).AddTask(task)
	job := nomad.NewServiceJob(id, id, "global", 50).AddTaskGroup(tg)
	job.Datacenters = []string{"dc1"}
	return job
}

package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/rpctest"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// tlsCluster starts three servers with server certificates, TLS on the
// RPC port and verify_server_hostname.
func tlsCluster(t *testing.T) (*tlstest.CA, *testcluster.Cluster, *server.Server) {
	ca := tlstest.NewCA(t)
	c := testcluster.NewTestCluster(t, 3, func(i int, cfg *server.Config) {
		cfg.TLS = ca.Config(t, tlsutil.RoleServer, "global", nil)
	})
	leader := c.WaitForLeader(t, 15*time.Second)
	return ca, c, leader
}

// A TLS cluster forms, elects, and forwards over TLS (a write sent to a
// follower reaches the leader through the follower's pool).
func TestTLSClusterForwards(t *testing.T) {
	_, c, _ := tlsCluster(t)
	f := follower(t, c)
	registerJob(t, f, "over-tls")
	if got := len(raftIDs(t, f)); got != 3 {
		t.Fatalf("raft configuration has %d servers, want 3", got)
	}
}

// A server whose certificate is not a server certificate cannot join: its
// Status.Announce is refused, a Raft connection with it is closed at once,
// and it never becomes a member or a voter.
func TestTLSServerWithoutServerCertCannotJoin(t *testing.T) {
	ca, c, leader := tlsCluster(t)

	// What the outsider's announce and Raft connection look like on the wire.
	rpctest.WantDenied(t, "announce with a client certificate", rpctest.Announce(rpctest.Pool(t, ca, tlsutil.RoleClient), leader.RPCAddr()))
	rpctest.WantRaftRefused(t, leader.RPCAddr(), ca.Config(t, tlsutil.RoleClient, "global", nil).OutgoingRPC())

	// A whole server with a client certificate, joining the cluster.
	outsider := testcluster.StartOutsider(t, []string{leader.RPCAddr()}, ca.Config(t, tlsutil.RoleClient, "global", nil))
	testcluster.RequireNeverJoins(t, c.Servers(), outsider, 3, time.Second)
}

// A client certificate reaches the client calls and the user calls, never
// a server-only one, nor a request marked forwarded; a cli certificate
// reaches only user calls.
func TestTLSClientCertRoles(t *testing.T) {
	ca, c, leader := tlsCluster(t)
	addr := leader.RPCAddr()
	cp := rpctest.Pool(t, ca, tlsutil.RoleClient)

	rpctest.WantServerOnlyRefused(t, cp, addr)

	node := mock.Node()
	var reg structs.NodeUpdateResponse
	if err := cp.RPC(addr, "Node.Register", &structs.NodeRegisterRequest{Node: node}, &reg); err != nil {
		t.Fatalf("Node.Register with a client certificate: %v", err)
	}
	var leaderAddr string
	if err := cp.RPC(addr, "Status.Leader", &structs.GenericRequest{}, &leaderAddr); err != nil {
		t.Fatalf("Status.Leader with a client certificate: %v", err)
	}
	beat := &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady}
	beat.Forwarded = true
	rpctest.WantDenied(t, "a forwarded request from a client", cp.RPC(addr, "Node.UpdateStatus", beat, &reg))

	// A client certificate is not a node's identity: through a follower
	// (forwarded to the leader over TLS), a heartbeat or an allocation
	// update without the node's secret is refused and writes nothing.
	f := follower(t, c)
	before, _ := leader.State().LatestIndex()
	rpctest.WantNodeCallsRefused(t, cp, f.RPCAddr(), node.ID, "a")
	if after, _ := leader.State().LatestIndex(); after != before {
		t.Fatalf("refused node calls wrote: index %d -> %d", before, after)
	}
	beat.Forwarded = false
	if err := cp.RPC(f.RPCAddr(), "Node.UpdateStatus", beat, &reg); err != nil {
		t.Fatalf("heartbeat with the secret, through a follower: %v", err)
	}

	cli := rpctest.Pool(t, ca, tlsutil.RoleCLI)
	beat.Forwarded = false
	rpctest.WantDenied(t, "Node.UpdateStatus with a cli certificate", cli.RPC(addr, "Node.UpdateStatus", beat, &reg))
	if err := cli.RPC(addr, "Status.Leader", &structs.GenericRequest{}, &leaderAddr); err != nil {
		t.Fatalf("Status.Leader with a cli certificate: %v", err)
	}
}

// Plaintext and TLS do not mix, and each side says so: a plaintext client
// of a TLS server is answered that TLS is required; a TLS client of a
// plaintext server fails its handshake, naming TLS; a certificate from
// another CA fails the handshake.
func TestTLSPlaintextMismatch(t *testing.T) {
	ca, _, leader := tlsCluster(t)

	plain := pool.New(pool.Config{DialTimeout: 5 * time.Second})
	defer plain.Shutdown()
	var leaderAddr string
	err := plain.RPC(leader.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr)
	rpctest.WantDenied(t, "plaintext client of a TLS server", err)
	if !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext client of a TLS server: %v, want it to say TLS is required", err)
	}

	plainServer := schedServer(t, 0)
	tp := rpctest.Pool(t, ca, tlsutil.RoleClient)
	err = tp.RPC(plainServer.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr)
	var notSent *pool.NotSentError
	var hs *pool.TLSHandshakeError
	if !errors.As(err, &notSent) || !errors.As(err, &hs) {
		t.Fatalf("TLS client of a plaintext server: %v, want a TLS handshake failure", err)
	}

	other := tlstest.NewCA(t)
	op := rpctest.Pool(t, other, tlsutil.RoleServer)
	if err := op.RPC(leader.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr); !errors.As(err, &hs) {
		t.Fatalf("certificate of another CA: %v, want a TLS handshake failure", err)
	}
}

// Without verify_server_hostname, any certificate the CA signed is
// trusted, as in Nomad (and a server's name is not checked).
func TestTLSWithoutVerifyServerHostname(t *testing.T) {
	ca := tlstest.NewCA(t)
	noVerify := func(c *tlsutil.Config) { c.VerifyServerHostname = false }
	c := testcluster.NewTestCluster(t, 1, func(i int, cfg *server.Config) {
		cfg.TLS = ca.Config(t, tlsutil.RoleServer, "global", noVerify)
	})
	leader := c.WaitForLeader(t, 15*time.Second)
	p := pool.New(pool.Config{TLS: ca.Config(t, tlsutil.RoleClient, "global", noVerify).OutgoingRPC()})
	defer p.Shutdown()
	var deq structs.EvalDequeueResponse
	err := p.RPC(leader.RPCAddr(), "Eval.Dequeue", &structs.EvalDequeueRequest{
		Schedulers: []string{structs.JobTypeService}, Timeout: time.Millisecond}, &deq)
	if structs.CodeOf(err) == structs.ErrCodePermissionDenied {
		t.Fatalf("Eval.Dequeue without verify_server_hostname: %v", err)
	}
}

// rpc_upgrade_mode: a TLS server also serves plaintext connections while
// a cluster moves to TLS, and stops taking new ones when a reload turns
// the mode off.
func TestTLSUpgradeMode(t *testing.T) {
	ca := tlstest.NewCA(t)
	certFile, keyFile := ca.Cert(t, tlsutil.RoleServer, "global", "upgrading")
	tcfg := tlsutil.Config{EnableRPC: true, CAFile: ca.CAFile, CertFile: certFile, KeyFile: keyFile,
		VerifyServerHostname: true, RPCUpgradeMode: true}
	conf, err := tlsutil.New(tcfg, "global")
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.NewTestCluster(t, 1, func(i int, cfg *server.Config) { cfg.TLS = conf })
	leader := c.WaitForLeader(t, 15*time.Second)
	var leaderAddr string
	plainCall := func() error {
		p := pool.New(pool.Config{DialTimeout: 5 * time.Second})
		defer p.Shutdown()
		return p.RPC(leader.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr)
	}
	if err := plainCall(); err != nil {
		t.Fatalf("plaintext call in upgrade mode: %v", err)
	}
	if err := rpctest.Pool(t, ca, tlsutil.RoleClient).RPC(leader.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr); err != nil {
		t.Fatalf("TLS call in upgrade mode: %v", err)
	}
	tcfg.RPCUpgradeMode = false
	if err := conf.Reload(tcfg); err != nil {
		t.Fatal(err)
	}
	rpctest.WantDenied(t, "plaintext call after upgrade mode ends", plainCall())
}

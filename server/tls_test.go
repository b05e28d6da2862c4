package server_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
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

// tlsPool is an RPC pool presenting a certificate for role.
func tlsPool(t *testing.T, ca *tlstest.CA, role tlsutil.Role) *pool.Pool {
	p := pool.New(pool.Config{TLS: ca.Config(t, role, "global", nil).OutgoingRPC(), DialTimeout: 5 * time.Second})
	t.Cleanup(func() { p.Shutdown() })
	return p
}

func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("%s: err = %v, want permission_denied", what, err)
	}
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

	// What the stranger's announce looks like on the wire.
	p := tlsPool(t, ca, tlsutil.RoleClient)
	var members structs.ServerMembersResponse
	err := p.RPC(leader.RPCAddr(), "Status.Announce", &structs.ServerAnnounceRequest{Member: structs.ServerMember{
		ID: "stranger", Name: "stranger", RPCAddr: "127.0.0.1:1", Region: "global", Status: server.MemberStatusAlive}}, &members)
	wantDenied(t, "announce with a client certificate", err)

	// Raft: the handshake succeeds (the CA signed the certificate), then
	// the server closes the connection on the Raft byte.
	conn, err := net.DialTimeout("tcp", leader.RPCAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tc, err := pool.DialTLS(conn, ca.Config(t, tlsutil.RoleClient, "global", nil).OutgoingRPC(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write([]byte{pool.ProtocolRaft}); err != nil {
		t.Fatal(err)
	}
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("raft over a client certificate: read %v, want the connection closed", err)
	}

	// A whole server with a client certificate, joining the cluster.
	cfg := &server.Config{Name: "stranger", DataDir: t.TempDir(), BindAddr: "127.0.0.1", BootstrapExpect: 0,
		RetryJoin: []string{leader.RPCAddr()}, RetryInterval: 50 * time.Millisecond, RaftTimeoutScale: 0.25,
		TLS: ca.Config(t, tlsutil.RoleClient, "global", nil)}
	stranger, err := server.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Shutdown()
	time.Sleep(time.Second) // twenty announce rounds
	for _, s := range c.Servers() {
		for _, m := range s.Members() {
			if m.RPCAddr == stranger.RPCAddr() {
				t.Fatalf("%s lists the stranger as a member", s.RPCAddr())
			}
		}
		if ids := raftIDs(t, s); len(ids) != 3 {
			t.Fatalf("%s: raft configuration %v, want the three servers", s.RPCAddr(), ids)
		}
	}
}

// A client certificate reaches the client calls and the user calls, never
// a server-only one, nor a request marked forwarded; a cli certificate
// reaches only user calls.
func TestTLSClientCertRoles(t *testing.T) {
	ca, c, leader := tlsCluster(t)
	addr := leader.RPCAddr()
	cp := tlsPool(t, ca, tlsutil.RoleClient)

	var deq structs.EvalDequeueResponse
	wantDenied(t, "Eval.Dequeue", cp.RPC(addr, "Eval.Dequeue", &structs.EvalDequeueRequest{
		Schedulers: []string{structs.JobTypeService}, Timeout: time.Millisecond}, &deq))
	var plan structs.PlanResponse
	wantDenied(t, "Plan.Submit", cp.RPC(addr, "Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{EvalID: "x"}}, &plan))

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
	wantDenied(t, "a forwarded request from a client", cp.RPC(addr, "Node.UpdateStatus", beat, &reg))

	// A client certificate is not a node's identity: through a follower
	// (forwarded to the leader over TLS), a heartbeat or an allocation
	// update without the node's secret is refused and writes nothing.
	f := follower(t, c)
	before, _ := leader.State().LatestIndex()
	wrong := &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: "wrong", Status: structs.NodeStatusDown}
	wantDenied(t, "heartbeat with a wrong secret", cp.RPC(f.RPCAddr(), "Node.UpdateStatus", wrong, &reg))
	upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a", ClientStatus: structs.AllocClientStatusComplete}},
		NodeSecrets: map[string]string{node.ID: "wrong"}}
	wantDenied(t, "allocation update with a wrong secret", cp.RPC(f.RPCAddr(), "Node.UpdateAlloc", upd, &structs.GenericResponse{}))
	if after, _ := leader.State().LatestIndex(); after != before {
		t.Fatalf("refused node calls wrote: index %d -> %d", before, after)
	}
	beat.Forwarded = false
	if err := cp.RPC(f.RPCAddr(), "Node.UpdateStatus", beat, &reg); err != nil {
		t.Fatalf("heartbeat with the secret, through a follower: %v", err)
	}

	cli := tlsPool(t, ca, tlsutil.RoleCLI)
	beat.Forwarded = false
	wantDenied(t, "Node.UpdateStatus with a cli certificate", cli.RPC(addr, "Node.UpdateStatus", beat, &reg))
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
	wantDenied(t, "plaintext client of a TLS server", err)
	if !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext client of a TLS server: %v, want it to say TLS is required", err)
	}

	plainServer := schedServer(t, 0)
	tp := tlsPool(t, ca, tlsutil.RoleClient)
	err = tp.RPC(plainServer.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leaderAddr)
	var notSent *pool.NotSentError
	var hs *pool.TLSHandshakeError
	if !errors.As(err, &notSent) || !errors.As(err, &hs) {
		t.Fatalf("TLS client of a plaintext server: %v, want a TLS handshake failure", err)
	}

	other := tlstest.NewCA(t)
	op := tlsPool(t, other, tlsutil.RoleServer)
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

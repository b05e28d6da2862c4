// Package rpctest calls a server's RPC port as an outsider would, for the
// security tests of server/ and agent/: a raw yamux session (plaintext or
// TLS) to send what no pool sends, a pool presenting a certificate of a
// given role, the attacks of issue 16 and the checks they share.
//
// It imports no server package, so the server package's own tests can use
// it. It must never be imported by production code.
package rpctest

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/rpc"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/msgpackread"
	"github.com/drover-project/drover/internal/msgpackrpc"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
)

// dialTimeout bounds each dial and TLS handshake.
const dialTimeout = 5 * time.Second

// Conn is one connection to a server's RPC port: its TCP connection and
// the yamux session over it (inside TLS when dialed with a TLS config).
type Conn struct {
	TCP  net.Conn
	Sess *yamux.Session
}

// Dial opens an RPC session with the server at addr, over TLS when
// tlsConf is not nil (ProtocolTLS, the handshake, then ProtocolRPC
// inside). The session is closed when t ends.
func Dial(t testing.TB, addr string, tlsConf *tls.Config) *Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var inner net.Conn = c
	if tlsConf != nil {
		tc, err := pool.DialTLS(c, tlsConf, dialTimeout)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		inner = tc
	}
	if _, err := inner.Write([]byte{pool.ProtocolRPC}); err != nil {
		t.Fatal(err)
	}
	sess, err := yamux.Client(inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &Conn{TCP: c, Sess: sess}
}

// Call makes one call on a new stream of the session.
func (c *Conn) Call(method string, args, reply any) error {
	st, err := c.Sess.Open()
	if err != nil {
		return err
	}
	cl := rpc.NewClientWithCodec(msgpackrpc.NewCodec(st, structs.MsgpackHandle))
	defer cl.Close()
	return cl.Call(method, args, reply)
}

// Ping makes one Status.Leader call on a new stream.
func (c *Conn) Ping() error {
	var leader string
	return c.Call("Status.Leader", &structs.GenericRequest{}, &leader)
}

// SendOversized sends, on a new stream, a Status.Leader request whose body
// announces a 768 MiB string, and keeps writing it until the server stops
// reading. It returns the error the server answered with (decoded from the
// answer's header) once the server has ended the stream; a server that
// kept the stream open past 30 s fails t.
func (c *Conn) SendOversized(t testing.TB) error {
	t.Helper()
	st, err := c.Sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hdr := msgpackrpc.AppendRequestHeader(nil, &rpc.Request{ServiceMethod: "Status.Leader", Seq: 1})
	hdr = append(hdr, 0xdb, 0x30, 0x00, 0x00, 0x00) // str32 of 768 MiB
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		if _, err := st.Write(hdr); err != nil {
			return
		}
		chunk := make([]byte, 64<<10)
		for {
			if _, err := st.Write(chunk); err != nil {
				return
			}
		}
	}()

	// The answer, then the end of the stream (io.ReadAll stops at EOF).
	st.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf, err := io.ReadAll(io.LimitReader(st, 1<<20))
	if err != nil {
		t.Fatalf("reading the answer to an oversized message: %v", err)
	}
	st.Close()
	<-writeDone
	r := msgpackread.NewReader(buf)
	h, err := msgpackrpc.ReadResponseHeader(&r)
	if err != nil {
		t.Fatalf("the answer to an oversized message: %v", err)
	}
	if len(h.Error) == 0 {
		t.Fatal("an oversized message was answered without an error")
	}
	return structs.DecodeRPCError(string(h.Error))
}

// HeapAfterGC is the live heap after two collections.
func HeapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// WaitClosed reports whether the far end closes c within d.
func WaitClosed(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := c.Read(b[:])
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// Pool is an RPC pool presenting a certificate for role in region
// "global", made by ca; it is shut down when t ends.
func Pool(t testing.TB, ca *tlstest.CA, role tlsutil.Role) *pool.Pool {
	t.Helper()
	p := pool.New(pool.Config{TLS: ca.Config(t, role, "global", nil).OutgoingRPC(), DialTimeout: dialTimeout})
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// WantDenied fails t unless err is a permission_denied error.
func WantDenied(t testing.TB, what string, err error) {
	t.Helper()
	if structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("%s: err = %v, want permission_denied", what, err)
	}
}

// Announce is the Status.Announce of a server named "stranger" that
// claims the RPC address 127.0.0.1:1, as a server joining would send it.
func Announce(p *pool.Pool, addr string) error {
	var members structs.ServerMembersResponse
	return p.RPC(addr, "Status.Announce", &structs.ServerAnnounceRequest{Member: structs.ServerMember{
		ID: "stranger", Name: "stranger", RPCAddr: "127.0.0.1:1", Region: "global", Status: "alive"}}, &members)
}

// WantRaftRefused opens a Raft connection to addr over TLS with tlsConf
// and fails t unless the server closes it: the handshake succeeds (the CA
// signed the certificate), then the server closes the connection on the
// Raft byte.
func WantRaftRefused(t testing.TB, addr string, tlsConf *tls.Config) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tc, err := pool.DialTLS(conn, tlsConf, dialTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write([]byte{pool.ProtocolRaft}); err != nil {
		t.Fatal(err)
	}
	tc.SetReadDeadline(time.Now().Add(dialTimeout))
	if _, err := tc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("raft to %s: read %v, want the connection closed", addr, err)
	}
}

// FillConnLimit opens limit plain TCP connections to addr from the local
// address from (e.g. "127.0.0.2", so that other tests' and servers'
// connections from 127.0.0.1 do not count), then one more, and fails t
// unless the server closes that one within two seconds. It returns the
// held connections' closer. The held connections send nothing, so call
// it well within the server's handshake timeout of each other check.
// from must be a local address (any of 127.0.0.0/8 on Linux).
func FillConnLimit(t testing.TB, addr, from string, limit int) (closeAll func()) {
	t.Helper()
	d := net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	held := make([]net.Conn, 0, limit)
	closeAll = func() {
		for _, c := range held {
			c.Close()
		}
	}
	for i := range limit + 1 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			closeAll()
			t.Fatalf("connection %d from %s: %v", i+1, from, err)
		}
		held = append(held, c)
	}
	if !WaitClosed(held[limit], 2*time.Second) {
		closeAll()
		t.Fatalf("connection %d from %s was not closed", limit+1, from)
	}
	if limit > 0 && WaitClosed(held[limit-1], 50*time.Millisecond) {
		closeAll()
		t.Fatalf("connection %d from %s was closed: the limit is below %d", limit, from, limit)
	}
	return closeAll
}

// WantServerOnlyRefused fails t unless the server at addr refuses, through
// p, two of the calls only servers may make: Eval.Dequeue (taking work
// from the leader's broker) and Plan.Submit (placing allocations).
func WantServerOnlyRefused(t testing.TB, p *pool.Pool, addr string) {
	t.Helper()
	var deq structs.EvalDequeueResponse
	WantDenied(t, "Eval.Dequeue", p.RPC(addr, "Eval.Dequeue", &structs.EvalDequeueRequest{
		Schedulers: []string{structs.JobTypeService}, Timeout: time.Millisecond}, &deq))
	var plan structs.PlanResponse
	WantDenied(t, "Plan.Submit", p.RPC(addr, "Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{EvalID: "x"}}, &plan))
}

// WantNodeCallsRefused fails t unless the server at addr refuses, through
// p, a heartbeat marking node down and an update completing allocID (an
// allocation of node), each with a wrong node secret. The caller checks
// that nothing was written.
func WantNodeCallsRefused(t testing.TB, p *pool.Pool, addr, nodeID, allocID string) {
	t.Helper()
	var reg structs.NodeUpdateResponse
	WantDenied(t, "heartbeat with a wrong secret", p.RPC(addr, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: nodeID, SecretID: "wrong", Status: structs.NodeStatusDown}, &reg))
	upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: allocID, ClientStatus: structs.AllocClientStatusComplete}},
		NodeSecrets: map[string]string{nodeID: "wrong"}}
	WantDenied(t, "allocation update with a wrong secret", p.RPC(addr, "Node.UpdateAlloc", upd, &structs.GenericResponse{}))
}

package sim

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/tlsutil/tlstest"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// The simulator plays client agents of a TLS cluster: its own transport
// dials with TLS and a client certificate, and its nodes register and
// heartbeat (with their secrets).
func TestSimOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t)
	c := testcluster.NewTestCluster(t, 1, func(_ int, cfg *server.Config) {
		cfg.TLS = ca.Config(t, tlsutil.RoleServer, "global", nil)
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.RaftNoSync = true
	})
	leader := c.WaitForLeader(t, 10*time.Second)
	s := startRegistered(t, &Config{
		Servers: []string{leader.RPCAddr()}, Nodes: 5, IDPrefix: "tls", Sessions: 1,
		TLS:       ca.Config(t, tlsutil.RoleClient, "global", nil).OutgoingRPC(),
		RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	waitUntil(t, "heartbeats over TLS", 5*time.Second, func() (bool, string) {
		st := s.Stats()
		return st.Heartbeats > 5 && st.HeartbeatsFailed == 0, st.String()
	})
	ns, err := leader.State().Nodes(nil)
	if err != nil || len(ns) != 5 || ns[0].Status != structs.NodeStatusReady {
		t.Fatalf("nodes %d (%v)", len(ns), err)
	}
}

// startRegistered starts a simulator with cfg, stopped when the test
// ends, and waits until all its nodes have registered.
func startRegistered(t *testing.T, cfg *Config) *Sim {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.WaitRegistered(ctx); err != nil {
		t.Fatalf("registering: %v (%s)", err, s.Stats())
	}
	return s
}

package testcluster

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server"
)

// StartOutsider starts a server that tries to join the servers at join
// (retry_join) with the TLS of tlsConf, such as a certificate that is not
// a server certificate. It bootstraps no cluster of its own and is shut
// down when t ends.
func StartOutsider(t testing.TB, join []string, tlsConf *tlsutil.Configurator) *server.Server {
	t.Helper()
	cfg := &server.Config{Name: "outsider", DataDir: t.TempDir(), BindAddr: "127.0.0.1", RetryJoin: join,
		RetryInterval: 50 * time.Millisecond, RaftTimeoutScale: 0.25, Logger: testLogger(), TLS: tlsConf}
	s, err := server.NewServer(cfg)
	if err != nil {
		t.Fatalf("start the outsider: %v", err)
	}
	t.Cleanup(func() { s.Shutdown() })
	return s
}

// RequireNeverJoins watches servers for d (at least twenty announce rounds
// of StartOutsider's 50 ms is a second) and fails t as soon as one lists
// outsider as a member or has other than want servers in its Raft
// configuration.
func RequireNeverJoins(t testing.TB, servers []*server.Server, outsider *server.Server, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, s := range servers {
			for _, m := range s.Members() {
				if m.RPCAddr == outsider.RPCAddr() {
					t.Fatalf("%s lists the outsider as a member", s.RPCAddr())
				}
			}
			f := s.Raft().GetConfiguration()
			if err := f.Error(); err != nil {
				t.Fatalf("%s: raft configuration: %v", s.RPCAddr(), err)
			}
			if got := f.Configuration().Servers; len(got) != want {
				t.Fatalf("%s: raft configuration %v, want %d servers", s.RPCAddr(), got, want)
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

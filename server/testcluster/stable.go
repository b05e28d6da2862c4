package testcluster

import "github.com/drover-project/drover/server"

// WithStableLeader gives every server Raft's default timeouts instead of
// the cluster's quarter-scale ones, for tests that assume the leader they
// found stays the leader (they test ACLs or endpoints, not failover). At
// a quarter scale the leader's lease is 125 ms: on a loaded machine (the
// race detector, every package's tests at once) a leader starved of CPU
// for longer steps down, and a write in flight then fails with an
// unknown outcome (504) that the test did not expect. Elections take
// about a second longer.
func WithStableLeader() Option {
	return func(_ int, cfg *server.Config) { cfg.RaftTimeoutScale = 1 }
}

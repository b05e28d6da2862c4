package server_test

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
)

// TestClusterUnderTightConnLimit: three servers on one address (loopback)
// with a per-address limit far below the default still elect a leader,
// replicate and forward: Raft holds a handful of connections per peer.
func TestClusterUnderTightConnLimit(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.RPCMaxConnsPerClient = 16
	}))
	leader := c.WaitForLeader(t, 10*time.Second)
	for _, s := range c.Servers() {
		if s != leader {
			registerJob(t, s, mock.Job().ID) // forwarded to the leader
			break
		}
	}
	c.Kill(c.Index(leader))
	next := c.WaitForLeader(t, 10*time.Second)
	registerJob(t, next, mock.Job().ID)
}

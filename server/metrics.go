package server

import (
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// Metric names. Each is emitted in one place; see the comment beside it.
var (
	// metricRaftApply: time from raft.Apply to the FSM's response.
	metricRaftApply = []string{"drover", "server", "raft_apply"}
	// metricForward: time spent forwarding a request to the leader.
	metricForward = []string{"drover", "server", "forward"}
	// metricVerifyLeader: time of one (batched) raft.VerifyLeader round.
	metricVerifyLeader = []string{"drover", "server", "verify_leader"}
	// metricLeaderBarrier: time of the Raft barrier on gaining leadership.
	metricLeaderBarrier = []string{"drover", "leader", "barrier"}
	// metricJobRegister etc.: endpoint latencies.
	metricJobRegister   = []string{"drover", "job", "register"}
	metricJobDeregister = []string{"drover", "job", "deregister"}
	metricNodeRegister  = []string{"drover", "node", "register"}
)

func measureSince(key []string, start time.Time) { metrics.MeasureSince(key, start) }

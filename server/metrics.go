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
	// metricNodeUpdateStatus: heartbeat latency on the leader.
	metricNodeUpdateStatus = []string{"drover", "node", "update_status"}
	// metricNodeUpdateAlloc: client allocation update, including the wait
	// for its (group-committed) Raft write.
	metricNodeUpdateAlloc = []string{"drover", "node", "update_alloc"}
	// metricEvalDequeue: a broker dequeue on the leader, including the wait.
	metricEvalDequeue = []string{"drover", "eval", "dequeue"}
	// metricEvalUpdate: a worker's evaluation write on the leader.
	metricEvalUpdate = []string{"drover", "eval", "update"}
	// metricPlanSubmit: a plan's time in the queue and applier.
	metricPlanSubmit = []string{"drover", "plan", "submit"}
	// metricJobPlan: a dry run.
	metricJobPlan = []string{"drover", "job", "plan"}
	// metricNodeEvalsAbsorbed: node events absorbed by an evaluation of
	// the job still waiting for delivery (one per job and event), counted
	// where the leader decides (node_evals.go).
	metricNodeEvalsAbsorbed = []string{"drover", "node", "evals_absorbed"}
)

func measureSince(key []string, start time.Time) { metrics.MeasureSince(key, start) }

func incrCounter(key []string, n float32) { metrics.IncrCounter(key, n) }

package client

import (
	metrics "github.com/hashicorp/go-metrics"
)

// Metric names. Each is emitted in one place; see the comment beside it.
var (
	// metricRegister: time of a successful Node.Register.
	metricRegister = []string{"drover", "client", "register"}
	// metricHeartbeat: time of a successful heartbeat (Node.UpdateStatus).
	metricHeartbeat = []string{"drover", "client", "heartbeat"}
	// metricHeartbeatFailed: heartbeats that failed on every server.
	metricHeartbeatFailed = []string{"drover", "client", "heartbeat_failed"}
	// metricUpdateBatch: time of one Node.UpdateAlloc carrying a batch.
	metricUpdateBatch = []string{"drover", "client", "update_allocs"}
	// metricUpdateBatchSize: allocations carried by one batch.
	metricUpdateBatchSize = []string{"drover", "client", "update_allocs_batch_size"}
	// metricAllocsStarted: allocations the client started running.
	metricAllocsStarted = []string{"drover", "client", "allocs_started"}
)

func incr(key []string) { metrics.IncrCounter(key, 1) }

package structs

// QueueStatsResponse is the scheduling queue as the leader sees it
// (GET /v1/operator/queue, `drover operator queue`); docs/metrics.md,
// "Queue metrics", defines each figure.
type QueueStatsResponse struct {
	// Waiting counts allocations placed and not started, in total, per
	// job (sorted by namespace and job ID) and per node class ("": none).
	Waiting        int
	WaitingByJob   []*QueueJobCount
	WaitingByClass map[string]int
	// Queued counts allocations not yet placed (the job summaries'
	// queued counts).
	Queued int
	// LongestWaitSeconds is how long the longest-waiting work has waited
	// to start, overall and per priority band (low, normal, high).
	LongestWaitSeconds       float64
	LongestWaitSecondsByBand map[string]float64
	// Blocked counts blocked evaluations, in total and by reason
	// (capacity, constraints).
	Blocked         int
	BlockedByReason map[string]int
	// BlockedCapacityByClass counts the evaluations blocked on capacity
	// per node class whose nodes were feasible but full.
	BlockedCapacityByClass map[string]int
	// Placements counts the new allocations the answering leader's plan
	// applier committed since its process started.
	Placements uint64
}

// QueueJobCount is one job's count of waiting allocations.
type QueueJobCount struct {
	Namespace string
	JobID     string
	Count     int
}

package planqueue

import "github.com/hashicorp/go-metrics"

// Metric names emitted by EmitStats (gauges).
const (
	MetricQueueDepth = "plan.queue_depth"
	MetricInFlight   = "plan.in_flight"
)

// Stats is a point-in-time count.
type Stats struct {
	Depth    int // queued, not yet dequeued
	InFlight int // dequeued, not yet answered
}

// Stats returns current counts.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{Depth: len(q.queued), InFlight: len(q.inflight)}
}

// EmitStats sets the gauges from Stats; the leader calls it periodically.
func (q *Queue) EmitStats() {
	s := q.Stats()
	m := q.metrics
	if m == nil {
		m = metrics.Default()
	}
	m.SetGauge([]string{MetricQueueDepth}, float32(s.Depth))
	m.SetGauge([]string{MetricInFlight}, float32(s.InFlight))
}

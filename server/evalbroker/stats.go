package evalbroker

import "github.com/hashicorp/go-metrics"

// Metric names emitted by EmitStats (gauges). Per-scheduler gauges carry a
// "scheduler" label.
const (
	MetricTotalReady      = "broker.total_ready"
	MetricTotalUnacked    = "broker.total_unacked"
	MetricTotalPending    = "broker.total_pending"
	MetricTotalWaiting    = "broker.total_waiting"
	MetricTotalCancelable = "broker.total_cancelable"
	MetricReady           = "broker.ready"
	MetricUnacked         = "broker.unacked"
)

// SchedulerStats counts one ready queue (a scheduler type or FailedQueue).
type SchedulerStats struct {
	Ready   int
	Unacked int
}

// Stats is a point-in-time count of what the broker holds.
type Stats struct {
	TotalReady   int // in ready queues, FailedQueue included
	TotalUnacked int // delivered, not yet acked or nacked
	// TotalPending waits because its job has an outstanding evaluation
	// (Nomad calls this "blocked" in the broker).
	TotalPending    int
	TotalWaiting    int // held until WaitUntil or a nack delay passes
	TotalCancelable int // superseded, not yet taken by Cancelable
	// TotalGated waits in a released batch for the higher priorities
	// before it to be acked (see EnqueueAll).
	TotalGated  int
	ByScheduler map[string]SchedulerStats
}

// Stats returns current counts. It walks the job pending set, so call it
// periodically, not per evaluation.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{
		TotalWaiting:    len(b.delayed),
		TotalCancelable: len(b.cancelable),
		TotalGated:      b.gatedCountLocked(),
		ByScheduler:     map[string]SchedulerStats{},
	}
	for name, q := range b.ready {
		st := s.ByScheduler[name]
		st.Ready = q.Len()
		s.ByScheduler[name] = st
		s.TotalReady += q.Len()
	}
	for _, d := range b.unack {
		st := s.ByScheduler[d.queue]
		st.Unacked++
		s.ByScheduler[d.queue] = st
		s.TotalUnacked++
	}
	for _, w := range b.pending {
		s.TotalPending += len(w)
	}
	return s
}

// EmitStats sets the broker gauges from Stats; the leader calls it
// periodically.
func (b *Broker) EmitStats() {
	s := b.Stats()
	m := b.metrics
	if m == nil {
		m = metrics.Default()
	}
	m.SetGauge([]string{MetricTotalReady}, float32(s.TotalReady))
	m.SetGauge([]string{MetricTotalUnacked}, float32(s.TotalUnacked))
	m.SetGauge([]string{MetricTotalPending}, float32(s.TotalPending))
	m.SetGauge([]string{MetricTotalWaiting}, float32(s.TotalWaiting))
	m.SetGauge([]string{MetricTotalCancelable}, float32(s.TotalCancelable))
	for name, st := range s.ByScheduler {
		labels := []metrics.Label{{Name: "scheduler", Value: name}}
		m.SetGaugeWithLabels([]string{MetricReady}, float32(st.Ready), labels)
		m.SetGaugeWithLabels([]string{MetricUnacked}, float32(st.Unacked), labels)
	}
}

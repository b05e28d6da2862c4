package blockedevals

import (
	"github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/structs"
)

// Metric names emitted by EmitStats (gauges).
const (
	MetricTotalBlocked  = "blocked_evals.total_blocked"
	MetricTotalEscaped  = "blocked_evals.total_escaped"
	MetricTotalNodeTied = "blocked_evals.total_node_tied"
)

// Stats is a point-in-time count of tracked evaluations.
type Stats struct {
	TotalBlocked  int // every tracked evaluation
	TotalEscaped  int // escaped computed-class tracking: any class releases them
	TotalNodeTied int // tied to a node (system jobs): only that node releases them
}

// Stats returns current counts.
func (b *BlockedEvals) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{TotalBlocked: len(b.byID)}
	for _, t := range b.byID {
		switch {
		case t.eval.NodeID != "":
			s.TotalNodeTied++
		case t.eval.EscapedComputedClass:
			s.TotalEscaped++
		}
	}
	return s
}

// EmitStats sets the gauges from Stats; the leader calls it periodically.
func (b *BlockedEvals) EmitStats() {
	s := b.Stats()
	m := b.metrics
	if m == nil {
		m = metrics.Default()
	}
	m.SetGauge([]string{MetricTotalBlocked}, float32(s.TotalBlocked))
	m.SetGauge([]string{MetricTotalEscaped}, float32(s.TotalEscaped))
	m.SetGauge([]string{MetricTotalNodeTied}, float32(s.TotalNodeTied))
}

// Each calls fn with every tracked evaluation, in no particular order,
// holding the tracker's lock: fn must be quick, must not call the tracker
// and must not modify the evaluation.
func (b *BlockedEvals) Each(fn func(*structs.Evaluation)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.byID {
		fn(t.eval)
	}
}

package server

import (
	"context"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// DefaultJobGaugeInterval is how often the leader emits the job summary and
// job status gauges when Config.JobGaugeInterval is zero.
const DefaultJobGaugeInterval = 5 * time.Second

// Leader gauges, under Nomad's names (docs/metrics.md maps them to
// Prometheus). The pipeline gauges are set every statsInterval, the job
// gauges every Config.JobGaugeInterval; only the leader sets them.
var (
	// metricHeartbeatActive: nodes with a live heartbeat timer.
	metricHeartbeatActive = []string{"nomad", "nomad", "heartbeat", "active"}

	// Eval broker (Nomad's "blocked" in the broker is Drover's pending).
	metricBrokerTotalReady      = []string{"nomad", "nomad", "broker", "total_ready"}
	metricBrokerTotalUnacked    = []string{"nomad", "nomad", "broker", "total_unacked"}
	metricBrokerTotalPending    = []string{"nomad", "nomad", "broker", "total_pending"}
	metricBrokerTotalWaiting    = []string{"nomad", "nomad", "broker", "total_waiting"}
	metricBrokerTotalCancelable = []string{"nomad", "nomad", "broker", "total_cancelable"}

	// Blocked evaluations.
	metricBlockedTotal    = []string{"nomad", "nomad", "blocked_evals", "total_blocked"}
	metricBlockedEscaped  = []string{"nomad", "nomad", "blocked_evals", "total_escaped"}
	metricBlockedNodeTied = []string{"drover", "blocked_evals", "total_node_tied"}

	// Plan queue.
	metricPlanQueueDepth = []string{"nomad", "nomad", "plan", "queue_depth"}
	metricPlanInFlight   = []string{"drover", "plan", "in_flight"}

	// Job status counts (no labels).
	metricJobStatusPending = []string{"nomad", "nomad", "job_status", "pending"}
	metricJobStatusRunning = []string{"nomad", "nomad", "job_status", "running"}
	metricJobStatusDead    = []string{"nomad", "nomad", "job_status", "dead"}
)

// jobSummaryMetric names the job summary gauge of one count
// (nomad.nomad.job_summary.<count>), labelled job, task_group, namespace.
func jobSummaryMetric(count string) []string {
	return []string{"nomad", "nomad", "job_summary", count}
}

// brokerSchedulerMetric names a per-queue broker gauge
// (nomad.nomad.broker.<scheduler>.<what>), as Nomad does.
func brokerSchedulerMetric(scheduler, what string) []string {
	return []string{"nomad", "nomad", "broker", scheduler, what}
}

// emitPipelineGauges sets the eval broker, blocked evals, plan queue and
// heartbeat gauges. It reads only counters the components keep (the
// broker walks its pending set), never the state store.
func (s *Server) emitPipelineGauges() {
	b := s.broker.Stats()
	metrics.SetGauge(metricBrokerTotalReady, float32(b.TotalReady))
	metrics.SetGauge(metricBrokerTotalUnacked, float32(b.TotalUnacked))
	metrics.SetGauge(metricBrokerTotalPending, float32(b.TotalPending))
	metrics.SetGauge(metricBrokerTotalWaiting, float32(b.TotalWaiting))
	metrics.SetGauge(metricBrokerTotalCancelable, float32(b.TotalCancelable))
	for name, st := range b.ByScheduler {
		metrics.SetGauge(brokerSchedulerMetric(name, "ready"), float32(st.Ready))
		metrics.SetGauge(brokerSchedulerMetric(name, "unacked"), float32(st.Unacked))
	}
	bl := s.blocked.Stats()
	metrics.SetGauge(metricBlockedTotal, float32(bl.TotalBlocked))
	metrics.SetGauge(metricBlockedEscaped, float32(bl.TotalEscaped))
	metrics.SetGauge(metricBlockedNodeTied, float32(bl.TotalNodeTied))
	pq := s.planQueue.Stats()
	metrics.SetGauge(metricPlanQueueDepth, float32(pq.Depth))
	metrics.SetGauge(metricPlanInFlight, float32(pq.InFlight))
	metrics.SetGauge(metricHeartbeatActive, float32(s.heartbeats.Tracked()))
}

// gaugeSink is the part of go-metrics the job gauges use (tests and the
// benchmark pass their own).
type gaugeSink interface {
	SetGauge(key []string, val float32)
	SetGaugeWithLabels(key []string, val float32, labels []metrics.Label)
}

// globalGauges sends gauges to go-metrics' global sink.
type globalGauges struct{}

func (globalGauges) SetGauge(key []string, val float32) { metrics.SetGauge(key, val) }
func (globalGauges) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	metrics.SetGaugeWithLabels(key, val, labels)
}

// emitJobGauges sets, from one state snapshot's job summary table, the
// seven job summary gauges of every task group (labels job, task_group,
// namespace), and from its job table the job status counts. Its cost
// grows with jobs and groups, never with allocations: the summary table
// already holds the counts.
func emitJobGauges(st *state.StateStore, sink gaugeSink) error {
	summaries, err := st.JobSummaries(nil)
	if err != nil {
		return err
	}
	for _, js := range summaries {
		for tg, c := range js.Summary {
			labels := []metrics.Label{{Name: "job", Value: js.JobID},
				{Name: "task_group", Value: tg}, {Name: "namespace", Value: js.Namespace}}
			sink.SetGaugeWithLabels(jobSummaryMetric("queued"), float32(c.Queued), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("complete"), float32(c.Complete), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("failed"), float32(c.Failed), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("running"), float32(c.Running), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("starting"), float32(c.Starting), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("lost"), float32(c.Lost), labels)
			sink.SetGaugeWithLabels(jobSummaryMetric("unknown"), float32(c.Unknown), labels)
		}
	}
	jobs, err := st.Jobs(nil)
	if err != nil {
		return err
	}
	var pending, running, dead int
	for _, j := range jobs {
		switch j.Status {
		case structs.JobStatusRunning:
			running++
		case structs.JobStatusDead:
			dead++
		default:
			pending++
		}
	}
	sink.SetGauge(metricJobStatusPending, float32(pending))
	sink.SetGauge(metricJobStatusRunning, float32(running))
	sink.SetGauge(metricJobStatusDead, float32(dead))
	return nil
}

// jobGauges emits the job gauges and the queue gauges every Config.JobGaugeInterval while this
// server leads (it runs as one of the leader's loops).
func (s *Server) jobGauges(ctx context.Context) {
	t := time.NewTicker(s.config.JobGaugeInterval)
	defer t.Stop()
	var queue queueGauges
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := emitJobGauges(s.State(), globalGauges{}); err != nil {
				s.logger.Warn("failed to emit job gauges", "error", err)
			}
			if q, err := s.QueueStats(); err != nil {
				s.logger.Warn("failed to emit queue gauges", "error", err)
			} else {
				queue.emit(q, globalGauges{})
			}
			if err := emitPoolGauges(s.State(), globalGauges{}); err != nil {
				s.logger.Warn("failed to emit autoscaled pool gauges", "error", err)
			}
		}
	}
}

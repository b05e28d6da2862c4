package server

import (
	"errors"
	"sort"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Queue metrics (docs/metrics.md, "Queue metrics"): what is waiting to
// run, for how long, and why. The leader emits them with the job gauges.
var (
	// metricQueueWaiting: allocations placed and not started, in total,
	// per job (labels namespace, job) and per node class (label
	// node_class).
	metricQueueWaiting        = []string{"drover", "queue", "waiting"}
	metricQueueWaitingByJob   = []string{"drover", "queue", "waiting_by_job"}
	metricQueueWaitingByClass = []string{"drover", "queue", "waiting_by_class"}
	// metricQueueLongestWait: seconds the longest-waiting work has waited,
	// overall and per priority band (label band).
	metricQueueLongestWait       = []string{"drover", "queue", "longest_wait_seconds"}
	metricQueueLongestWaitByBand = []string{"drover", "queue", "longest_wait_seconds_by_band"}
	// metricBlockedByReason: blocked evaluations by reason (label reason).
	metricBlockedByReason = []string{"drover", "blocked_evals", "by_reason"}
	// metricEvalsBlocked: counter of evaluations the leader blocked, by
	// reason (label reason). Counted where the FSM hands a blocked
	// evaluation to the tracker, which also sees every reblock (a reblock
	// is an evaluation write), and not on restores after a failover.
	metricEvalsBlocked = []string{"drover", "blocked_evals", "blocked"}
	// metricBlockedCapacityByClass: capacity-blocked evaluations per node
	// class whose nodes were feasible but full (label node_class).
	metricBlockedCapacityByClass = []string{"drover", "blocked_evals", "capacity_by_class"}
)

// Priority bands of the longest-wait metric, over Nomad's priorities 1 to
// 100 (default 50).
const (
	BandLow    = "low"    // 1-29: batch and best-effort work
	BandNormal = "normal" // 30-69: the default priority 50 and its neighbours
	BandHigh   = "high"   // 70-100 (and the core jobs above it)
)

// QueueBands lists the priority bands, lowest first.
var QueueBands = []string{BandLow, BandNormal, BandHigh}

// PriorityBand returns the band of a job priority.
func PriorityBand(priority int) string {
	switch {
	case priority < 30:
		return BandLow
	case priority < 70:
		return BandNormal
	default:
		return BandHigh
	}
}

// Reasons an evaluation is blocked.
const (
	// BlockedCapacity: some node passed the group's constraints but had
	// too few free resources (or there were no nodes to try).
	BlockedCapacity = "capacity"
	// BlockedConstraints: every node tried was filtered out by the
	// group's constraints, datacenters, drivers or node pool; more
	// capacity of the same kind would not help.
	BlockedConstraints = "constraints"
)

// BlockedReasons lists the reasons, in the order the CLI prints them.
// Drover has no resource quotas, so nothing is blocked by quota.
var BlockedReasons = []string{BlockedCapacity, BlockedConstraints}

// BlockedReason classifies a blocked evaluation: capacity if any failed
// group found a feasible node that was exhausted or found no node to try,
// constraints if every failed group had all its nodes filtered out.
func BlockedReason(e *structs.Evaluation) string {
	if len(e.FailedTGAllocs) == 0 {
		return BlockedCapacity
	}
	for _, m := range e.FailedTGAllocs {
		if m == nil || m.NodesExhausted > 0 || m.NodesFiltered == 0 {
			return BlockedCapacity
		}
	}
	return BlockedConstraints
}

// countBlocked counts one evaluation blocked on the leader (fsm_hooks.go).
func countBlocked(e *structs.Evaluation) {
	metrics.IncrCounterWithLabels(metricEvalsBlocked, 1, []metrics.Label{{Name: "reason", Value: BlockedReason(e)}})
}

// QueueJob names a job in QueueStats.
type QueueJob struct {
	Namespace, JobID string
}

// QueueStats is the queue at one instant.
type QueueStats struct {
	// Waiting counts allocations placed and not started (client status
	// pending, desired status run), in total, per job and per node class
	// ("" for nodes without a class, or nodes gone from the state).
	Waiting        int
	WaitingByJob   map[QueueJob]int
	WaitingByClass map[string]int
	// LongestWait is how long the longest-waiting work has waited:
	// allocations placed and not started since the evaluation that placed
	// them was created (the job's registration, for a new job) or, if
	// earlier, their own creation; work not yet placed since its blocked
	// evaluation was created. LongestWaitByBand splits it by the job's
	// priority band; every band is present (zero if nothing waits).
	LongestWait       time.Duration
	LongestWaitByBand map[string]time.Duration
	// Blocked counts blocked evaluations by reason (every reason present).
	Blocked map[string]int
	// BlockedCapacityByClass counts, per node class, the evaluations
	// blocked on capacity that found nodes of the class feasible but full
	// (the scheduler's ClassExhausted; nodes without a class are not
	// counted). An evaluation counts once per class.
	BlockedCapacityByClass map[string]int
}

// blockedSource is what the queue stats read from the blocked evals
// tracker.
type blockedSource interface {
	Each(fn func(*structs.Evaluation))
}

// computeQueueStats reads the queue from the store's index of waiting
// allocations and from the blocked evaluations: its cost grows with the
// allocations waiting and the evaluations blocked, never with every
// allocation.
func computeQueueStats(st *state.StateStore, blocked blockedSource, now time.Time) (QueueStats, error) {
	q := QueueStats{WaitingByJob: map[QueueJob]int{}, WaitingByClass: map[string]int{},
		LongestWaitByBand: make(map[string]time.Duration, len(QueueBands)),
		Blocked:           make(map[string]int, len(BlockedReasons)), BlockedCapacityByClass: map[string]int{}}
	for _, b := range QueueBands {
		q.LongestWaitByBand[b] = 0
	}
	for _, r := range BlockedReasons {
		q.Blocked[r] = 0
	}
	wait := func(priority int, since int64) {
		if since <= 0 {
			return
		}
		d := max(now.Sub(time.Unix(0, since)), 0)
		q.LongestWait = max(q.LongestWait, d)
		band := PriorityBand(priority)
		q.LongestWaitByBand[band] = max(q.LongestWaitByBand[band], d)
	}
	classes := map[string]string{} // node ID -> class
	evals := map[string]int64{}    // eval ID -> create time (0: unknown)
	var lookupErr error
	err := st.WaitingAllocs(nil, func(a *structs.Allocation) bool {
		q.Waiting++
		q.WaitingByJob[QueueJob{a.Namespace, a.JobID}]++
		class, ok := classes[a.NodeID]
		if !ok {
			n, err := st.NodeByID(nil, a.NodeID)
			switch {
			case err == nil:
				class = n.NodeClass
			case !errors.Is(err, structs.ErrNotFound):
				lookupErr = err
				return false
			}
			classes[a.NodeID] = class
		}
		q.WaitingByClass[class]++
		since := a.CreateTime
		evalTime, ok := evals[a.EvalID]
		if !ok {
			if e, err := st.EvalByID(nil, a.EvalID); err == nil {
				evalTime = e.CreateTime
			}
			evals[a.EvalID] = evalTime
		}
		if evalTime > 0 && evalTime < since {
			since = evalTime
		}
		priority := structs.DefaultPriority
		if a.Job != nil {
			priority = a.Job.Priority
		}
		wait(priority, since)
		return true
	})
	if err == nil {
		err = lookupErr
	}
	if err != nil {
		return QueueStats{}, err
	}
	if blocked != nil {
		blocked.Each(func(e *structs.Evaluation) {
			reason := BlockedReason(e)
			q.Blocked[reason]++
			wait(e.Priority, e.CreateTime)
			if reason == BlockedCapacity {
				countExhaustedClasses(e, q.BlockedCapacityByClass)
			}
		})
	}
	return q, nil
}

// countExhaustedClasses adds one to counts for each node class in which
// any of e's failed groups found full nodes.
func countExhaustedClasses(e *structs.Evaluation, counts map[string]int) {
	if len(e.FailedTGAllocs) == 1 { // the common case: no set needed
		for _, m := range e.FailedTGAllocs {
			if m != nil {
				for c := range m.ClassExhausted {
					counts[c]++
				}
			}
		}
		return
	}
	seen := map[string]bool{}
	for _, m := range e.FailedTGAllocs {
		if m == nil {
			continue
		}
		for c := range m.ClassExhausted {
			if !seen[c] {
				seen[c] = true
				counts[c]++
			}
		}
	}
}

// queueGauges remembers which labelled gauges the last emission set, so
// that a job or class that stopped waiting is set to zero once rather
// than keeping its last value until the gauge expires.
type queueGauges struct {
	lastJobs    map[QueueJob]bool
	lastClasses map[string]bool
	lastBlocked map[string]bool // classes of BlockedCapacityByClass
}

// emit sets the queue gauges from q.
func (g *queueGauges) emit(q QueueStats, sink gaugeSink) {
	sink.SetGauge(metricQueueWaiting, float32(q.Waiting))
	jobs := make(map[QueueJob]bool, len(q.WaitingByJob))
	for j, n := range q.WaitingByJob {
		sink.SetGaugeWithLabels(metricQueueWaitingByJob, float32(n), jobLabels(j))
		jobs[j] = true
	}
	for j := range g.lastJobs {
		if !jobs[j] {
			sink.SetGaugeWithLabels(metricQueueWaitingByJob, 0, jobLabels(j))
		}
	}
	classes := make(map[string]bool, len(q.WaitingByClass))
	for c, n := range q.WaitingByClass {
		sink.SetGaugeWithLabels(metricQueueWaitingByClass, float32(n), classLabels(c))
		classes[c] = true
	}
	for c := range g.lastClasses {
		if !classes[c] {
			sink.SetGaugeWithLabels(metricQueueWaitingByClass, 0, classLabels(c))
		}
	}
	blockedClasses := make(map[string]bool, len(q.BlockedCapacityByClass))
	for c, n := range q.BlockedCapacityByClass {
		sink.SetGaugeWithLabels(metricBlockedCapacityByClass, float32(n), classLabels(c))
		blockedClasses[c] = true
	}
	for c := range g.lastBlocked {
		if !blockedClasses[c] {
			sink.SetGaugeWithLabels(metricBlockedCapacityByClass, 0, classLabels(c))
		}
	}
	g.lastJobs, g.lastClasses, g.lastBlocked = jobs, classes, blockedClasses
	sink.SetGauge(metricQueueLongestWait, float32(q.LongestWait.Seconds()))
	for b, d := range q.LongestWaitByBand {
		sink.SetGaugeWithLabels(metricQueueLongestWaitByBand, float32(d.Seconds()), []metrics.Label{{Name: "band", Value: b}})
	}
	for r, n := range q.Blocked {
		sink.SetGaugeWithLabels(metricBlockedByReason, float32(n), []metrics.Label{{Name: "reason", Value: r}})
	}
}

func jobLabels(j QueueJob) []metrics.Label {
	return []metrics.Label{{Name: "namespace", Value: j.Namespace}, {Name: "job", Value: j.JobID}}
}

func classLabels(c string) []metrics.Label {
	return []metrics.Label{{Name: "node_class", Value: c}}
}

// QueueStats returns the queue as the leader sees it now. Only the
// leader's figures are meaningful: blocked evaluations are tracked there.
func (s *Server) QueueStats() (QueueStats, error) {
	return computeQueueStats(s.State(), s.blocked, time.Now())
}

// QueueStats answers GET /v1/operator/queue on the leader (the blocked
// evaluations are tracked there). Besides QueueStats' figures it counts
// the allocations not yet placed from the job summaries, a read that
// grows with the jobs; only this on-demand call makes it, never the
// periodic gauges.
func (op *Operator) QueueStats(args *structs.GenericRequest, reply *structs.QueueStatsResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.QueueStats", args, args, reply); done {
		return err
	}
	q, err := s.QueueStats()
	if err != nil {
		return err
	}
	summaries, err := s.State().JobSummaries(nil)
	if err != nil {
		return err
	}
	queued := 0
	for _, js := range summaries {
		for _, c := range js.Summary {
			queued += c.Queued
		}
	}
	*reply = structs.QueueStatsResponse{Waiting: q.Waiting, WaitingByClass: q.WaitingByClass, Queued: queued,
		LongestWaitSeconds: q.LongestWait.Seconds(), LongestWaitSecondsByBand: make(map[string]float64, len(q.LongestWaitByBand)),
		BlockedByReason: q.Blocked, BlockedCapacityByClass: q.BlockedCapacityByClass, Placements: s.placements.Load()}
	for b, d := range q.LongestWaitByBand {
		reply.LongestWaitSecondsByBand[b] = d.Seconds()
	}
	for _, n := range q.Blocked {
		reply.Blocked += n
	}
	for j, n := range q.WaitingByJob {
		reply.WaitingByJob = append(reply.WaitingByJob, &structs.QueueJobCount{Namespace: j.Namespace, JobID: j.JobID, Count: n})
	}
	sort.Slice(reply.WaitingByJob, func(a, b int) bool {
		x, y := reply.WaitingByJob[a], reply.WaitingByJob[b]
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		return x.JobID < y.JobID
	})
	return nil
}

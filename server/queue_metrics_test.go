package server

import (
	metrics "github.com/hashicorp/go-metrics"

	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// fakeBlocked is a blocked evals tracker holding a fixed list.
type fakeBlocked []*structs.Evaluation

func (f fakeBlocked) Each(fn func(*structs.Evaluation)) {
	for _, e := range f {
		fn(e)
	}
}

func TestPriorityBand(t *testing.T) {
	for p, want := range map[int]string{1: BandLow, 29: BandLow, 30: BandNormal, 50: BandNormal,
		69: BandNormal, 70: BandHigh, 100: BandHigh, structs.CoreJobPriority: BandHigh} {
		if got := PriorityBand(p); got != want {
			t.Errorf("PriorityBand(%d) = %s, want %s", p, got, want)
		}
	}
}

func TestBlockedReason(t *testing.T) {
	for _, c := range []struct {
		name   string
		failed map[string]*structs.AllocMetric
		want   string
	}{
		{"no metrics", nil, BlockedCapacity},
		{"exhausted", map[string]*structs.AllocMetric{"web": {NodesEvaluated: 3, NodesFiltered: 1, NodesExhausted: 2}}, BlockedCapacity},
		{"no nodes", map[string]*structs.AllocMetric{"web": {}}, BlockedCapacity},
		{"all filtered", map[string]*structs.AllocMetric{"web": {NodesEvaluated: 3, NodesFiltered: 3,
			ConstraintFiltered: map[string]int{"${attr.kernel.name} = plan9": 3}}}, BlockedConstraints},
		{"one group exhausted, one filtered", map[string]*structs.AllocMetric{
			"a": {NodesEvaluated: 3, NodesFiltered: 3}, "b": {NodesEvaluated: 3, NodesExhausted: 3}}, BlockedCapacity},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := BlockedReason(&structs.Evaluation{FailedTGAllocs: c.failed}); got != c.want {
				t.Errorf("BlockedReason = %s, want %s", got, c.want)
			}
		})
	}
}

// The queue on three nodes (two of class "gpu", one without a class): a
// job whose allocations fit and were placed but have not started (one on
// each class), one whose allocation runs, a low-priority job blocked on
// capacity and a high-priority one blocked by its constraints. Every
// figure is exact against the allocations' and evaluations' timestamps.
func TestComputeQueueStats(t *testing.T) {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	gpu1, gpu2, plain := mock.Node(), mock.Node(), mock.Node()
	gpu1.NodeClass, gpu2.NodeClass, plain.NodeClass = "gpu", "gpu", ""
	for i, n := range []*structs.Node{gpu1, gpu2, plain} {
		must(t, st.UpsertNode(uint64(10+i), n, nil))
	}
	now := time.Unix(1800000000, 0)
	at := func(ago time.Duration) int64 { return now.Add(-ago).UnixNano() }

	fits := mock.Job() // priority 50: band normal
	runs := mock.Job()
	runs.Priority = 80
	must(t, st.UpsertJob(20, fits, nil))
	must(t, st.UpsertJob(21, runs, nil))

	// fits: its registration's evaluation at -90s placed three allocations
	// at -60s; the one on plain was created at -75s by another evaluation
	// that is gone (collected): its own creation counts.
	reg := mock.EvalFor(fits)
	reg.CreateTime = at(90 * time.Second)
	must(t, st.UpsertEvals(22, []*structs.Evaluation{reg}))
	var allocs []*structs.Allocation
	for _, n := range []*structs.Node{gpu1, gpu2} {
		a := mock.Alloc(fits, n)
		a.EvalID, a.CreateTime = reg.ID, at(60*time.Second)
		allocs = append(allocs, a)
	}
	orphan := mock.Alloc(fits, plain)
	orphan.CreateTime = at(75 * time.Second)
	allocs = append(allocs, orphan)
	// Not waiting: running, told to stop, and unplaced.
	running := mock.Alloc(runs, gpu1)
	running.ClientStatus, running.CreateTime = structs.AllocClientStatusRunning, at(time.Hour)
	stopping := mock.Alloc(runs, gpu2)
	stopping.DesiredStatus, stopping.CreateTime = structs.AllocDesiredStatusStop, at(time.Hour)
	allocs = append(allocs, running, stopping)
	must(t, st.UpsertAllocs(23, allocs))

	// Blocked: a priority-10 batch job out of capacity since -120s, and a
	// priority-90 job no node satisfies since -30s.
	big, picky := mock.BatchJob(), mock.Job()
	big.Priority, picky.Priority = 10, 90
	capacity := mock.EvalFor(big).CreateBlockedEval(nil, false, map[string]*structs.AllocMetric{
		"web": {NodesEvaluated: 3, NodesExhausted: 3, ClassExhausted: map[string]int{"gpu": 2}}}, now.Add(-120*time.Second))
	constraints := mock.EvalFor(picky).CreateBlockedEval(nil, false, map[string]*structs.AllocMetric{
		"web": {NodesEvaluated: 3, NodesFiltered: 3}}, now.Add(-30*time.Second))

	q, err := computeQueueStats(st, fakeBlocked{capacity, constraints}, now)
	if err != nil {
		t.Fatal(err)
	}
	if q.Waiting != 3 {
		t.Errorf("Waiting = %d, want 3", q.Waiting)
	}
	if got := q.WaitingByJob; len(got) != 1 || got[QueueJob{fits.Namespace, fits.ID}] != 3 {
		t.Errorf("WaitingByJob = %v, want 3 of %s", got, fits.ID)
	}
	if got := q.WaitingByClass; len(got) != 2 || got["gpu"] != 2 || got[""] != 1 {
		t.Errorf("WaitingByClass = %v, want gpu:2 and none:1", got)
	}
	if q.LongestWait != 120*time.Second {
		t.Errorf("LongestWait = %v, want 2m0s (the capacity-blocked evaluation)", q.LongestWait)
	}
	wantBands := map[string]time.Duration{BandLow: 120 * time.Second, BandNormal: 90 * time.Second, BandHigh: 30 * time.Second}
	for b, want := range wantBands {
		if got := q.LongestWaitByBand[b]; got != want {
			t.Errorf("LongestWaitByBand[%s] = %v, want %v", b, got, want)
		}
	}
	if q.Blocked[BlockedCapacity] != 1 || q.Blocked[BlockedConstraints] != 1 || len(q.Blocked) != 2 {
		t.Errorf("Blocked = %v, want capacity:1 constraints:1", q.Blocked)
	}
	if got := q.BlockedCapacityByClass; len(got) != 1 || got["gpu"] != 1 {
		t.Errorf("BlockedCapacityByClass = %v, want gpu:1", got)
	}

	// The gauges: labelled by job, class, band and reason; once the job's
	// allocations start, its gauge and its class's drop to zero.
	var g queueGauges
	got := recordingGauges{}
	g.emit(q, got)
	jobKey := "drover.queue.waiting_by_job{job=" + fits.ID + ",namespace=default}"
	want := map[string]float32{
		"drover.queue.waiting{}": 3,
		jobKey:                   3,
		"drover.queue.waiting_by_class{node_class=gpu}":          2,
		"drover.queue.waiting_by_class{node_class=}":             1,
		"drover.queue.longest_wait_seconds{}":                    120,
		"drover.queue.longest_wait_seconds_by_band{band=low}":    120,
		"drover.queue.longest_wait_seconds_by_band{band=normal}": 90,
		"drover.queue.longest_wait_seconds_by_band{band=high}":   30,
		"drover.blocked_evals.by_reason{reason=capacity}":        1,
		"drover.blocked_evals.by_reason{reason=constraints}":     1,
		"drover.blocked_evals.capacity_by_class{node_class=gpu}": 1,
	}
	checkGauges(t, got, want)

	for _, a := range allocs[:3] {
		c := a.Copy()
		c.ClientStatus = structs.AllocClientStatusRunning
		must(t, st.UpdateAllocsFromClient(30, []*structs.Allocation{c}, nil))
	}
	q, err = computeQueueStats(st, fakeBlocked{}, now)
	if err != nil {
		t.Fatal(err)
	}
	got = recordingGauges{}
	g.emit(q, got)
	for k := range want {
		want[k] = 0
	}
	checkGauges(t, got, want)
}

func checkGauges(t *testing.T, got recordingGauges, want map[string]float32) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (set %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d gauges set, want %d: %v", len(got), len(want), got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkQueueStats is one leader pass of the queue gauges over 100,000
// allocations on 100 nodes, 1,000 of them placed and not started, with 50
// blocked evaluations.
func BenchmarkQueueStats(b *testing.B) {
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	nodes := make([]*structs.Node, 100)
	for i := range nodes {
		nodes[i] = mock.Node()
		nodes[i].NodeClass = []string{"", "gpu", "big"}[i%3]
		if err := st.UpsertNode(uint64(1+i), nodes[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	index := uint64(1000)
	for j := range 1000 {
		job := mock.Job()
		if err := st.UpsertJob(index, job, nil); err != nil {
			b.Fatal(err)
		}
		eval := mock.EvalFor(job)
		if err := st.UpsertEvals(index, []*structs.Evaluation{eval}); err != nil {
			b.Fatal(err)
		}
		allocs := make([]*structs.Allocation, 100)
		for i := range allocs {
			allocs[i] = mock.Alloc(job, nodes[(j+i)%len(nodes)])
			allocs[i].EvalID = eval.ID
			if i != 0 {
				allocs[i].ClientStatus = structs.AllocClientStatusRunning
			}
		}
		if err := st.UpsertAllocs(index+1, allocs); err != nil {
			b.Fatal(err)
		}
		index += 2
	}
	var blocked fakeBlocked
	for range 50 {
		blocked = append(blocked, mock.EvalFor(mock.Job()).CreateBlockedEval(nil, false,
			map[string]*structs.AllocMetric{"web": {NodesEvaluated: 100, NodesExhausted: 100}}, time.Unix(1700000000, 0)))
	}
	now := time.Unix(1800000000, 0)
	var g queueGauges
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		q, err := computeQueueStats(st, blocked, now)
		if err != nil {
			b.Fatal(err)
		}
		if q.Waiting != 1000 {
			b.Fatalf("Waiting = %d", q.Waiting)
		}
		g.emit(q, discardGauges{})
	}
}

type discardGauges struct{}

func (discardGauges) SetGauge([]string, float32)                            {}
func (discardGauges) SetGaugeWithLabels([]string, float32, []metrics.Label) {}

package server

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	metrics "github.com/hashicorp/go-metrics"
	prommetrics "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// recordingGauges keeps the last value of each gauge, keyed by
// "name{k=v,...}" with labels sorted.
type recordingGauges map[string]float32

func gaugeKey(key []string, labels []metrics.Label) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.Name+"="+l.Value)
	}
	sort.Strings(parts)
	return strings.Join(key, ".") + "{" + strings.Join(parts, ",") + "}"
}

func (r recordingGauges) SetGauge(key []string, val float32) { r[gaugeKey(key, nil)] = val }
func (r recordingGauges) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	r[gaugeKey(key, labels)] = val
}

// The job gauges report, per job and group, the counts of the job summary
// table under Nomad's names and labels, and the jobs by status.
func TestEmitJobGauges(t *testing.T) {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	node := mock.Node()
	if err := st.UpsertNode(10, node, nil); err != nil {
		t.Fatal(err)
	}
	web, idle := mock.Job(), mock.BatchJob()
	if err := st.UpsertJob(11, web, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertJob(12, idle, nil); err != nil {
		t.Fatal(err)
	}
	var allocs []*structs.Allocation
	for _, status := range []string{structs.AllocClientStatusRunning, structs.AllocClientStatusRunning,
		structs.AllocClientStatusFailed, structs.AllocClientStatusPending, structs.AllocClientStatusLost} {
		a := mock.Alloc(web, node)
		a.ClientStatus = status
		allocs = append(allocs, a)
	}
	if err := st.UpsertAllocs(13, allocs); err != nil {
		t.Fatal(err)
	}

	got := recordingGauges{}
	if err := emitJobGauges(st, got); err != nil {
		t.Fatal(err)
	}
	labels := func(job *structs.Job) string {
		return fmt.Sprintf("{job=%s,namespace=default,task_group=web}", job.ID)
	}
	want := map[string]float32{
		"nomad.nomad.job_summary.running" + labels(web):   2,
		"nomad.nomad.job_summary.failed" + labels(web):    1,
		"nomad.nomad.job_summary.starting" + labels(web):  1,
		"nomad.nomad.job_summary.lost" + labels(web):      1,
		"nomad.nomad.job_summary.complete" + labels(web):  0,
		"nomad.nomad.job_summary.queued" + labels(web):    0,
		"nomad.nomad.job_summary.unknown" + labels(web):   0,
		"nomad.nomad.job_summary.running" + labels(idle):  0,
		"nomad.nomad.job_summary.queued" + labels(idle):   0,
		"nomad.nomad.job_summary.complete" + labels(idle): 0,
		"nomad.nomad.job_status.running{}":                1,
		"nomad.nomad.job_status.pending{}":                1,
		"nomad.nomad.job_status.dead{}":                   0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (set %v), want %v", k, g, ok, v)
		}
	}
	// Seven counts per group of each of the two jobs, three statuses.
	if len(got) != 2*7+3 {
		t.Errorf("%d gauges set, want %d: %v", len(got), 2*7+3, got)
	}
}

// BenchmarkEmitJobGauges is one leader pass of the job gauges over 1,000
// jobs (one group each, ten allocations each) into the agent's sinks (the
// in-memory sink and go-metrics' Prometheus sink).
func BenchmarkEmitJobGauges(b *testing.B) {
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	node := mock.Node()
	if err := st.UpsertNode(1, node, nil); err != nil {
		b.Fatal(err)
	}
	index := uint64(2)
	for range 1000 {
		job := mock.Job()
		if err := st.UpsertJob(index, job, nil); err != nil {
			b.Fatal(err)
		}
		allocs := make([]*structs.Allocation, 10)
		for i := range allocs {
			allocs[i] = mock.Alloc(job, node)
			allocs[i].ClientStatus = structs.AllocClientStatusRunning
		}
		if err := st.UpsertAllocs(index+1, allocs); err != nil {
			b.Fatal(err)
		}
		index += 2
	}
	prom, err := prommetrics.NewPrometheusSinkFrom(prommetrics.PrometheusOpts{
		Name: "bench", Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	sink := metrics.FanoutSink{metrics.NewInmemSink(10e9, 60e9), prom}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := emitJobGauges(st, sink); err != nil {
			b.Fatal(err)
		}
	}
}

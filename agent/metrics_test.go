package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
)

// scrapeProm fetches GET /v1/metrics?format=prometheus as a Prometheus
// server would and parses it with Prometheus' own text parser, failing the
// test if it is not valid exposition format.
func scrapeProm(t *testing.T, baseURL string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(baseURL + "/v1/metrics?format=prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("scrape: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("not valid Prometheus text format: %v", err)
	}
	return mfs
}

// promValue returns the value of the first series of the family whose
// labels include want: a gauge's or counter's value, a summary's count.
func promValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if have[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// cumulativeSeries lists every counter's value and every summary's count
// by family and label set.
func cumulativeSeries(mfs map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			key := name + fmt.Sprint(m.Label)
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Summary != nil:
				out[key] = float64(m.Summary.GetSampleCount())
			}
		}
	}
	return out
}

// jsonIntervalTimestamp is the interval the JSON form of /v1/metrics shows.
func jsonIntervalTimestamp(t *testing.T, baseURL string) string {
	t.Helper()
	resp, err := http.Get(baseURL + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s metrics.MetricsSummary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Timestamp
}

// Counters and summaries on the Prometheus endpoint are cumulative: a
// scrape after the in-memory interval (which serves the JSON form) has
// rolled over still has every series of the scrape before, none smaller.
func TestPrometheusCountersCumulative(t *testing.T) {
	a := startDevAgent(t)
	url := a.HTTPURL()
	var reg structs.JobRegisterResponse
	if err := a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("metrics-count")}, &reg); err != nil {
		t.Fatal(err)
	}
	ts := jsonIntervalTimestamp(t, url)
	before := scrapeProm(t, url)
	// Wait for the next interval (metricsInterval); the timestamp says when.
	pollUntil(t, "the metrics interval to roll over", 2*metricsInterval, func() bool {
		return jsonIntervalTimestamp(t, url) != ts
	})
	after := scrapeProm(t, url)

	for _, name := range []string{"drover_job_register", "nomad_raft_apply", "nomad_raft_commitTime"} {
		if v, ok := promValue(after, name, nil); !ok || v < 1 {
			t.Errorf("%s after the interval = %v (present %v), want >= 1", name, v, ok)
		}
	}
	if mf := after["nomad_raft_apply"]; mf == nil || mf.GetType() != dto.MetricType_COUNTER {
		t.Errorf("nomad_raft_apply is not a counter: %v", mf)
	}
	if mf := after["drover_job_register"]; mf == nil || mf.GetType() != dto.MetricType_SUMMARY {
		t.Errorf("drover_job_register is not a summary: %v", mf)
	}
	later := cumulativeSeries(after)
	for key, v := range cumulativeSeries(before) {
		if w, ok := later[key]; !ok || w < v {
			t.Errorf("%s fell from %v to %v (present %v)", key, v, w, ok)
		}
	}
}

// startMetricsAgent runs a -dev agent whose leader and client emit their
// gauges every 50ms.
func startMetricsAgent(t *testing.T) *Agent {
	t.Helper()
	cfg := DevConfig()
	cfg.EnableDebug = false
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "metrics-client"
	cfg.serverConfigHook = func(sc *server.Config) {
		sc.RaftTimeoutScale = 0.1
		sc.JobGaugeInterval = 50 * time.Millisecond
	}
	cfg.clientConfigHook = func(cc *client.Config) {
		cc.RetryBase, cc.RetryLimit = 20*time.Millisecond, 200*time.Millisecond
		cc.UpdateInterval = 50 * time.Millisecond
		cc.MetricsInterval = 50 * time.Millisecond
	}
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return a
}

// With one node running one allocation of a raw_exec service job, the
// Prometheus endpoint reports raft's own metrics, the leader's heartbeat,
// job summary and job status gauges and the client's resource and
// allocation gauges, under Nomad's names and labels and with the values of
// that cluster.
func TestPrometheusClusterGauges(t *testing.T) {
	a := startMetricsAgent(t)
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		n, err := srv.State().NodeByID(nil, c.NodeID())
		return err == nil && n != nil && n.Status == structs.NodeStatusReady
	})
	job := rawExecJob("metrics-web", structs.JobTypeService, "sleep 600")
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 123, MemoryMB: 45}
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	var alloc *structs.Allocation
	pollUntil(t, "allocation running on the servers", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "metrics-web")
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
			return false
		}
		alloc = allocs[0]
		return true
	})
	node, err := srv.State().NodeByID(nil, c.NodeID())
	if err != nil {
		t.Fatal(err)
	}
	res := node.NodeResources
	rsv := node.ReservedResources
	if rsv == nil {
		rsv = &structs.NodeReservedResources{}
	}
	disk := alloc.AllocatedResources.Shared.DiskMB

	group := map[string]string{"job": "metrics-web", "task_group": "g", "namespace": "default"}
	nodeLabels := map[string]string{"node_id": node.ID, "datacenter": "dc1", "node_pool": "default"}
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"nomad_nomad_job_summary_running", group, 1},
		{"nomad_nomad_job_summary_queued", group, 0},
		{"nomad_nomad_job_summary_starting", group, 0},
		{"nomad_nomad_job_summary_complete", group, 0},
		{"nomad_nomad_job_summary_failed", group, 0},
		{"nomad_nomad_job_summary_lost", group, 0},
		{"nomad_nomad_job_summary_unknown", group, 0},
		{"nomad_nomad_job_status_running", nil, 1},
		{"nomad_nomad_job_status_pending", nil, 0},
		{"nomad_nomad_heartbeat_active", nil, 1},
		{"nomad_nomad_broker_total_ready", nil, 0},
		{"nomad_nomad_blocked_evals_total_blocked", nil, 0},
		{"nomad_nomad_plan_queue_depth", nil, 0},
		{"nomad_client_allocations_running", nodeLabels, 1},
		{"nomad_client_allocations_pending", nodeLabels, 0},
		{"nomad_client_allocated_cpu", nodeLabels, 123},
		{"nomad_client_allocated_memory", nodeLabels, 45},
		{"nomad_client_allocated_disk", nodeLabels, float64(disk)},
		{"nomad_client_unallocated_cpu", nodeLabels, float64(res.Cpu.CpuShares - rsv.Cpu.CpuShares - 123)},
		{"nomad_client_unallocated_memory", nodeLabels, float64(res.Memory.MemoryMB - rsv.Memory.MemoryMB - 45)},
		{"nomad_client_unallocated_disk", nodeLabels, float64(res.Disk.DiskMB - rsv.Disk.DiskMB - disk)},
	}
	var mfs map[string]*dto.MetricFamily
	mismatch := func() string {
		for _, w := range want {
			if v, ok := promValue(mfs, w.name, w.labels); !ok || v != w.value {
				return fmt.Sprintf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
			}
		}
		return ""
	}
	// The gauges follow the cluster within a few emission periods.
	deadline := time.Now().Add(10 * time.Second)
	for mfs = scrapeProm(t, a.HTTPURL()); mismatch() != ""; mfs = scrapeProm(t, a.HTTPURL()) {
		if time.Now().After(deadline) {
			t.Fatal(mismatch())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Raft's own metrics arrive through armon/go-metrics, named as in Nomad.
	for _, name := range []string{"nomad_raft_apply", "nomad_raft_state_leader", "nomad_raft_commitTime", "nomad_raft_fsm_applyBatch"} {
		if v, ok := promValue(mfs, name, nil); !ok || v < 1 {
			t.Errorf("%s = %v (present %v), want >= 1", name, v, ok)
		}
	}
	// Types and HELP text.
	for name, typ := range map[string]dto.MetricType{
		"nomad_nomad_job_summary_running": dto.MetricType_GAUGE,
		"nomad_client_allocated_cpu":      dto.MetricType_GAUGE,
		"nomad_raft_apply":                dto.MetricType_COUNTER,
		"drover_client_allocs_started":    dto.MetricType_COUNTER,
		"drover_job_register":             dto.MetricType_SUMMARY,
	} {
		mf := mfs[name]
		if mf == nil || mf.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, mf.GetType(), typ)
			continue
		}
		if mf.GetHelp() != metricHelp[name] || mf.GetHelp() == "" {
			t.Errorf("%s: HELP %q, want %q", name, mf.GetHelp(), metricHelp[name])
		}
	}
}

// Drover's gauges expire when nobody sets them any more, its counters and
// raft's gauges do not; raft's armon/go-metrics calls reach the same
// registry as go-metrics' ones.
func TestTelemetryExpiryAndRaftBridge(t *testing.T) {
	tel, sink, raftSink, err := newTelemetry(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sink.SetGaugeWithLabels([]string{"nomad", "nomad", "job_summary", "running"}, 3,
		[]metrics.Label{{Name: "job", Value: "gone"}})
	sink.IncrCounter([]string{"drover", "client", "allocs_started"}, 2)
	bridge := armonBridge{raftSink}
	bridge.IncrCounterWithLabels([]string{"nomad", "raft", "apply"}, 1, []armon.Label{{Name: "x", Value: "y"}})
	bridge.SetGauge([]string{"nomad", "raft", "peers"}, 3)

	gather := func() map[string]*dto.MetricFamily {
		mfs, err := tel.gatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf
		}
		return out
	}
	mfs := gather()
	if v, ok := promValue(mfs, "nomad_nomad_job_summary_running", map[string]string{"job": "gone"}); !ok || v != 3 {
		t.Fatalf("gauge = %v, %v", v, ok)
	}
	if v, ok := promValue(mfs, "nomad_raft_apply", map[string]string{"x": "y"}); !ok || v != 1 {
		t.Fatalf("raft counter = %v, %v", v, ok)
	}
	if mfs["go_goroutines"] == nil || mfs["process_cpu_seconds_total"] == nil {
		t.Errorf("Go and process collectors missing")
	}
	pollUntil(t, "the unset gauge to expire", 5*time.Second, func() bool {
		_, ok := promValue(gather(), "nomad_nomad_job_summary_running", nil)
		return !ok
	})
	sink.IncrCounter([]string{"drover", "client", "allocs_started"}, 1)
	mfs = gather()
	if v, ok := promValue(mfs, "drover_client_allocs_started", nil); !ok || v != 3 {
		t.Errorf("counter = %v (present %v), want 3", v, ok)
	}
	if v, ok := promValue(mfs, "nomad_raft_peers", nil); !ok || v != 3 {
		t.Errorf("raft gauge = %v (present %v), want 3: raft gauges must not expire", v, ok)
	}
}

// BenchmarkTelemetryTimer is one timer sample (what every MeasureSince on
// the scheduling path costs) through the agent's sinks: the in-memory sink
// and the Prometheus summary.
func BenchmarkTelemetryTimer(b *testing.B) {
	_, sink, _, err := newTelemetry(gaugeExpiry)
	if err != nil {
		b.Fatal(err)
	}
	m, err := metrics.New(&metrics.Config{TimerGranularity: time.Millisecond, FilterDefault: true}, sink)
	if err != nil {
		b.Fatal(err)
	}
	key := []string{"drover", "worker", "invoke_scheduler"}
	b.ReportAllocs()
	for b.Loop() {
		m.MeasureSince(key, time.Now())
	}
}

// The queue metrics on a one-node agent: a job that fits runs (nothing
// waits, one placement counted), a job that asks for more memory than the
// node has is blocked on capacity, and a job no node satisfies is blocked
// by its constraints; both blocked ones make the longest wait grow in
// their priority bands.
func TestPrometheusQueueMetrics(t *testing.T) {
	a := startMetricsAgent(t)
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		n, err := srv.State().NodeByID(nil, c.NodeID())
		return err == nil && n != nil && n.Status == structs.NodeStatusReady
	})
	before := scrapeProm(t, a.HTTPURL())
	placedBefore, _ := promValue(before, "drover_plan_placements", nil)

	fits := rawExecJob("queue-fits", structs.JobTypeService, "sleep 600")
	big := rawExecJob("queue-big", structs.JobTypeService, "sleep 600")
	big.Priority = 20
	big.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 1 << 25}
	picky := rawExecJob("queue-picky", structs.JobTypeService, "sleep 600")
	picky.Priority = 80
	picky.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "plan9", Operand: "="}}
	for _, job := range []*structs.Job{fits, big, picky} {
		var reg structs.JobRegisterResponse
		if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
			t.Fatalf("register %s: %v", job.ID, err)
		}
	}
	pollUntil(t, "queue-fits running", 20*time.Second, func() bool {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "queue-fits")
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning
	})

	var mfs map[string]*dto.MetricFamily
	check := func() string {
		for _, w := range []struct {
			name   string
			labels map[string]string
			value  float64
		}{
			{"drover_queue_waiting", nil, 0},
			{"drover_blocked_evals_by_reason", map[string]string{"reason": "capacity"}, 1},
			{"drover_blocked_evals_by_reason", map[string]string{"reason": "constraints"}, 1},
			{"drover_queue_longest_wait_seconds_by_band", map[string]string{"band": "normal"}, 0},
		} {
			if v, ok := promValue(mfs, w.name, w.labels); !ok || v != w.value {
				return fmt.Sprintf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
			}
		}
		// The blocked jobs wait in their bands; the overall figure is the
		// longer of the two.
		low, _ := promValue(mfs, "drover_queue_longest_wait_seconds_by_band", map[string]string{"band": "low"})
		high, _ := promValue(mfs, "drover_queue_longest_wait_seconds_by_band", map[string]string{"band": "high"})
		all, _ := promValue(mfs, "drover_queue_longest_wait_seconds", nil)
		if low < 1 || high < 1 || all != max(low, high) {
			return fmt.Sprintf("longest wait: low %v, high %v, overall %v; want both >= 1s, overall their max", low, high, all)
		}
		for _, r := range []string{"capacity", "constraints"} {
			if n, _ := promValue(mfs, "drover_blocked_evals_blocked", map[string]string{"reason": r}); n < 1 {
				return fmt.Sprintf("drover_blocked_evals_blocked{reason=%s} = %v, want >= 1", r, n)
			}
		}
		if placed, _ := promValue(mfs, "drover_plan_placements", nil); placed < placedBefore+1 {
			return fmt.Sprintf("drover_plan_placements = %v, want >= %v", placed, placedBefore+1)
		}
		return ""
	}
	deadline := time.Now().Add(15 * time.Second)
	for mfs = scrapeProm(t, a.HTTPURL()); check() != ""; mfs = scrapeProm(t, a.HTTPURL()) {
		if time.Now().After(deadline) {
			t.Fatal(check())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The same figures over GET /v1/operator/queue: one allocation of
	// each blocked job is not yet placed.
	var q structs.QueueStatsResponse
	resp, err := http.Get(a.HTTPURL() + "/v1/operator/queue")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&q)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if q.Waiting != 0 || q.Queued != 2 || q.Blocked != 2 || q.BlockedByReason["capacity"] != 1 ||
		q.BlockedByReason["constraints"] != 1 || q.Placements < 1 || q.LongestWaitSeconds < 1 {
		t.Errorf("GET /v1/operator/queue = %+v", q)
	}
	for name, typ := range map[string]dto.MetricType{
		"drover_queue_waiting":                      dto.MetricType_GAUGE,
		"drover_queue_longest_wait_seconds":         dto.MetricType_GAUGE,
		"drover_queue_longest_wait_seconds_by_band": dto.MetricType_GAUGE,
		"drover_blocked_evals_by_reason":            dto.MetricType_GAUGE,
		"drover_plan_placements":                    dto.MetricType_COUNTER,
		"drover_blocked_evals_blocked":              dto.MetricType_COUNTER,
	} {
		mf := mfs[name]
		if mf == nil || mf.GetType() != typ || mf.GetHelp() != metricHelp[name] || metricHelp[name] == "" {
			t.Errorf("%s: type %v, HELP %q; want %v and the documented HELP", name, mf.GetType(), mf.GetHelp(), typ)
		}
	}
}

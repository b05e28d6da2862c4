package agent

import (
	"sync"
	"time"

	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
	prommetrics "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Telemetry intervals.
const (
	// metricsInterval and metricsRetain shape the in-memory sink behind
	// the JSON form of GET /v1/metrics (Nomad's: 10s intervals, 1m kept).
	metricsInterval = 10 * time.Second
	metricsRetain   = time.Minute
	// gaugeExpiry drops a Prometheus gauge nobody has set for this long.
	// Every gauge Drover sets is re-emitted periodically (at most every
	// 10s), so only gauges of things that are gone (a purged job, a lost
	// leadership) expire. Counters and summaries never expire: they are
	// cumulative for the life of the process.
	gaugeExpiry = time.Minute
	// raftServiceName prefixes hashicorp/raft's metrics ("raft.apply"
	// becomes "nomad.raft.apply"), as in Nomad.
	raftServiceName = "nomad"
)

// telemetry is the process's metrics plumbing. go-metrics has one global
// sink per process, and every metrics.* call in Drover (and raft's, through
// armon/go-metrics) lands in it, so agents that share a process share one
// telemetry: it is built once, with its own Prometheus registry (never
// prometheus.DefaultRegisterer, so nothing else in the process can collide
// with it).
type telemetry struct {
	// inmem serves the JSON form: the last interval, Nomad's shape.
	inmem *metrics.InmemSink
	// gatherer serves the Prometheus form: cumulative counters, summaries
	// for timers and samples, gauges until they expire, HELP text.
	gatherer prometheus.Gatherer
}

var (
	telemetryOnce sync.Once
	processTelem  *telemetry // set once by processTelemetry
)

// processTelemetry builds the process's telemetry on first use and installs
// it as go-metrics' global sink and as armon/go-metrics' global sink (which
// hashicorp/raft and raft-boltdb emit to). Runtime metrics (goroutines,
// memory, GC) are on; hostnames are not part of metric names.
func processTelemetry() *telemetry {
	telemetryOnce.Do(func() {
		t, sink, raftSink, err := newTelemetry(gaugeExpiry)
		if err != nil {
			// Registering into a fresh registry fails only on a
			// programming error (two sinks with one name); serve JSON.
			t = &telemetry{inmem: metrics.NewInmemSink(metricsInterval, metricsRetain),
				gatherer: prometheus.NewRegistry()}
			sink, raftSink = t.inmem, t.inmem
		}
		cfg := metrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = true
		// NewGlobal fails only on a bad filter configuration; this has none.
		_, _ = metrics.NewGlobal(cfg, sink)

		acfg := armon.DefaultConfig(raftServiceName)
		acfg.EnableHostname = false
		acfg.EnableRuntimeMetrics = false // go-metrics' global reports them
		_, _ = armon.NewGlobal(acfg, armonBridge{raftSink})
		processTelem = t
	})
	return processTelem
}

// newTelemetry builds the sinks and returns the telemetry, the sink Drover's
// metrics go to (the in-memory sink plus a router into two Prometheus sinks:
// gauges, which expire, and counters and samples, which do not) and the
// sink raft's go to (the same, except that its gauges never expire: raft
// sets them on events, not periodically). Drover's gauges expire after
// expiry without a new value.
func newTelemetry(expiry time.Duration) (*telemetry, metrics.MetricSink, metrics.MetricSink, error) {
	reg := prometheus.NewRegistry()
	gauges, err := prommetrics.NewPrometheusSinkFrom(prommetrics.PrometheusOpts{
		Name: "drover_gauges_sink", Registerer: reg, Expiration: expiry})
	if err != nil {
		return nil, nil, nil, err
	}
	cumulative, err := prommetrics.NewPrometheusSinkFrom(prommetrics.PrometheusOpts{
		Name: "drover_cumulative_sink", Registerer: reg, Expiration: 0})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, nil, nil, err
		}
	}
	t := &telemetry{
		inmem:    metrics.NewInmemSink(metricsInterval, metricsRetain),
		gatherer: helpGatherer{reg},
	}
	return t, metrics.FanoutSink{t.inmem, promRouter{gauges: gauges, cumulative: cumulative}},
		metrics.FanoutSink{t.inmem, promRouter{gauges: cumulative, cumulative: cumulative}}, nil
}

// promRouter sends gauges to a sink that expires them and counters and
// samples to one that keeps them for the life of the process.
type promRouter struct {
	gauges, cumulative *prommetrics.PrometheusSink
}

func (r promRouter) SetGauge(key []string, val float32) { r.gauges.SetGauge(key, val) }
func (r promRouter) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	r.gauges.SetGaugeWithLabels(key, val, labels)
}
func (r promRouter) SetPrecisionGauge(key []string, val float64) {
	r.gauges.SetPrecisionGauge(key, val)
}
func (r promRouter) SetPrecisionGaugeWithLabels(key []string, val float64, labels []metrics.Label) {
	r.gauges.SetPrecisionGaugeWithLabels(key, val, labels)
}
func (r promRouter) EmitKey(key []string, val float32)     {}
func (r promRouter) IncrCounter(key []string, val float32) { r.cumulative.IncrCounter(key, val) }
func (r promRouter) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	r.cumulative.IncrCounterWithLabels(key, val, labels)
}
func (r promRouter) AddSample(key []string, val float32) { r.cumulative.AddSample(key, val) }
func (r promRouter) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	r.cumulative.AddSampleWithLabels(key, val, labels)
}

// armonBridge is an armon/go-metrics sink that forwards to a go-metrics
// sink: hashicorp/raft v1.7 emits through go-metrics/compat, which (built
// without the hashicorpmetrics tag) calls armon/go-metrics' global.
type armonBridge struct{ next metrics.MetricSink }

func armonLabels(in []armon.Label) []metrics.Label {
	if len(in) == 0 {
		return nil
	}
	out := make([]metrics.Label, len(in))
	for i, l := range in {
		out[i] = metrics.Label{Name: l.Name, Value: l.Value}
	}
	return out
}

func (b armonBridge) SetGauge(key []string, val float32) { b.next.SetGauge(key, val) }
func (b armonBridge) SetGaugeWithLabels(key []string, val float32, labels []armon.Label) {
	b.next.SetGaugeWithLabels(key, val, armonLabels(labels))
}
func (b armonBridge) EmitKey(key []string, val float32)     { b.next.EmitKey(key, val) }
func (b armonBridge) IncrCounter(key []string, val float32) { b.next.IncrCounter(key, val) }
func (b armonBridge) IncrCounterWithLabels(key []string, val float32, labels []armon.Label) {
	b.next.IncrCounterWithLabels(key, val, armonLabels(labels))
}
func (b armonBridge) AddSample(key []string, val float32) { b.next.AddSample(key, val) }
func (b armonBridge) AddSampleWithLabels(key []string, val float32, labels []armon.Label) {
	b.next.AddSampleWithLabels(key, val, armonLabels(labels))
}

// helpGatherer fills in the HELP text of the metric families documented in
// metricHelp (the go-metrics sink can only use the name).
type helpGatherer struct{ next prometheus.Gatherer }

func (g helpGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.next.Gather()
	for _, mf := range mfs {
		if h, ok := metricHelp[mf.GetName()]; ok {
			mf.Help = &h
		}
	}
	return mfs, err
}

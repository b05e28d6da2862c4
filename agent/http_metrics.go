package agent

import (
	"net/http"
	"time"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// GET /v1/metrics[?format=prometheus]. Without a format: the last complete
// telemetry interval as go-metrics' JSON summary (Nomad's shape). With
// format=prometheus: every metric in the exposition format a Prometheus
// server negotiates (text 0.0.4 unless it asks for another), with counters
// cumulative since the process started, timers and samples as summaries
// (milliseconds for timers), gauges at their last value until they expire
// (gaugeExpiry), and HELP text. docs/metrics.md lists the names.
func (h *httpAPI) metricsGet(w http.ResponseWriter, r *http.Request) (any, error) {
	switch format := r.URL.Query().Get("format"); format {
	case "":
		summary, err := h.metrics.inmem.DisplayMetrics(w, r)
		if err != nil {
			// No interval yet (nothing emitted since start): an empty summary.
			summary = metrics.MetricsSummary{Timestamp: time.Now().Round(time.Second).UTC().String(),
				Gauges: []metrics.GaugeValue{}, PrecisionGauges: []metrics.PrecisionGaugeValue{},
				Points: []metrics.PointValue{}, Counters: []metrics.SampledValue{}, Samples: []metrics.SampledValue{}}
		}
		return summary, nil
	case "prometheus":
		promhttp.HandlerFor(h.metrics.gatherer, promhttp.HandlerOpts{
			// A family that fails to gather (two sinks disagreeing on a
			// name's type) is left out; the rest is served.
			ErrorHandling: promhttp.ContinueOnError,
		}).ServeHTTP(w, r)
		return nil, nil
	default:
		return nil, badRequest("Invalid format %q: want prometheus or none", format)
	}
}

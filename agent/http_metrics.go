package agent

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// Telemetry intervals of the in-memory sink behind GET /v1/metrics.
const (
	metricsInterval = 10 * time.Second
	metricsRetain   = time.Minute
)

var (
	inmemOnce sync.Once
	inmemSink *metrics.InmemSink // set once by globalInmemSink
)

// globalInmemSink installs, on first use, an in-memory sink as the
// process's global go-metrics sink (every metrics.* call in Drover lands
// there) and returns it. Metric names are used as emitted (they already
// start with "drover."); runtime metrics (goroutines, memory, GC) are on.
func globalInmemSink() *metrics.InmemSink {
	inmemOnce.Do(func() {
		inmemSink = metrics.NewInmemSink(metricsInterval, metricsRetain)
		cfg := metrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = true
		if _, err := metrics.NewGlobal(cfg, inmemSink); err != nil {
			// NewGlobal fails only on a bad filter configuration, and this
			// one has none; the sink still serves what reaches it.
			inmemSink = metrics.NewInmemSink(metricsInterval, metricsRetain)
		}
	})
	return inmemSink
}

// GET /v1/metrics[?format=prometheus]: the last complete telemetry interval
// as go-metrics' JSON summary (Nomad's shape), or in Prometheus' text
// exposition format.
func (h *httpAPI) metricsGet(w http.ResponseWriter, r *http.Request) (any, error) {
	summary, err := h.metrics.DisplayMetrics(w, r)
	if err != nil {
		// No interval yet (nothing emitted since start): an empty summary.
		summary = metrics.MetricsSummary{Timestamp: time.Now().Round(time.Second).UTC().String(),
			Gauges: []metrics.GaugeValue{}, PrecisionGauges: []metrics.PrecisionGaugeValue{},
			Points: []metrics.PointValue{}, Counters: []metrics.SampledValue{}, Samples: []metrics.SampledValue{}}
	}
	switch format := r.URL.Query().Get("format"); format {
	case "":
		return summary, nil
	case "prometheus":
		ms, ok := summary.(metrics.MetricsSummary)
		if !ok {
			return nil, fmt.Errorf("unexpected metrics summary type %T", summary)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		writePrometheus(w, &ms)
		return nil, nil
	default:
		return nil, badRequest("Invalid format %q: want prometheus or none", format)
	}
}

var promInvalid = regexp.MustCompile(`[^a-zA-Z0-9_:]`)

// promName turns a go-metrics name ("drover.job.register") into a valid
// Prometheus metric or label name.
func promName(name string) string {
	s := promInvalid.ReplaceAllString(name, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// promLabels renders labels as {k="v",...} sorted by name, or "".
func promLabels(labels map[string]string, extra ...string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+len(extra)/2)
	for _, k := range keys {
		parts = append(parts, promName(k)+`="`+promEscape(labels[k])+`"`)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		parts = append(parts, extra[i]+`="`+promEscape(extra[i+1])+`"`)
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func promEscape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func promFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// writePrometheus writes the summary in the text exposition format (0.0.4).
// Gauges are gauges. Counters and timers are summaries of the interval:
// <name>_sum and <name>_count (timers in milliseconds). Each metric family
// gets one TYPE line, however many label sets it has.
func writePrometheus(w io.Writer, s *metrics.MetricsSummary) {
	type line struct{ name, text string }
	families := map[string]string{} // name -> type
	var lines []line
	add := func(name, typ, text string) {
		if _, ok := families[name]; !ok {
			families[name] = typ
		}
		lines = append(lines, line{name, text})
	}
	for _, g := range s.Gauges {
		n := promName(g.Name)
		add(n, "gauge", n+promLabels(g.DisplayLabels)+" "+promFloat(float64(g.Value)))
	}
	for _, g := range s.PrecisionGauges {
		n := promName(g.Name)
		add(n, "gauge", n+promLabels(g.DisplayLabels)+" "+promFloat(g.Value))
	}
	sampled := func(vals []metrics.SampledValue) {
		for _, v := range vals {
			if v.AggregateSample == nil {
				continue
			}
			n := promName(v.Name)
			l := promLabels(v.DisplayLabels)
			add(n, "summary", n+"_sum"+l+" "+promFloat(v.Sum)+"\n"+n+"_count"+l+" "+strconv.Itoa(v.Count))
		}
	}
	sampled(s.Counters)
	sampled(s.Samples)

	sort.SliceStable(lines, func(i, j int) bool { return lines[i].name < lines[j].name })
	prev := ""
	for _, l := range lines {
		if l.name != prev {
			fmt.Fprintf(w, "# TYPE %s %s\n", l.name, families[l.name])
			prev = l.name
		}
		fmt.Fprintln(w, l.text)
	}
}

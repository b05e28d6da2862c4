package evalbroker

import (
	"testing"
	"time"

	"github.com/hashicorp/go-metrics"
)

func TestStatsCounts(t *testing.T) {
	b, clock := testBroker(t, nil)
	b.Enqueue(mockEval("a", 50, "service"))
	b.Enqueue(mockEval("a", 50, "service")) // pending behind the first
	b.Enqueue(mockEval("b", 50, "service"))
	b.Enqueue(mockEval("c", 50, "batch"))
	later := mockEval("d", 50, "batch")
	later.WaitUntil = clock.Now().Add(time.Minute)
	b.Enqueue(later)
	mustDequeue(t, b, "batch")

	want := Stats{
		TotalReady: 2, TotalUnacked: 1, TotalPending: 1, TotalWaiting: 1,
		ByScheduler: map[string]SchedulerStats{
			"service": {Ready: 2},
			"batch":   {Ready: 0, Unacked: 1},
		},
	}
	got := b.Stats()
	if got.TotalReady != want.TotalReady || got.TotalUnacked != want.TotalUnacked ||
		got.TotalPending != want.TotalPending || got.TotalWaiting != want.TotalWaiting ||
		got.TotalCancelable != 0 {
		t.Fatalf("totals = %+v, want %+v", got, want)
	}
	for name, st := range want.ByScheduler {
		if got.ByScheduler[name] != st {
			t.Fatalf("%s = %+v, want %+v", name, got.ByScheduler[name], st)
		}
	}
}

func TestEmitStats(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	m, err := metrics.New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := testBroker(t, func(c *Config) { c.Metrics = m })
	b.Enqueue(mockEval("a", 50, "service"))
	b.Enqueue(mockEval("b", 50, "service"))
	mustDequeue(t, b, "service")
	b.EmitStats()

	gauges := sink.Data()[0].Gauges
	cases := []struct {
		key  string
		want float32
	}{
		{MetricTotalReady, 1},
		{MetricTotalUnacked, 1},
		{MetricTotalPending, 0},
		{MetricReady + ";scheduler=service", 1},
		{MetricUnacked + ";scheduler=service", 1},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			g, ok := gauges[tc.key]
			if !ok {
				t.Fatalf("gauge %q not emitted; have %v", tc.key, gauges)
			}
			if g.Value != tc.want {
				t.Fatalf("gauge %q = %v, want %v", tc.key, g.Value, tc.want)
			}
		})
	}
}

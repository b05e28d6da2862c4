package bench

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSummarize(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(100 - i) // 100 ms down to 1 ms, unsorted
	}
	cases := []struct {
		name    string
		samples []time.Duration
		want    Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"one", []time.Duration{ms(7)}, Percentiles{Count: 1, Mean: ms(7), P50: ms(7), P95: ms(7), P99: ms(7), Max: ms(7)}},
		{"two", []time.Duration{ms(20), ms(10)}, Percentiles{Count: 2, Mean: ms(15), P50: ms(10), P95: ms(20), P99: ms(20), Max: ms(20)}},
		{"hundred", hundred, Percentiles{Count: 100, Mean: 50500 * time.Microsecond, P50: ms(50), P95: ms(95), P99: ms(99), Max: ms(100)}},
		{"outlier", []time.Duration{ms(1), ms(1), ms(1), ms(1), ms(1), ms(1), ms(1), ms(1), ms(1), ms(1000)},
			Percentiles{Count: 10, Mean: 100900 * time.Microsecond, P50: ms(1), P95: ms(1000), P99: ms(1000), Max: ms(1000)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.samples); got != tc.want {
				t.Fatalf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlaceCounts(t *testing.T) {
	start := time.Unix(100, 0)
	p := newPlaceCounts(10, start)
	p.add(6, 0, start.Add(ms(10)))
	if p.placedAt.Load() != 0 {
		t.Fatal("placed stamped before the target")
	}
	p.add(4, 3, start.Add(ms(20)))
	p.add(0, 0, start.Add(ms(25)))
	if got := time.Duration(p.placedAt.Load()); got != ms(20) {
		t.Fatalf("placed at %v, want 20ms", got)
	}
	// A watcher going back and forth must not re-stamp.
	p.add(-1, 0, start.Add(ms(30)))
	p.add(1, 7, start.Add(ms(40)))
	if got := time.Duration(p.placedAt.Load()); got != ms(20) {
		t.Fatalf("placed re-stamped at %v", got)
	}
	select {
	case <-p.runningReachedCh:
	default:
		t.Fatal("running reached not signalled")
	}
	if got := time.Duration(p.runningAt.Load()); got != ms(40) {
		t.Fatalf("running at %v, want 40ms", got)
	}
}

package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Percentiles summarizes a set of latencies (nearest-rank percentiles).
type Percentiles struct {
	Count int
	Mean  time.Duration
	P50   time.Duration
	P95   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// Summarize returns the percentiles of samples (which it sorts).
func Summarize(samples []time.Duration) Percentiles {
	if len(samples) == 0 {
		return Percentiles{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Percentiles{
		Count: len(samples),
		Mean:  sum / time.Duration(len(samples)),
		P50:   nearestRank(samples, 50),
		P95:   nearestRank(samples, 95),
		P99:   nearestRank(samples, 99),
		Max:   samples[len(samples)-1],
	}
}

// nearestRank is the smallest sample with at least p% of the samples at
// or below it; sorted must be sorted and not empty.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// latencies collects samples from many goroutines.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration // guarded by mu
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, d)
	l.mu.Unlock()
}

func (l *latencies) summary() Percentiles {
	l.mu.Lock()
	s := append([]time.Duration(nil), l.samples...)
	l.mu.Unlock()
	return Summarize(s)
}

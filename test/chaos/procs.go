package chaos

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SampleEvery is the /proc sampling period.
const SampleEvery = 100 * time.Millisecond

// Sample is the number of live processes per marker at one instant.
type Sample struct {
	T      int64          `json:"t"` // nanoseconds since the run began
	Counts map[string]int `json:"counts"`
}

// Sampler counts, every SampleEvery, the processes whose argv holds each
// marker (the sentinel jobs' tasks on the client hosts; every namespace
// shares this host's /proc).
type Sampler struct {
	Markers []string
	History *History

	mu      sync.Mutex
	samples []Sample // guarded by mu
}

// Run samples until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(SampleEvery)
	defer t.Stop()
	for {
		smp := Sample{T: s.History.Now(), Counts: CountProcs(s.Markers)}
		s.mu.Lock()
		s.samples = append(s.samples, smp)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Samples is a copy of the samples so far.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}

// Last is the most recent sample.
func (s *Sampler) Last() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return Sample{}
	}
	return s.samples[len(s.samples)-1]
}

// CountProcs counts the live (not zombie) processes whose argv holds
// each marker as a whole argument.
func CountProcs(markers []string) map[string]int {
	counts := make(map[string]int, len(markers))
	for _, m := range markers {
		counts[m] = 0
	}
	type proc struct{ marker, ppid string }
	found := map[string]proc{} // pid -> its marker and parent
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		for _, arg := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
			if _, ok := counts[string(arg)]; ok {
				if ppid, live := procStat(d); live {
					found[filepath.Base(d)] = proc{string(arg), ppid}
				}
				break
			}
		}
	}
	for _, p := range found {
		// A child forked by the task's shell holds its argv until it
		// execs: it is the same copy, not another one.
		if parent, ok := found[p.ppid]; ok && parent.marker == p.marker {
			continue
		}
		counts[p.marker]++
	}
	return counts
}

// procStat reads a process's parent PID and whether it is alive (not a
// zombie).
func procStat(dir string) (ppid string, live bool) {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", false
	}
	f := bytes.Fields(b[i+2:]) // state, ppid, ...
	if len(f) < 2 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return "", false
	}
	return string(f[1]), true
}

// Overlap is what the samples show of one marker against its count.
type Overlap struct {
	// Seconds during which more copies than the count ran (samples above
	// the count times the sampling period).
	Seconds float64 `json:"seconds"`
	Max     int     `json:"max"`
	// PerSecond is the largest count sampled in each second of the run.
	PerSecond []int `json:"per_second"`
	// ShortSeconds is the time with fewer copies than the count.
	ShortSeconds float64 `json:"short_seconds"`
}

// Overlaps summarises the samples of marker against count.
func Overlaps(samples []Sample, marker string, count int) Overlap {
	var o Overlap
	for i, smp := range samples {
		n := smp.Counts[marker]
		period := SampleEvery
		if i > 0 {
			period = time.Duration(smp.T - samples[i-1].T)
		}
		if n > count {
			o.Seconds += period.Seconds()
		}
		if n < count {
			o.ShortSeconds += period.Seconds()
		}
		if n > o.Max {
			o.Max = n
		}
		sec := int(smp.T / int64(time.Second))
		for len(o.PerSecond) <= sec {
			o.PerSecond = append(o.PerSecond, 0)
		}
		if n > o.PerSecond[sec] {
			o.PerSecond[sec] = n
		}
	}
	return o
}

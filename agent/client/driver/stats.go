package driver

import (
	"context"
	"sync"
	"time"
)

// StatsReporter is a Driver that reports a running task's resource usage,
// as Nomad's drivers' TaskStats: the client serves it at
// /v1/client/allocation/<id>/stats. h is a handle the driver returned
// (Start, Recover or Adopt). A finished task's usage is an error.
type StatsReporter interface {
	TaskStats(ctx context.Context, h Handle) (*TaskResourceUsage, error)
}

// MemoryStats is a task's memory use in bytes, Nomad's shape. Measured
// names the figures the driver really measures.
type MemoryStats struct {
	RSS            uint64
	Cache          uint64
	Swap           uint64
	Usage          uint64
	MaxUsage       uint64
	KernelUsage    uint64
	KernelMaxUsage uint64
	Measured       []string
}

// CpuStats is a task's CPU use, Nomad's shape: SystemMode and UserMode
// are percentages of one core over the last sampling interval, as is
// Percent; TotalTicks is Percent as MHz (the client fills it in from the
// node's core speed); ThrottledTime is in nanoseconds.
type CpuStats struct {
	SystemMode       float64
	UserMode         float64
	TotalTicks       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Percent          float64
	Measured         []string
}

// ResourceUsage is memory and CPU use, Nomad's shape.
type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
}

// TaskResourceUsage is one task's usage at Timestamp (Unix nanoseconds),
// Nomad's shape.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	Timestamp     int64
	Pids          map[string]*ResourceUsage
}

// AllocResourceUsage is an allocation's usage, Nomad's
// api.AllocResourceUsage: the sum over its tasks, and each task's by
// name.
type AllocResourceUsage struct {
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	Timestamp     int64
}

// CPUSampler turns cumulative CPU times into percentages of one core
// since the previous sample. The zero value is ready; it is safe for
// concurrent use.
type CPUSampler struct {
	mu               sync.Mutex
	at               time.Time // guarded by mu
	total, user, sys uint64    // guarded by mu
}

// Seed makes the first sample's percentages averages since start (when
// the task started: its cumulative times were zero then). It does nothing
// once a sample was taken.
func (s *CPUSampler) Seed(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at.IsZero() {
		s.at = start
	}
}

// Sample records cumulative total, user and system CPU nanoseconds seen
// at now and returns the percentages of one core used since the previous
// sample (or since Seed's start; zero for an unseeded first sample).
func (s *CPUSampler) Sample(now time.Time, total, user, sys uint64) (pTotal, pUser, pSys float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && now.After(s.at) {
		wall := float64(now.Sub(s.at).Nanoseconds())
		pct := func(cur, prev uint64) float64 {
			if cur <= prev {
				return 0
			}
			return float64(cur-prev) / wall * 100
		}
		pTotal, pUser, pSys = pct(total, s.total), pct(user, s.user), pct(sys, s.sys)
	}
	s.at, s.total, s.user, s.sys = now, total, user, sys
	return pTotal, pUser, pSys
}

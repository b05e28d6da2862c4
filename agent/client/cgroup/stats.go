package cgroup

import "fmt"

// Stats is a group's usage at one moment. Byte counts and cumulative
// nanoseconds of CPU time.
type Stats struct {
	MemoryRSS        uint64
	MemoryCache      uint64
	MemorySwap       uint64
	MemoryMappedFile uint64
	MemoryUsage      uint64
	MemoryMaxUsage   uint64
	KernelUsage      uint64
	KernelMaxUsage   uint64
	// MemoryMeasured names the memory figures this cgroup version gives,
	// in Nomad's words ("RSS", "Cache", ...).
	MemoryMeasured []string

	CPUTotalNs       uint64
	CPUUserNs        uint64
	CPUSystemNs      uint64
	ThrottledPeriods uint64
	ThrottledTimeNs  uint64
	CPUMeasured      []string
}

// Stats reads the group's usage.
func (g *Group) Stats() (*Stats, error) {
	var st *Stats
	var err error
	if g.h.mode == V2 {
		st, err = g.statsV2()
	} else {
		st, err = g.statsV1()
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: reading usage: %w", g.name, err)
	}
	return st, nil
}

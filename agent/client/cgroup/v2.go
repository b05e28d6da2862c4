package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// createV2 enables the controllers down to drover.slice, makes the
// group's scope and writes its limits.
func (g *Group) createV2(l Limits) error {
	parent := filepath.Join(g.h.v2, parentV2)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	enable := "+" + strings.Join(requiredV2, " +")
	for _, d := range []string{g.h.v2, parent} {
		if err := enableControllers(d, enable); err != nil {
			return err
		}
	}
	d := g.v2Dir()
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	if l.MemoryBytes > 0 {
		if err := writeFile(filepath.Join(d, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		// No swap, as Nomad; absent without swap accounting.
		if err := writeFile(filepath.Join(d, "memory.swap.max"), "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if l.MemorySoftBytes > 0 && l.MemorySoftBytes < l.MemoryBytes {
			if err := writeFile(filepath.Join(d, "memory.low"), strconv.FormatInt(l.MemorySoftBytes, 10)); err != nil {
				return err
			}
		}
	}
	if l.CPUShares > 0 {
		if err := writeFile(filepath.Join(d, "cpu.weight"), strconv.FormatUint(SharesToWeight(l.CPUShares), 10)); err != nil {
			return err
		}
	}
	if l.CPUSet != "" {
		if err := writeFile(filepath.Join(d, "cpuset.cpus"), l.CPUSet); err != nil {
			return err
		}
	}
	if l.PidsMax > 0 {
		if err := writeFile(filepath.Join(d, "pids.max"), strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return err
		}
	}
	return nil
}

// enableControllers writes "+memory +cpu ..." to dir's
// cgroup.subtree_control unless they are all enabled already.
func enableControllers(dir, enable string) error {
	cur, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(cur))
	all := true
	for _, c := range requiredV2 {
		if !slices.Contains(have, c) {
			all = false
		}
	}
	if all {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), enable)
}

// SharesToWeight maps v1 CPU shares (2..262144) onto v2's cpu.weight
// (1..10000) linearly, as runc and systemd do.
func SharesToWeight(shares int64) uint64 {
	shares = min(max(shares, 2), 262144)
	return uint64(1 + ((shares-2)*9999)/262142)
}

// statsV2 reads memory.stat, memory.current, memory.peak and cpu.stat.
func (g *Group) statsV2() (*Stats, error) {
	d := g.v2Dir()
	st := &Stats{}
	ms, err := readKeyedAll(filepath.Join(d, "memory.stat"))
	if err != nil {
		return nil, err
	}
	st.MemoryRSS, st.MemoryCache, st.MemoryMappedFile = ms["anon"], ms["file"], ms["file_mapped"]
	st.KernelUsage = ms["kernel"]
	st.MemorySwap, _ = readUint(filepath.Join(d, "memory.swap.current"))
	if st.MemoryUsage, err = readUint(filepath.Join(d, "memory.current")); err != nil {
		return nil, err
	}
	st.MemoryMaxUsage, _ = readUint(filepath.Join(d, "memory.peak"))
	st.MemoryMeasured = []string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}
	cs, err := readKeyedAll(filepath.Join(d, "cpu.stat"))
	if err != nil {
		return nil, err
	}
	st.CPUTotalNs, st.CPUUserNs, st.CPUSystemNs = cs["usage_usec"]*1000, cs["user_usec"]*1000, cs["system_usec"]*1000
	st.ThrottledPeriods, st.ThrottledTimeNs = cs["nr_throttled"], cs["throttled_usec"]*1000
	st.CPUMeasured = []string{"Throttled Periods", "Throttled Time", "Percent"}
	return st, nil
}

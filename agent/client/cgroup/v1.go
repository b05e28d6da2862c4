package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// createV1 makes the group's directory in each controller's hierarchy and
// writes its limits.
func (g *Group) createV1(l Limits) error {
	// cpuset groups start with no CPUs and no memory nodes: the parent
	// must be given its own parent's before any child can hold a process.
	if m := g.h.v1[CPUSet]; m != "" {
		if err := ensureCpusetParent(m, filepath.Join(m, parentV1)); err != nil {
			return err
		}
	}
	for _, d := range g.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if l.MemoryBytes > 0 {
		d := g.Dir(Memory)
		if err := writeFile(filepath.Join(d, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		// No swap beyond the limit, as Nomad (memory+swap = memory);
		// absent when the kernel does not account swap.
		if err := writeFile(filepath.Join(d, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if l.MemorySoftBytes > 0 && l.MemorySoftBytes < l.MemoryBytes {
			if err := writeFile(filepath.Join(d, "memory.soft_limit_in_bytes"), strconv.FormatInt(l.MemorySoftBytes, 10)); err != nil {
				return err
			}
		}
	}
	if l.CPUShares > 0 {
		if err := writeFile(filepath.Join(g.Dir(CPU), "cpu.shares"), strconv.FormatInt(max(l.CPUShares, 2), 10)); err != nil {
			return err
		}
	}
	if d := g.Dir(CPUSet); d != "" {
		parent := filepath.Dir(d)
		for _, f := range []string{"cpuset.mems", "cpuset.cpus"} {
			v, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				return err
			}
			if f == "cpuset.cpus" && l.CPUSet != "" {
				v = []byte(l.CPUSet)
			}
			if err := writeFile(filepath.Join(d, f), strings.TrimSpace(string(v))); err != nil {
				return err
			}
		}
	}
	if l.PidsMax > 0 {
		if err := writeFile(filepath.Join(g.Dir(Pids), "pids.max"), strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return err
		}
	}
	return nil
}

// ensureCpusetParent creates dir (a child of root) with root's CPUs and
// memory nodes, unless it already has both.
func ensureCpusetParent(root, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(cur)) != "" {
			continue
		}
		v, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, f), strings.TrimSpace(string(v))); err != nil {
			return err
		}
	}
	return nil
}

// userHZ is the unit of cpuacct.stat (USER_HZ, 100 on Linux).
const userHZ = 100

// statsV1 reads memory.stat, memory.usage_in_bytes, cpuacct.* and
// cpu.stat.
func (g *Group) statsV1() (*Stats, error) {
	st := &Stats{}
	md := g.Dir(Memory)
	ms, err := readKeyedAll(filepath.Join(md, "memory.stat"))
	if err != nil {
		return nil, err
	}
	st.MemoryRSS, st.MemoryCache, st.MemorySwap, st.MemoryMappedFile = ms["total_rss"], ms["total_cache"], ms["total_swap"], ms["total_mapped_file"]
	if st.MemoryRSS == 0 && st.MemoryCache == 0 {
		st.MemoryRSS, st.MemoryCache, st.MemorySwap, st.MemoryMappedFile = ms["rss"], ms["cache"], ms["swap"], ms["mapped_file"]
	}
	st.MemoryUsage, _ = readUint(filepath.Join(md, "memory.usage_in_bytes"))
	st.MemoryMaxUsage, _ = readUint(filepath.Join(md, "memory.max_usage_in_bytes"))
	st.KernelUsage, _ = readUint(filepath.Join(md, "memory.kmem.usage_in_bytes"))
	st.KernelMaxUsage, _ = readUint(filepath.Join(md, "memory.kmem.max_usage_in_bytes"))
	st.MemoryMeasured = []string{"RSS", "Cache", "Swap", "Usage", "Max Usage", "Kernel Usage", "Kernel Max Usage"}

	ad := g.Dir(CPUAcct)
	if st.CPUTotalNs, err = readUint(filepath.Join(ad, "cpuacct.usage")); err != nil {
		return nil, err
	}
	if cs, err := readKeyedAll(filepath.Join(ad, "cpuacct.stat")); err == nil {
		st.CPUUserNs, st.CPUSystemNs = cs["user"]*(1e9/userHZ), cs["system"]*(1e9/userHZ)
	}
	if cs, err := readKeyedAll(filepath.Join(g.Dir(CPU), "cpu.stat")); err == nil {
		st.ThrottledPeriods, st.ThrottledTimeNs = cs["nr_throttled"], cs["throttled_time"]
	}
	st.CPUMeasured = []string{"Throttled Periods", "Throttled Time", "Percent"}
	return st, nil
}

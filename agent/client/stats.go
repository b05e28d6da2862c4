package client

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// AllocStats returns the allocation's current resource usage, read from
// its tasks' drivers (cgroups for exec, /proc for raw_exec). CPU ticks
// are the percentage of a core expressed in MHz of this node's cores.
func (c *Client) AllocStats(ctx context.Context, allocID string) (*driver.AllocResourceUsage, error) {
	ar := c.runner(allocID)
	if ar == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "allocation %q not found on this client", allocID)
	}
	tasks := ar.TaskStats(ctx)
	mhz := c.coreMHz()
	sum := &driver.ResourceUsage{MemoryStats: &driver.MemoryStats{}, CpuStats: &driver.CpuStats{}}
	var ts int64
	for _, u := range tasks {
		ru := u.ResourceUsage
		if ru == nil {
			continue
		}
		if cs := ru.CpuStats; cs != nil {
			cs.TotalTicks = cs.Percent / 100 * mhz
			sum.CpuStats.Percent += cs.Percent
			sum.CpuStats.SystemMode += cs.SystemMode
			sum.CpuStats.UserMode += cs.UserMode
			sum.CpuStats.TotalTicks += cs.TotalTicks
			sum.CpuStats.ThrottledPeriods += cs.ThrottledPeriods
			sum.CpuStats.ThrottledTime += cs.ThrottledTime
			sum.CpuStats.Measured = cs.Measured
		}
		if ms := ru.MemoryStats; ms != nil {
			s := sum.MemoryStats
			s.RSS += ms.RSS
			s.Cache += ms.Cache
			s.Swap += ms.Swap
			s.Usage += ms.Usage
			s.MaxUsage += ms.MaxUsage
			s.KernelUsage += ms.KernelUsage
			s.KernelMaxUsage += ms.KernelMaxUsage
			s.Measured = ms.Measured
		}
		ts = max(ts, u.Timestamp)
	}
	if ts == 0 {
		ts = time.Now().UnixNano()
	}
	return &driver.AllocResourceUsage{ResourceUsage: sum, Tasks: tasks, Timestamp: ts}, nil
}

// coreMHz is the speed of one of the node's cores, from its fingerprint.
func (c *Client) coreMHz() float64 {
	c.nodeMu.Lock()
	attrs := c.node.Attributes
	defer c.nodeMu.Unlock()
	if f, err := strconv.ParseFloat(attrs["cpu.frequency"], 64); err == nil && f > 0 {
		return f
	}
	total, err1 := strconv.ParseFloat(attrs["cpu.totalcompute"], 64)
	cores, err2 := strconv.ParseFloat(attrs["cpu.numcores"], 64)
	if err1 == nil && err2 == nil && cores > 0 {
		return total / cores
	}
	return 1000
}

// HostStats is the node's usage, Nomad's api.HostStats.
type HostStats struct {
	Memory           *HostMemoryStats
	CPU              []*HostCPUStats
	DiskStats        []*HostDiskStats
	AllocDirStats    *HostDiskStats
	DeviceStats      []any
	Uptime           uint64
	Timestamp        int64
	CPUTicksConsumed float64
}

// HostMemoryStats are bytes.
type HostMemoryStats struct {
	Total     uint64
	Available uint64
	Used      uint64
	Free      uint64
}

// HostCPUStats are percentages of one core over the last interval.
type HostCPUStats struct {
	CPU    string
	User   float64
	System float64
	Idle   float64
}

// HostDiskStats is one file system's usage.
type HostDiskStats struct {
	Device            string
	Mountpoint        string
	Size              uint64
	Used              uint64
	Available         uint64
	UsedPercent       float64
	InodesUsedPercent float64
}

// firstCPUSample is the interval the first HostStats call measures CPU
// use over.
const firstCPUSample = 100 * time.Millisecond

// hostSampler keeps the previous /proc/stat reading, so that each
// HostStats call reports CPU use since the one before.
type hostSampler struct {
	mu   sync.Mutex
	prev map[string]cpuTimes // guarded by mu
}

// cpuTimes is one /proc/stat cpu line in clock ticks.
type cpuTimes struct{ user, system, idle, total uint64 }

// HostStats returns the node's memory, per-core CPU, data directory disk
// and uptime figures, read from /proc and statfs.
func (c *Client) HostStats() (*HostStats, error) {
	hs := &HostStats{Timestamp: time.Now().UnixNano()}
	mem, err := readMeminfo()
	if err != nil {
		return nil, err
	}
	hs.Memory = mem
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			up, _ := strconv.ParseFloat(f[0], 64)
			hs.Uptime = uint64(up)
		}
	}
	cur, err := readCPUTimes()
	if err != nil {
		return nil, err
	}
	c.hostStats.mu.Lock()
	prev := c.hostStats.prev
	c.hostStats.prev = cur
	c.hostStats.mu.Unlock()
	if prev == nil {
		// The first call has nothing to compare with: take a short
		// interval now rather than report an idle machine.
		time.Sleep(firstCPUSample)
		prev = cur
		if cur, err = readCPUTimes(); err != nil {
			return nil, err
		}
		c.hostStats.mu.Lock()
		c.hostStats.prev = cur
		c.hostStats.mu.Unlock()
	}
	mhz := c.coreMHz()
	for _, name := range sortedCPUNames(cur) {
		now := cur[name]
		st := &HostCPUStats{CPU: name, Idle: 100}
		if p, ok := prev[name]; ok && now.total > p.total {
			d := float64(now.total - p.total)
			st.User = float64(now.user-p.user) / d * 100
			st.System = float64(now.system-p.system) / d * 100
			st.Idle = float64(now.idle-p.idle) / d * 100
		}
		hs.CPU = append(hs.CPU, st)
		hs.CPUTicksConsumed += (st.User + st.System) / 100 * mhz
	}
	if d := diskStats(c.allocRoot); d != nil {
		hs.AllocDirStats = d
		hs.DiskStats = []*HostDiskStats{d}
	}
	return hs, nil
}

// readMeminfo reads /proc/meminfo.
func readMeminfo() (*HostMemoryStats, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	kb := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			kb[strings.TrimSuffix(f[0], ":")] = n * 1024
		}
	}
	m := &HostMemoryStats{Total: kb["MemTotal"], Free: kb["MemFree"], Available: kb["MemAvailable"]}
	if m.Available == 0 {
		m.Available = m.Free + kb["Buffers"] + kb["Cached"]
	}
	if m.Total > m.Available {
		m.Used = m.Total - m.Available
	}
	return m, nil
}

// readCPUTimes reads the per-core lines of /proc/stat.
func readCPUTimes() (map[string]cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	out := map[string]cpuTimes{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var v []uint64
		for _, s := range f[1:] {
			n, _ := strconv.ParseUint(s, 10, 64)
			v = append(v, n)
		}
		var t cpuTimes
		for _, n := range v {
			t.total += n
		}
		t.user = v[0] + v[1] // user + nice
		t.system = v[2]
		t.idle = v[3]
		if len(v) > 4 {
			t.idle += v[4] // iowait
		}
		out[f[0]] = t
	}
	return out, nil
}

func sortedCPUNames(m map[string]cpuTimes) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	// cpu2 before cpu10.
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && cpuIndex(names[j]) < cpuIndex(names[j-1]); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

func cpuIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "cpu"))
	return n
}

// diskStats is the usage of the file system holding path.
func diskStats(path string) *HostDiskStats {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil
	}
	bs := uint64(st.Bsize)
	d := &HostDiskStats{Device: path, Mountpoint: path, Size: st.Blocks * bs, Available: st.Bavail * bs}
	if st.Blocks >= st.Bfree {
		d.Used = (st.Blocks - st.Bfree) * bs
	}
	if d.Used+d.Available > 0 {
		d.UsedPercent = float64(d.Used) / float64(d.Used+d.Available) * 100
	}
	if st.Files > 0 {
		d.InodesUsedPercent = float64(st.Files-st.Ffree) / float64(st.Files) * 100
	}
	return d
}

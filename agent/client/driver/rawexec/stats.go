package rawexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

// clockTick is the unit of /proc's CPU times (USER_HZ).
const clockTick = uint64(time.Second / 100)

var _ driver.StatsReporter = (*Driver)(nil)

// TaskStats implements driver.StatsReporter: the flavor's figures (a
// cgroup), or, for raw_exec, the sum over the task's process tree in
// /proc (the task, its descendants and the members of its process group).
func (d *Driver) TaskStats(_ context.Context, dh driver.Handle) (*driver.TaskResourceUsage, error) {
	h, ok := dh.(*handle)
	if !ok || h.d != d {
		return nil, fmt.Errorf("%s: not a handle of this driver", d.Name())
	}
	select {
	case <-h.exit.Done():
		return nil, fmt.Errorf("%w: the task has exited", driver.ErrTaskGone)
	default:
	}
	now := time.Now()
	var ru *driver.ResourceUsage
	var t CPUTimes
	var err error
	if f := d.cfg.Flavor; f != nil && f.Stats != nil {
		ru, t, err = f.Stats(h.state)
	} else {
		ru, t, err = procTreeUsage(d.cfg.ProcRoot, h.state.PID)
	}
	if err != nil {
		return nil, err
	}
	if ru.CpuStats == nil {
		ru.CpuStats = &driver.CpuStats{}
	}
	h.cpu.Seed(h.state.StartedAt)
	ru.CpuStats.Percent, ru.CpuStats.UserMode, ru.CpuStats.SystemMode = h.cpu.Sample(now, t.Total, t.User, t.System)
	return &driver.TaskResourceUsage{ResourceUsage: ru, Timestamp: now.UnixNano()}, nil
}

// CPUTimes are cumulative CPU nanoseconds.
type CPUTimes struct{ Total, User, System uint64 }

// procTreeUsage sums the memory and CPU of root's process tree.
func procTreeUsage(procRoot string, root int) (*driver.ResourceUsage, CPUTimes, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, CPUTimes{}, err
	}
	procs := map[int]procUsage{}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		u, err := parseProcUsage(b)
		if err != nil {
			continue
		}
		procs[pid] = u
		children[u.PPID] = append(children[u.PPID], pid)
	}
	if _, ok := procs[root]; !ok {
		return nil, CPUTimes{}, fmt.Errorf("%w: process %d has exited", driver.ErrTaskGone, root)
	}
	seen := map[int]bool{}
	queue := []int{root}
	for pid, u := range procs { // members that left the tree but not the group
		if u.PGID == root {
			queue = append(queue, pid)
		}
	}
	var rss, utime, stime uint64
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		u := procs[pid]
		rss += u.RSSPages
		utime += u.UTime
		stime += u.STime
		queue = append(queue, children[pid]...)
	}
	ru := &driver.ResourceUsage{
		MemoryStats: &driver.MemoryStats{RSS: rss * uint64(os.Getpagesize()), Measured: []string{"RSS"}},
		CpuStats:    &driver.CpuStats{Measured: []string{"System Mode", "User Mode", "Percent"}},
	}
	user, sys := utime*clockTick, stime*clockTick
	return ru, CPUTimes{Total: user + sys, User: user, System: sys}, nil
}

package bench

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux platform Go supports.
const clockTicks = 100

// procRoot is where /proc is (tests point it at a fixture).
var procRoot = "/proc"

// ProcSample is one reading of a process.
type ProcSample struct {
	// CPU is user plus system time.
	CPU time.Duration
	// RSS is the resident set now; HWM the highest it has been.
	RSS, HWM int64
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status.
func readProc(pid int) (ProcSample, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ProcSample{}, err
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return ProcSample{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return ProcSample{}, err
	}
	rss, hwm := parseStatusMem(string(status))
	return ProcSample{CPU: cpu, RSS: rss, HWM: hwm}, nil
}

// parseStatCPU returns utime+stime from a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields
// are counted from the last ')'.
func parseStatCPU(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat line")
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line has %d fields after the name", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed utime/stime %q %q", f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// parseStatusMem returns VmRSS and VmHWM in bytes from /proc/<pid>/status.
func parseStatusMem(status string) (rss, hwm int64) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n <<= 10
		}
		if k == "VmRSS" {
			rss = n
		} else {
			hwm = n
		}
	}
	return rss, hwm
}

// procWatch samples a set of processes every interval, keeping each one's
// CPU time at the start and its highest RSS.
type procWatch struct {
	pids []int
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	first []ProcSample // guarded by mu
	last  []ProcSample // guarded by mu
	peak  []int64      // guarded by mu
	errs  []error      // guarded by mu
}

func startProcWatch(pids []int, every time.Duration) *procWatch {
	w := &procWatch{
		pids: pids, stop: make(chan struct{}), done: make(chan struct{}),
		first: make([]ProcSample, len(pids)), last: make([]ProcSample, len(pids)),
		peak: make([]int64, len(pids)), errs: make([]error, len(pids)),
	}
	w.sample(true)
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				w.sample(false)
				return
			case <-t.C:
				w.sample(false)
			}
		}
	}()
	return w
}

func (w *procWatch) sample(first bool) {
	for i, pid := range w.pids {
		s, err := readProc(pid)
		w.mu.Lock()
		if err != nil {
			if w.errs[i] == nil {
				w.errs[i] = err
			}
			w.mu.Unlock()
			continue
		}
		if first {
			w.first[i] = s
		}
		w.last[i] = s
		w.peak[i] = max(w.peak[i], s.RSS)
		w.mu.Unlock()
	}
}

// cpuSince returns each process's CPU time since the first sample.
func (w *procWatch) cpuSince() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Duration, len(w.pids))
	for i := range w.pids {
		out[i] = w.last[i].CPU - w.first[i].CPU
	}
	return out
}

// finish takes a last sample and stops the sampler.
func (w *procWatch) finish() {
	close(w.stop)
	<-w.done
}

// dirSize is the disk usage of the files under dir (allocated blocks,
// as du counts them; the apparent size where blocks are unknown).
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += diskUsage(info)
		return nil
	})
	return total, err
}

// Machine describes the machine the benchmark ran on.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	MemoryMB int64  `json:"memory_mb"`
	OS       string `json:"os"`
	Go       string `json:"go"`
}

// readMachine reads the machine's description from /proc.
func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile(filepath.Join(procRoot, "cpuinfo")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(procRoot, "meminfo")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				if f := strings.Fields(v); len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemoryMB = kb >> 10
				}
				break
			}
		}
	}
	return m
}

// loadAvg returns the first three fields of /proc/loadavg ("" if unknown).
func loadAvg() string {
	b, err := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

package docker

import (
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// coreSet hands out whole cores to tasks that ask for cores but whose
// allocation names none: the lowest-numbered cores no other task of this
// driver holds (when every core is held, the least shared ones).
type coreSet struct {
	mu    sync.Mutex
	all   []int            // the cores tasks may use
	tasks map[string][]int // task ID -> its cores; guarded by mu
}

func newCoreSet() *coreSet {
	return &coreSet{all: usableCores(), tasks: map[string][]int{}}
}

// usableCores are the cores of the client's cpuset (cgroup v2 or v1), or
// every CPU.
func usableCores() []int {
	for _, p := range []string{"/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus",
		"/sys/fs/cgroup/cpuset/cpuset.cpus"} {
		if b, err := os.ReadFile(p); err == nil {
			if c := parseCPUSet(strings.TrimSpace(string(b))); len(c) > 0 {
				return c
			}
		}
	}
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}

// take gives taskID n cores (fewer when the machine has fewer).
func (s *coreSet) take(taskID string, n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	use := map[int]int{}
	for id, cs := range s.tasks {
		if id == taskID {
			continue
		}
		for _, c := range cs {
			use[c]++
		}
	}
	cand := append([]int(nil), s.all...)
	sort.SliceStable(cand, func(i, j int) bool { return use[cand[i]] < use[cand[j]] })
	if n > len(cand) {
		n = len(cand)
	}
	got := append([]int(nil), cand[:n]...)
	sort.Ints(got)
	s.tasks[taskID] = got
	return got
}

// mark records cores a re-attached task holds.
func (s *coreSet) mark(taskID string, cores []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[taskID] = cores
}

func (s *coreSet) release(taskID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, taskID)
}

// cpuset writes cores as docker's cpuset ("0,2,3").
func cpuset(cores []int) string {
	parts := make([]string, len(cores))
	for i, c := range cores {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// parseCPUSet reads a cpuset list ("0-2,4"); nil when malformed.
func parseCPUSet(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}

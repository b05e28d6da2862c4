package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/mountinfo"
)

// Mode is the cgroup version in use.
type Mode int

// Modes.
const (
	Off Mode = iota // no usable cgroup mounts
	V1              // one hierarchy per controller (also the hybrid layout)
	V2              // the unified hierarchy
)

func (m Mode) String() string {
	switch m {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "off"
}

// Controllers a task group uses. cpuacct is v1 only (v2's cpu has it).
const (
	Memory  = "memory"
	CPU     = "cpu"
	CPUAcct = "cpuacct"
	CPUSet  = "cpuset"
	Pids    = "pids"
)

// requiredV1 and requiredV2 are the controllers a usable hierarchy has.
var (
	requiredV1 = []string{Memory, CPU, CPUAcct, CPUSet, Pids}
	requiredV2 = []string{Memory, CPU, CPUSet, Pids}
)

// Parent names.
const (
	parentV1 = "drover"
	parentV2 = "drover.slice"
)

// Hierarchy is the machine's cgroup layout.
type Hierarchy struct {
	mode Mode
	// v1: controller -> mount point. Co-mounted controllers
	// (cpu,cpuacct) share a mount point.
	v1 map[string]string
	// v2: the unified mount point and its available controllers.
	v2     string
	v2Ctrl []string
}

// ErrUnavailable: the machine has no usable cgroup hierarchy.
var ErrUnavailable = errors.New("no usable cgroup hierarchy")

// Detect reads /proc/self/mountinfo (and, for v2, the root's
// cgroup.controllers).
func Detect() (*Hierarchy, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	h := parseMountinfo(b)
	if h.v2 != "" {
		if c, err := os.ReadFile(filepath.Join(h.v2, "cgroup.controllers")); err == nil {
			h.v2Ctrl = strings.Fields(string(c))
		}
	}
	h.mode = h.pickMode()
	return h, nil
}

// NewV1 returns a v1 hierarchy with controllers mounted at the given
// points (tests).
func NewV1(mounts map[string]string) *Hierarchy {
	return &Hierarchy{mode: V1, v1: mounts}
}

// NewV2 returns a v2 hierarchy mounted at root with the given controllers
// available (tests).
func NewV2(root string, controllers []string) *Hierarchy {
	return &Hierarchy{mode: V2, v2: root, v2Ctrl: controllers}
}

// parseMountinfo finds the cgroup mounts in a mountinfo file.
func parseMountinfo(b []byte) *Hierarchy {
	h := &Hierarchy{v1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		mnt := mountinfo.Unescape(f[4])
		switch g[0] {
		case "cgroup2":
			if h.v2 == "" || mnt == "/sys/fs/cgroup" {
				h.v2 = mnt
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				switch opt {
				case Memory, CPU, CPUAcct, CPUSet, Pids, "freezer":
					if _, seen := h.v1[opt]; !seen {
						h.v1[opt] = mnt
					}
				}
			}
		}
	}
	return h
}

// pickMode: v1 when any v1 controller is mounted (hybrid machines keep
// their controllers in v1), else v2 when the unified hierarchy has
// controllers, else off.
func (h *Hierarchy) pickMode() Mode {
	if len(h.v1) > 0 {
		return V1
	}
	if h.v2 != "" && len(h.v2Ctrl) > 0 {
		return V2
	}
	return Off
}

// Mode is the version in use.
func (h *Hierarchy) Mode() Mode { return h.mode }

// Missing lists the controllers a task group needs that the hierarchy
// lacks; empty means it is usable.
func (h *Hierarchy) Missing() []string {
	var miss []string
	switch h.mode {
	case V1:
		for _, c := range requiredV1 {
			if h.v1[c] == "" {
				miss = append(miss, c)
			}
		}
	case V2:
		for _, c := range requiredV2 {
			if !slices.Contains(h.v2Ctrl, c) {
				miss = append(miss, c)
			}
		}
	default:
		return append([]string(nil), requiredV2...)
	}
	return miss
}

// Limits are what a group enforces. Zero values mean no limit.
type Limits struct {
	// MemoryBytes is the hard limit: the group's processes are OOM-killed
	// beyond it.
	MemoryBytes int64
	// MemorySoftBytes, if set and below MemoryBytes, is reclaimed towards
	// under memory pressure (v1 soft limit, v2 memory.low).
	MemorySoftBytes int64
	// CPUShares is the relative CPU weight (Nomad: the task's MHz).
	CPUShares int64
	// CPUSet lists the cores the group may run on ("0-1,3"); empty: all.
	CPUSet string
	// PidsMax bounds the number of processes and threads.
	PidsMax int64
}

// Group is one task's cgroup. Its methods are safe to call on a group
// that was never created or was already destroyed.
type Group struct {
	h    *Hierarchy
	name string
}

// Group returns the group called name (a single path element).
func (h *Hierarchy) Group(name string) (*Group, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("cgroup: bad group name %q", name)
	}
	if h.mode == Off {
		return nil, ErrUnavailable
	}
	return &Group{h: h, name: name}, nil
}

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// dirs returns the group's directories: one per distinct v1 mount of the
// controllers it uses, or the one v2 directory.
func (g *Group) dirs() []string {
	if g.h.mode == V2 {
		return []string{g.v2Dir()}
	}
	var out []string
	for _, c := range requiredV1 {
		if m := g.h.v1[c]; m != "" {
			d := filepath.Join(m, parentV1, g.name)
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func (g *Group) v2Dir() string { return filepath.Join(g.h.v2, parentV2, g.name+".scope") }

// Dir is the directory of controller c (v1), or the group's (v2).
func (g *Group) Dir(c string) string {
	if g.h.mode == V2 {
		return g.v2Dir()
	}
	if m := g.h.v1[c]; m != "" {
		return filepath.Join(m, parentV1, g.name)
	}
	return ""
}

// Create creates the group with limits l. An existing group (a retry) is
// reused and its limits set again.
func (g *Group) Create(l Limits) error {
	var err error
	if g.h.mode == V2 {
		err = g.createV2(l)
	} else {
		err = g.createV1(l)
	}
	if err != nil {
		_ = g.Destroy()
		return fmt.Errorf("cgroup %s: %w", g.name, err)
	}
	return nil
}

// Add moves process pid (all its threads) into the group.
func (g *Group) Add(pid int) error {
	s := strconv.Itoa(pid)
	for _, d := range g.dirs() {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), s); err != nil {
			return fmt.Errorf("cgroup %s: adding process %d: %w", g.name, pid, err)
		}
	}
	return nil
}

// Pids lists the processes in the group (none when it does not exist).
func (g *Group) Pids() ([]int, error) {
	d := g.Dir(Pids)
	if g.h.mode == V1 && d == "" {
		d = g.Dir(Memory)
	}
	b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Exists reports whether the group's directory is there.
func (g *Group) Exists() bool {
	for _, d := range g.dirs() {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// killWait bounds Kill's wait for the group to empty.
const killWait = 10 * time.Second

// Kill SIGKILLs every process in the group until it is empty (processes
// forking while being killed are caught by the next round).
func (g *Group) Kill() error {
	if g.h.mode == V2 {
		// cgroup.kill (Linux 5.14) kills the whole subtree at once.
		_ = writeFile(filepath.Join(g.v2Dir(), "cgroup.kill"), "1")
	}
	deadline := time.Now().Add(killWait)
	for {
		pids, err := g.Pids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes left after SIGKILL", g.name, len(pids))
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Destroy kills what is left in the group and removes it. Removing a group
// that does not exist is not an error.
func (g *Group) Destroy() error {
	kerr := g.Kill()
	var errs []error
	for _, d := range g.dirs() {
		if err := removeDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cgroup %s: %w", g.name, errors.Join(append(errs, kerr)...))
	}
	return kerr
}

// removeDir removes a cgroup directory, retrying while the kernel still
// counts exiting processes in it.
func removeDir(d string) error {
	var err error
	for range 100 {
		err = syscall.Rmdir(d)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("removing %s: %w", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("removing %s: %w", d, err)
}

// OOMKills returns how many processes of the group the kernel's OOM
// killer has killed.
func (g *Group) OOMKills() (uint64, error) {
	if g.h.mode == V2 {
		return readKeyed(filepath.Join(g.v2Dir(), "memory.events"), "oom_kill")
	}
	d := g.Dir(Memory)
	n, err := readKeyed(filepath.Join(d, "memory.oom_control"), "oom_kill")
	if err == nil {
		return n, nil
	}
	// Kernels before 4.13 have no oom_kill count: a hit of the limit
	// (failcnt) with the task killed by SIGKILL is the best sign left.
	return 0, err
}

// writeFile writes s to a cgroup file.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("writing %q to %s: %w", s, path, werr)
	}
	return cerr
}

// readUint reads a file holding one unsigned number ("max" reads as 0).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readKeyed reads the value of key in a "key value" per line file.
func readKeyed(path, key string) (uint64, error) {
	m, err := readKeyedAll(path)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("%s has no %s", path, key)
	}
	return v, nil
}

// readKeyedAll reads a "key value" per line file.
func readKeyedAll(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m, nil
}

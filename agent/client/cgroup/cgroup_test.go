package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	hybrid := `25 30 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
28 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,cpu,cpuacct
29 25 0:27 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
30 25 0:28 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpuset
31 25 0:29 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
`
	h := parseMountinfo([]byte(hybrid))
	if h.pickMode() != V1 {
		t.Fatalf("hybrid layout: mode %v, want v1", h.pickMode())
	}
	h.mode = V1
	if h.v1[CPUAcct] != "/sys/fs/cgroup/cpu,cpuacct" || h.v1[CPU] != h.v1[CPUAcct] || len(h.Missing()) != 0 {
		t.Fatalf("v1 mounts %v, missing %v", h.v1, h.Missing())
	}
	g, err := h.Group("a1.web")
	if err != nil {
		t.Fatal(err)
	}
	// cpu and cpuacct share a directory: it is listed once.
	want := []string{"/sys/fs/cgroup/memory/drover/a1.web", "/sys/fs/cgroup/cpu,cpuacct/drover/a1.web",
		"/sys/fs/cgroup/cpuset/drover/a1.web", "/sys/fs/cgroup/pids/drover/a1.web"}
	if got := g.dirs(); !slices.Equal(got, want) {
		t.Fatalf("dirs %v, want %v", got, want)
	}

	unified := `25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
`
	h = parseMountinfo([]byte(unified))
	if h.pickMode() != Off || h.v2 != "/sys/fs/cgroup" {
		t.Fatalf("v2 without controllers: %v at %q", h.pickMode(), h.v2)
	}
	h.v2Ctrl = []string{"cpuset", "cpu", "io", "memory", "pids"}
	if h.pickMode() != V2 {
		t.Fatalf("v2: mode %v", h.pickMode())
	}
}

func TestGroupNames(t *testing.T) {
	h := NewV2(t.TempDir(), requiredV2)
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := h.Group(bad); err == nil {
			t.Errorf("group %q accepted", bad)
		}
	}
	if _, err := (&Hierarchy{}).Group("x"); err != ErrUnavailable {
		t.Fatalf("group without cgroups: %v", err)
	}
}

// fakeV2 makes a directory that looks like a v2 root to the file logic
// (the kernel would create the interface files of a new group itself).
func fakeV2(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"cgroup.controllers", "cgroup.subtree_control"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Join(root, parentV2)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	scope := filepath.Join(parent, "a1.web.scope")
	if err := os.MkdirAll(scope, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{
		"memory.max": "max", "memory.low": "0", "cpu.weight": "100", "cpuset.cpus": "", "pids.max": "max",
		"cgroup.procs": "", "memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
		"memory.current": "5242880", "memory.peak": "6291456",
		"memory.stat": "anon 4194304\nfile 1048576\nkernel 65536\nfile_mapped 4096\n",
		"cpu.stat":    "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\nnr_throttled 2\nthrottled_usec 30\n",
	} {
		if err := os.WriteFile(filepath.Join(scope, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestV2FileLogic(t *testing.T) {
	root := fakeV2(t)
	h := NewV2(root, requiredV2)
	g, err := h.Group("a1.web")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.createV2(Limits{MemoryBytes: 256 << 20, MemorySoftBytes: 128 << 20, CPUShares: 1024, CPUSet: "1", PidsMax: 100}); err != nil {
		t.Fatal(err)
	}
	scope := filepath.Join(root, parentV2, "a1.web.scope")
	for f, want := range map[string]string{
		"memory.max": "268435456", "memory.low": "134217728", "cpu.weight": "39", "cpuset.cpus": "1", "pids.max": "100",
	} {
		b, _ := os.ReadFile(filepath.Join(scope, f))
		if string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	for _, d := range []string{root, filepath.Join(root, parentV2)} {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
		if d != root && !strings.Contains(string(b), "+memory") {
			t.Errorf("%s: subtree_control %q, want the controllers enabled", d, b)
		}
	}
	if n, err := g.OOMKills(); err != nil || n != 1 {
		t.Fatalf("oom kills %d, %v", n, err)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.MemoryRSS != 4194304 || st.MemoryCache != 1048576 || st.MemoryUsage != 5242880 || st.MemoryMaxUsage != 6291456 ||
		st.CPUTotalNs != 1500000 || st.CPUUserNs != 1000000 || st.ThrottledPeriods != 2 || st.ThrottledTimeNs != 30000 {
		t.Fatalf("stats %+v", st)
	}
	if err := g.Add(42); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Pids(); !slices.Equal(pids, []int{42}) {
		t.Fatalf("pids %v", pids)
	}
}

func TestSharesToWeight(t *testing.T) {
	for shares, want := range map[int64]uint64{0: 1, 2: 1, 1024: 39, 262144: 10000, 1 << 30: 10000} {
		if got := SharesToWeight(shares); got != want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestV1OnThisMachine(t *testing.T) {
	h, err := Detect()
	if err != nil || h.Mode() != V1 || len(h.Missing()) > 0 || os.Geteuid() != 0 {
		t.Skip("needs root and cgroups v1 with the memory, cpu, cpuacct, cpuset and pids controllers")
	}
	g, err := h.Group("drover-cgroup-test")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if err := g.Create(Limits{MemoryBytes: 64 << 20, MemorySoftBytes: 32 << 20, CPUShares: 500, CPUSet: "0", PidsMax: 10}); err != nil {
		t.Fatal(err)
	}
	for ctrl, kv := range map[string][2]string{
		Memory: {"memory.limit_in_bytes", "67108864"}, CPU: {"cpu.shares", "500"},
		CPUSet: {"cpuset.cpus", "0"}, Pids: {"pids.max", "10"},
	} {
		b, err := os.ReadFile(filepath.Join(g.Dir(ctrl), kv[0]))
		if err != nil || strings.TrimSpace(string(b)) != kv[1] {
			t.Errorf("%s = %q, %v; want %s", kv[0], b, err, kv[1])
		}
	}
	if _, err := g.Stats(); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil || g.Exists() {
		t.Fatalf("destroy: %v (exists %v)", err, g.Exists())
	}
}

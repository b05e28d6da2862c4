package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	cases := []struct {
		name    string
		line    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "1234 (drover) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 1000 500 rest",
			3250 * time.Millisecond, false},
		{"name with spaces and parens", "99 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1",
			30 * time.Millisecond, false},
		{"truncated", "1 (x) S 1 2 3", 0, true},
		{"no name", "garbage", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU(tc.line)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseStatusMem(t *testing.T) {
	status := "Name:\tdrover\nVmPeak:\t  900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n"
	rss, hwm := parseStatusMem(status)
	if rss != 100<<20 || hwm != 200<<20 {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
}

func TestReadSelfAndDirSize(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	s, err := readProc(os.Getpid())
	if err != nil || s.RSS <= 0 || s.HWM < s.RSS {
		t.Fatalf("readProc(self) = %+v, %v", s, err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raft", "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"raft/raft.db", "raft/snapshots/1", "node-id"} {
		if err := os.WriteFile(filepath.Join(dir, f), make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := dirSize(dir)
	if err != nil || n < 3*64<<10 {
		t.Fatalf("dirSize = %d, %v; want at least %d", n, err, 3*64<<10)
	}
	if m := readMachine(); m.CPUs <= 0 || m.MemoryMB <= 0 {
		t.Fatalf("machine %+v", m)
	}
}

func TestProcWatch(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	w := startProcWatch([]int{os.Getpid(), 1 << 30}, 5*time.Millisecond)
	spin := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(spin) {
	}
	w.finish()
	if w.peak[0] <= 0 || w.errs[0] != nil {
		t.Fatalf("self: peak %d err %v", w.peak[0], w.errs[0])
	}
	if w.errs[1] == nil {
		t.Fatal("a missing process must report an error")
	}
	if cpu := w.cpuSince(); cpu[0] < 0 {
		t.Fatalf("negative cpu %v", cpu[0])
	}
}

package rawexec

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
)

func TestTaskStatsSumsTheProcessTree(t *testing.T) {
	d := New(Config{Enabled: true})
	// A busy child keeps the CPU figure moving; both add to the memory.
	cfg, _ := taskEnv(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", "while :; do :; done & sleep 60"}})
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Stop("SIGKILL", time.Second) }()
	first, err := d.TaskStats(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if first.ResourceUsage.MemoryStats.RSS == 0 || first.Timestamp == 0 {
		t.Fatalf("first sample %+v", first.ResourceUsage.MemoryStats)
	}
	time.Sleep(300 * time.Millisecond)
	second, err := d.TaskStats(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if p := second.ResourceUsage.CpuStats.Percent; p < 5 {
		t.Fatalf("cpu percent %.1f with a busy child, want more", p)
	}
	if err := h.Stop("SIGKILL", time.Second); err != nil {
		t.Fatal(err)
	}
	waitExit(t, h)
	if _, err := d.TaskStats(context.Background(), h); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("stats of an exited task: %v", err)
	}
}

func TestParseProcUsage(t *testing.T) {
	line := []byte("42 (a (b) c) S 7 42 42 0 -1 4194304 100 0 0 0 15 6 0 0 20 0 1 0 12345 1000000 250 18446744073709551615")
	u, err := parseProcUsage(line)
	if err != nil || u.PPID != 7 || u.PGID != 42 || u.UTime != 15 || u.STime != 6 || u.RSSPages != 250 {
		t.Fatalf("usage %+v, %v", u, err)
	}
}

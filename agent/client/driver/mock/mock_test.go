package mock

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs/driverspec"
)

func start(t *testing.T, cfg map[string]any) (driver.Handle, error) {
	t.Helper()
	return New(driverspec.MockName).Start(context.Background(), &driver.TaskConfig{ID: "a/t", Config: cfg})
}

func wait(t *testing.T, h driver.Handle) *driver.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMockRunsAndExits(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want driver.ExitResult
	}{
		{"immediate success", map[string]any{}, driver.ExitResult{}},
		{"exit code", map[string]any{"run_for": "10ms", "exit_code": 3}, driver.ExitResult{ExitCode: 3}},
		{"signal", map[string]any{"exit_signal": 9, "exit_code": 137}, driver.ExitResult{ExitCode: 137, Signal: 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := start(t, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := wait(t, h); *got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestMockStartError(t *testing.T) {
	_, err := start(t, map[string]any{"start_error": "boom"})
	if err == nil || !errors.Is(err, driver.ErrUnrecoverable) {
		t.Fatalf("err = %v", err)
	}
	_, err = start(t, map[string]any{"start_error": "boom", "start_error_recoverable": true})
	if err == nil || errors.Is(err, driver.ErrUnrecoverable) {
		t.Fatalf("recoverable err = %v", err)
	}
}

func TestMockStopAndKillAfter(t *testing.T) {
	h, err := start(t, map[string]any{"run_for": "1h", "kill_after": "20ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Stop("SIGTERM", time.Second); err != nil {
		t.Fatal(err)
	}
	if res := wait(t, h); res.Signal != int(syscall.SIGTERM) {
		t.Fatalf("graceful: %v", res)
	}

	h, _ = start(t, map[string]any{"run_for": "1h", "kill_after": "1h"})
	h.Stop("SIGTERM", 20*time.Millisecond)
	if res := wait(t, h); res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("forced: %v", res)
	}
}

func TestMockRecover(t *testing.T) {
	h, err := start(t, map[string]any{"run_for": "50ms", "exit_code": 2})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := New(driverspec.MockName).Recover(h.State())
	if err != nil {
		t.Fatal(err)
	}
	if res := wait(t, h2); res.ExitCode != 2 {
		t.Fatalf("recovered result %v", res)
	}
	if _, err := New(driverspec.MockName).Recover(&driver.HandleState{}); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("empty state: %v", err)
	}
}

func TestTaskStatsWhileRunning(t *testing.T) {
	d := New(driverspec.MockName)
	h, err := d.Start(context.Background(), &driver.TaskConfig{ID: "a/t", Config: map[string]any{"run_for": "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.TaskStats(context.Background(), h)
	if err != nil || u.ResourceUsage.MemoryStats.RSS != MockRSS {
		t.Fatalf("stats %+v, %v", u, err)
	}
	if err := h.Stop("", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TaskStats(context.Background(), h); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("stats of a stopped task: %v", err)
	}
}

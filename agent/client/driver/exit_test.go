package driver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestExitWakesEveryWaiterWithTheResult(t *testing.T) {
	e := NewExit()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait before the exit: %v, want the context's error", err)
	}
	want := &ExitResult{ExitCode: 3}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := e.Wait(context.Background())
			if err != nil || got != want {
				t.Errorf("wait = %v, %v; want the result", got, err)
			}
		}()
	}
	e.Set(want)
	wg.Wait()
	select {
	case <-e.Done():
	default:
		t.Fatal("Done not closed after Set")
	}
}

func TestCPUSampler(t *testing.T) {
	var s CPUSampler
	t0 := time.Unix(100, 0)
	if p, _, _ := s.Sample(t0, 5e8, 0, 0); p != 0 {
		t.Fatalf("unseeded first sample: %v", p)
	}
	if p, u, sys := s.Sample(t0.Add(time.Second), 1e9, 4e8, 1e8); p != 50 || u != 40 || sys != 10 {
		t.Fatalf("second sample: %v %v %v, want 50 40 10", p, u, sys)
	}
	var seeded CPUSampler
	seeded.Seed(t0)
	if p, _, _ := seeded.Sample(t0.Add(2*time.Second), 1e9, 0, 0); p != 50 {
		t.Fatalf("seeded first sample: %v, want the average since the start", p)
	}
}

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

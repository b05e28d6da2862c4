package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNextDoublesAndCaps(t *testing.T) {
	b := New(20*time.Millisecond, 100*time.Millisecond)
	want := []time.Duration{20, 40, 80, 100, 100}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("step %d: got %v want %v", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 20*time.Millisecond {
		t.Fatalf("after reset: %v", got)
	}
}

func TestRetry(t *testing.T) {
	errRetry := errors.New("again")
	errFinal := errors.New("final")
	tests := []struct {
		name      string
		results   []error
		max       time.Duration
		wantErr   error
		wantCalls int
	}{
		{"succeeds after retries", []error{errRetry, errRetry, nil}, 0, nil, 3},
		{"stops on non-retryable", []error{errRetry, errFinal, nil}, 0, errFinal, 2},
		{"gives up at max", []error{errRetry, errRetry, errRetry, errRetry, errRetry, errRetry}, 1500 * time.Microsecond, errRetry, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), New(time.Millisecond, 2*time.Millisecond), tc.max,
				func(err error) bool { return errors.Is(err, errRetry) },
				func() error { calls++; return tc.results[calls-1] })
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Fatalf("calls = %d, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Retry(ctx, New(time.Hour, time.Hour), 0, func(error) bool { return true },
		func() error { return errors.New("x") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

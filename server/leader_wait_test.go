package server

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

func TestChangeSignalWakesEveryWaiterOnce(t *testing.T) {
	var c changeSignal
	a, b := c.wait(), c.wait()
	if a != b {
		t.Fatal("two waits before a notify got different channels")
	}
	c.notify()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("notify did not close the channel waiters hold")
		}
	}
	next := c.wait()
	select {
	case <-next:
		t.Fatal("a wait after the notify is already closed")
	default:
	}
	c.notify()
	c.notify() // nobody waiting: nothing to close twice
}

func TestWaitLeaderChangeReturnsOnChangeBeforeItsBackoff(t *testing.T) {
	var c changeSignal
	changed := c.wait()
	done := make(chan error, 1)
	go func() { done <- waitLeaderChange(context.Background(), backoff.New(time.Hour, time.Hour), changed) }()
	c.notify()
	if err := <-done; err != nil {
		t.Fatalf("waitLeaderChange = %v, want nil after a change", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitLeaderChange(ctx, backoff.New(time.Hour, time.Hour), c.wait()); err == nil {
		t.Fatal("waitLeaderChange with an ended context returned nil")
	}
}

// The in-process marker of a worker's dequeue never crosses the wire: a
// forwarded request reaches the leader as a remote one.
func TestEvalDequeueLocalWorkerStaysInProcess(t *testing.T) {
	in := &structs.EvalDequeueRequest{Schedulers: []string{"batch"}, Timeout: time.Second, LocalWorker: true}
	buf, err := structs.Encode(structs.MessageType(0), in)
	if err != nil {
		t.Fatal(err)
	}
	var out structs.EvalDequeueRequest
	if err := structs.Decode(buf[1:], &out); err != nil {
		t.Fatal(err)
	}
	if out.LocalWorker {
		t.Fatal("LocalWorker survived msgpack encoding")
	}
	if len(out.Schedulers) != 1 || out.Timeout != time.Second {
		t.Fatalf("decoded %+v, want the other fields kept", out)
	}
}

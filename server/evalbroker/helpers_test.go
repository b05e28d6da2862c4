package evalbroker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/drover-project/drover/structs"
)

var evalSeq atomic.Int64

// mockEval returns a valid pending evaluation; tests set what differs.
func mockEval(job string, priority int, typ string) *structs.Evaluation {
	return &structs.Evaluation{
		ID:          fmt.Sprintf("eval-%04d-%s", evalSeq.Add(1), structs.GenerateUUID()[:8]),
		Namespace:   "default",
		Priority:    priority,
		Type:        typ,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       job,
		Status:      structs.EvalStatusPending,
	}
}

// testBroker returns an enabled broker on a fake clock.
func testBroker(t testing.TB, mutate func(*Config)) (*Broker, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.Clock = clock
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.SetEnabled(true)
	return b, clock
}

var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// tryDequeue takes an evaluation that is ready now, without waiting.
func tryDequeue(t testing.TB, b *Broker, types ...string) (*structs.Evaluation, string) {
	t.Helper()
	eval, token, err := b.DequeueContext(doneCtx, types)
	if err != nil && err != context.Canceled {
		t.Fatalf("dequeue %v: %v", types, err)
	}
	return eval, token
}

// mustDequeue takes a ready evaluation and fails if there is none.
func mustDequeue(t testing.TB, b *Broker, types ...string) (*structs.Evaluation, string) {
	t.Helper()
	eval, token := tryDequeue(t, b, types...)
	if eval == nil {
		t.Fatalf("dequeue %v: nothing ready", types)
	}
	return eval, token
}

// mustBeEmpty fails if an evaluation is ready on any of types.
func mustBeEmpty(t testing.TB, b *Broker, types ...string) {
	t.Helper()
	if eval, _ := tryDequeue(t, b, types...); eval != nil {
		t.Fatalf("dequeue %v: got %s, want nothing ready", types, eval.ID)
	}
}

func mustAck(t testing.TB, b *Broker, eval *structs.Evaluation, token string) {
	t.Helper()
	if err := b.Ack(eval.ID, token); err != nil {
		t.Fatalf("ack %s: %v", eval.ID, err)
	}
}

func mustNack(t testing.TB, b *Broker, eval *structs.Evaluation, token string) {
	t.Helper()
	if err := b.Nack(eval.ID, token); err != nil {
		t.Fatalf("nack %s: %v", eval.ID, err)
	}
}

package blockedevals_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/server/blockedevals"
	"github.com/drover-project/drover/server/evalbroker"
	"github.com/drover-project/drover/structs"
)

// The lead wires these together; keep them compatible.
var (
	_ blockedevals.Enqueuer = (*evalbroker.Broker)(nil)
	_ blockedevals.Clock    = evalbroker.SystemClock{}
	_ evalbroker.Clock      = blockedevals.SystemClock{}
)

// TestReblockWhileOutstanding: a worker reblocks the eval it still holds;
// capacity it missed releases the eval into the broker under the worker's
// token, and the broker delivers it again only after the worker acks.
func TestReblockWhileOutstanding(t *testing.T) {
	broker, err := evalbroker.New(evalbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	broker.SetEnabled(true)
	defer broker.SetEnabled(false)
	cfg := blockedevals.DefaultConfig()
	cfg.Enqueuer = broker
	blocked, err := blockedevals.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	blocked.SetEnabled(true)
	defer blocked.SetEnabled(false)

	eval := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web",
		Type: "service", Priority: 50, Status: structs.EvalStatusPending}
	broker.Enqueue(eval)
	got, token, err := broker.Dequeue([]string{"service"}, time.Second)
	if err != nil || got != eval {
		t.Fatalf("dequeue = %v, %v", got, err)
	}

	blocked.Unblock("class-a", 100) // capacity the worker's snapshot (50) missed
	reblocked := got.Copy()
	reblocked.Status, reblocked.SnapshotIndex = structs.EvalStatusBlocked, 50
	blocked.Reblock(reblocked, token)

	if e := dequeueNow(t, broker); e != nil {
		t.Fatalf("delivered %s while its first delivery is outstanding", e.ID)
	}
	if err := broker.Ack(eval.ID, token); err != nil {
		t.Fatal(err)
	}
	again := dequeueNow(t, broker)
	if again == nil || again.ID != eval.ID || again.Status != structs.EvalStatusPending {
		t.Fatalf("after ack: %+v, want the eval again, pending", again)
	}
}

func dequeueNow(t *testing.T, b *evalbroker.Broker) *structs.Evaluation {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e, _, _ := b.DequeueContext(ctx, []string{"service"})
	return e
}

package evalbroker

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestBatchByPriorityLevel: a batch of several priorities (blocked
// evaluations released by one capacity change) is handed out one level at
// a time: a lower level only once every evaluation of the level above has
// been acked, whatever the scheduler types.
func TestBatchByPriorityLevel(t *testing.T) {
	b, clock := testBroker(t, nil)
	high1, high2 := mockEval("high1", 90, "service"), mockEval("high2", 90, "batch")
	mid, low := mockEval("mid", 50, "service"), mockEval("low", 10, "service")
	b.EnqueueAll(map[*structs.Evaluation]string{low: "", high1: "", mid: "", high2: ""})
	if got := b.Stats().TotalGated; got != 2 {
		t.Fatalf("TotalGated = %d, want 2", got)
	}

	// The top level goes out together.
	e1, t1 := mustDequeue(t, b, "service", "batch")
	e2, t2 := mustDequeue(t, b, "service", "batch")
	if e1.Priority != 90 || e2.Priority != 90 {
		t.Fatalf("first level: %s (%d), %s (%d), want both priority 90", e1.JobID, e1.Priority, e2.JobID, e2.Priority)
	}
	mustBeEmpty(t, b, "service", "batch")

	// A nack keeps the level open; the redelivery is still of it.
	mustNack(t, b, e1, t1)
	mustAck(t, b, e2, t2)
	mustBeEmpty(t, b, "service", "batch")
	clock.Advance(b.cfg.InitialNackDelay)
	e1, t1 = mustDequeue(t, b, "service", "batch")
	if e1.Priority != 90 {
		t.Fatalf("redelivered %s, want the nacked priority-90 eval", e1.JobID)
	}
	mustBeEmpty(t, b, "service", "batch")
	mustAck(t, b, e1, t1)

	for _, want := range []*structs.Evaluation{mid, low} {
		got, tok := mustDequeue(t, b, "service", "batch")
		if got != want {
			t.Fatalf("dequeued %s, want %s", got.JobID, want.JobID)
		}
		mustBeEmpty(t, b, "service", "batch")
		mustAck(t, b, got, tok)
	}
	if s := b.Stats(); s.TotalGated != 0 || len(b.gates) != 0 {
		t.Fatalf("gates left: %d gated, %d tracked", s.TotalGated, len(b.gates))
	}
}

// A batch of one priority is not gated.
func TestBatchOfOnePriorityAllReady(t *testing.T) {
	b, _ := testBroker(t, nil)
	x, y := mockEval("x", 50, "service"), mockEval("y", 50, "service")
	b.EnqueueAll(map[*structs.Evaluation]string{x: "", y: ""})
	mustDequeue(t, b, "service")
	mustDequeue(t, b, "service")
}

// A level member enqueued again on its ack (it was reblocked and released
// while its worker held it) keeps the level open until that second
// delivery is acked; one superseded behind its job's outstanding
// evaluation counts as gone.
func TestBatchLevelFollowsRequeueAndSupersede(t *testing.T) {
	b, _ := testBroker(t, nil)
	held := mockEval("held", 90, "service")
	b.Enqueue(held)
	got, tok := mustDequeue(t, b, "service")

	// The same job's older evaluation, parked and then superseded.
	busy := mockEval("busy", 50, "service")
	b.Enqueue(busy)
	busyGot, busyTok := mustDequeue(t, b, "service")
	older, newer := mockEval("busy", 90, "service"), mockEval("busy", 90, "service")
	older.ModifyIndex, newer.ModifyIndex = 5, 6
	b.Enqueue(newer)

	low := mockEval("low", 10, "service")
	b.EnqueueAll(map[*structs.Evaluation]string{got: tok, older: "", low: ""})
	mustBeEmpty(t, b, "service")

	mustAck(t, b, got, tok) // requeued: the level stays open
	again, againTok := mustDequeue(t, b, "service")
	if again.ID != held.ID {
		t.Fatalf("dequeued %s, want the requeued %s", again.JobID, held.JobID)
	}
	mustAck(t, b, busyGot, busyTok) // releases newer, supersedes older
	if c := b.Cancelable(0); len(c) != 1 || c[0] != older {
		t.Fatalf("cancelable %v, want the older busy eval", c)
	}
	n, nTok := mustDequeue(t, b, "service")
	if n != newer {
		t.Fatalf("dequeued %s, want the newer busy eval", n.ID)
	}
	mustAck(t, b, n, nTok)
	mustBeEmpty(t, b, "service")
	mustAck(t, b, again, againTok)
	if l, _ := mustDequeue(t, b, "service"); l != low {
		t.Fatalf("dequeued %s, want low", l.JobID)
	}
}

// Disabling the broker drops the gates with everything else.
func TestBatchGateDroppedOnDisable(t *testing.T) {
	b, _ := testBroker(t, nil)
	b.EnqueueAll(map[*structs.Evaluation]string{mockEval("h", 90, "service"): "", mockEval("l", 10, "service"): ""})
	b.SetEnabled(false)
	b.SetEnabled(true)
	mustBeEmpty(t, b, "service")
	if s := b.Stats(); s.TotalGated != 0 || len(b.gates) != 0 {
		t.Fatalf("gates left after disable: %d gated, %d tracked", s.TotalGated, len(b.gates))
	}
}

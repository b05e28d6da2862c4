package client

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

func stopAfterAlloc(id string, d *time.Duration, disconnect bool) *structs.Allocation {
	tg := &structs.TaskGroup{Name: "g"}
	if disconnect {
		tg.Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: d}
	} else {
		tg.StopAfterClientDisconnect = d
	}
	return &structs.Allocation{ID: id, TaskGroup: "g", Job: &structs.Job{TaskGroups: []*structs.TaskGroup{tg}}}
}

// The client stops each watched allocation exactly its timeout after the
// last successful heartbeat was sent; a later success pushes the deadline;
// an allocation without a timeout is never watched.
func TestHeartbeatStop(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clock.NewManual(start)
	var mu sync.Mutex
	var killed []string
	h := newHeartbeatStop(clk, func(id, reason string) {
		mu.Lock()
		defer mu.Unlock()
		killed = append(killed, id)
	})
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(killed)
	}
	ten, thirty := 10*time.Second, 30*time.Second
	h.watch(stopAfterAlloc("a10", &ten, false))
	h.watch(stopAfterAlloc("b30", &thirty, true))
	h.watch(stopAfterAlloc("none", nil, false))
	if clk.Pending() != 0 {
		t.Fatal("a timer armed before any heartbeat succeeded")
	}
	h.ok(start)
	clk.Advance(9 * time.Second)
	h.ok(clk.Now().Add(-time.Second)) // sent a second ago, answered now
	clk.Advance(8 * time.Second)      // 16s after start, 9s after the last success was sent
	if k := got(); len(k) != 0 {
		t.Fatalf("killed %v before any deadline", k)
	}
	clk.Advance(time.Second) // 10s after the last success was sent
	if k := got(); !slices.Equal(k, []string{"a10"}) {
		t.Fatalf("killed %v, want [a10]", k)
	}
	clk.Advance(19*time.Second + 999*time.Millisecond)
	if k := got(); len(k) != 1 {
		t.Fatalf("killed %v early", k)
	}
	clk.Advance(time.Millisecond)
	if k := got(); !slices.Equal(k, []string{"a10", "b30"}) {
		t.Fatalf("killed %v, want [a10 b30]", k)
	}
	if clk.Pending() != 0 {
		t.Fatalf("%d timers left with nothing to watch", clk.Pending())
	}

	// Forgotten allocations are not stopped; stop disarms.
	h.watch(stopAfterAlloc("c10", &ten, false))
	h.forget("c10")
	clk.Advance(time.Minute)
	h.watch(stopAfterAlloc("d10", &ten, false))
	h.stop()
	clk.Advance(time.Minute)
	if k := got(); len(k) != 2 {
		t.Fatalf("killed %v after forget/stop", k)
	}
}

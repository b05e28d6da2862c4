package blockedevals

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-metrics"
)

// TestMissedUnblock: capacity that changed after an eval's snapshot but
// before it was blocked must release it at once, without a timer.
func TestMissedUnblock(t *testing.T) {
	elig := map[string]bool{"good": true, "bad": false}
	cases := []struct {
		name    string
		flush   bool // let the unblock apply before the Block
		snap    uint64
		escaped bool
		nodeID  string
		class   string
		release bool
	}{
		{"older snapshot, eligible class", true, 50, false, "", "good", true},
		{"older snapshot, unknown class", true, 50, false, "", "new", true},
		{"older snapshot, unblock not yet applied", false, 50, false, "", "good", true},
		{"newer snapshot saw the capacity", true, 150, false, "", "good", false},
		{"equal snapshot saw the capacity", true, 100, false, "", "good", false},
		{"older snapshot, ineligible class", true, 50, false, "", "bad", false},
		{"escaped, ineligible class", true, 50, true, "", "bad", true},
		{"node-tied, its node changed", true, 50, false, "n1", "", true},
		{"node-tied, another node changed", true, 50, false, "n2", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clock, rec := testTracker(t)
			if tc.class != "" {
				b.Unblock(tc.class, 100)
			} else {
				b.UnblockNode("n1", 100)
			}
			if tc.flush {
				clock.Advance(DefaultCoalesceWindow)
			}
			e := mockBlocked("web", tc.snap, elig)
			e.EscapedComputedClass, e.NodeID = tc.escaped, tc.nodeID
			b.Block(e)
			if got := rec.calls() == 1; got != tc.release {
				t.Fatalf("released at once = %v, want %v", got, tc.release)
			}
			clock.Advance(DefaultCoalesceWindow) // a pending flush must not release it again
			if tc.release {
				assertReleased(t, rec, e)
			} else {
				assertReleased(t, rec)
			}
		})
	}
}

// TestCoalescedUnblocks: 5,000 node registrations in a burst produce one
// EnqueueAll call in which each helped eval appears once.
func TestCoalescedUnblocks(t *testing.T) {
	const nodes, classes, evals = 5000, 50, 200
	b, clock, rec := testTracker(t)
	var helped []*structs.Evaluation
	for i := range evals {
		// Even evals are eligible for class-0 only; odd ones know every class
		// as ineligible and must stay blocked.
		elig := map[string]bool{}
		for c := range classes {
			elig[fmt.Sprintf("class-%d", c)] = i%2 == 0 && c == 0
		}
		e := mockBlocked(fmt.Sprintf("job-%d", i), 1, elig)
		b.Block(e)
		if i%2 == 0 {
			helped = append(helped, e)
		}
	}
	for n := range nodes {
		b.Unblock(fmt.Sprintf("class-%d", n%classes), uint64(10+n))
	}
	if n := clock.Pending(); n != 1 {
		t.Fatalf("%d timers armed by the burst, want 1", n)
	}
	clock.Advance(DefaultCoalesceWindow)
	if rec.calls() != 1 {
		t.Fatalf("EnqueueAll calls = %d, want 1", rec.calls())
	}
	assertReleased(t, rec, helped...)
	if got := b.Stats().TotalBlocked; got != evals/2 {
		t.Fatalf("TotalBlocked = %d, want %d", got, evals/2)
	}
	b.Unblock("class-0", 1_000_000)
	clock.Advance(DefaultCoalesceWindow)
	assertReleased(t, rec, helped...)
}

func TestUnblockIndexesArePruned(t *testing.T) {
	b, clock, rec := testTracker(t)
	b.Unblock("old", 100)
	clock.Advance(DefaultUnblockIndexTTL + time.Minute)
	b.Unblock("recent", 200) // prunes "old"
	clock.Advance(DefaultCoalesceWindow)
	e := mockBlocked("web", 50, map[string]bool{"old": true, "recent": false})
	b.Block(e)
	if rec.calls() != 0 {
		t.Fatal("released by a capacity change older than the TTL")
	}
	e2 := mockBlocked("db", 50, map[string]bool{"recent": true})
	b.Block(e2)
	assertReleased(t, rec, e2)
}

func TestEmitStats(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	m, err := metrics.New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := testTracker(t)
	b.metrics = m
	escaped := mockBlocked("a", 0, nil)
	escaped.EscapedComputedClass = true
	node := mockBlocked("b", 0, nil)
	node.NodeID = "n1"
	for _, e := range []*structs.Evaluation{escaped, node, mockBlocked("c", 0, nil)} {
		b.Block(e)
	}
	b.EmitStats()
	gauges := sink.Data()[0].Gauges
	for key, want := range map[string]float32{MetricTotalBlocked: 3, MetricTotalEscaped: 1, MetricTotalNodeTied: 1} {
		if g, ok := gauges[key]; !ok || g.Value != want {
			t.Errorf("gauge %s = %+v, want %v", key, g, want)
		}
	}
}

package blockedevals

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
	}{
		{"no enqueuer", func(c *Config) { c.Enqueuer = nil }},
		{"negative window", func(c *Config) { c.CoalesceWindow = -1 }},
		{"zero ttl", func(c *Config) { c.UnblockIndexTTL = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Enqueuer = &recorder{}
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, &structs.Error{Code: structs.ErrCodeInvalid}) {
				t.Fatalf("New: err = %v, want invalid", err)
			}
		})
	}
}

func TestUnblockByClass(t *testing.T) {
	elig := map[string]bool{"good": true, "bad": false}
	cases := []struct {
		name    string
		escaped bool
		nodeID  string
		class   string
		index   uint64
		release bool
	}{
		{"eligible class releases", false, "", "good", 10, true},
		{"ineligible class stays", false, "", "bad", 10, false},
		{"unknown class releases", false, "", "new", 10, true},
		{"escaped releases on any class", true, "", "bad", 10, true},
		{"change not newer than snapshot stays", false, "", "good", 5, false},
		{"node-tied eval ignores classes", false, "node-1", "good", 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clock, rec := testTracker(t)
			e := mockBlocked("web", 5, elig)
			e.EscapedComputedClass, e.NodeID = tc.escaped, tc.nodeID
			b.Block(e)
			b.Unblock(tc.class, tc.index)
			if rec.calls() != 0 {
				t.Fatal("released before the coalescing window")
			}
			clock.Advance(DefaultCoalesceWindow)
			if !tc.release {
				assertReleased(t, rec)
				if got := b.Stats().TotalBlocked; got != 1 {
					t.Fatalf("TotalBlocked = %d, want 1", got)
				}
				return
			}
			assertReleased(t, rec, e)
			if got := b.Stats().TotalBlocked; got != 0 {
				t.Fatalf("TotalBlocked = %d after release, want 0", got)
			}
		})
	}
}

func TestReleasedEvalIsPendingCopy(t *testing.T) {
	b, clock, rec := testTracker(t)
	e := mockBlocked("web", 5, nil)
	b.Reblock(e, "tok-1")
	b.Unblock("any", 10)
	clock.Advance(DefaultCoalesceWindow)
	if rec.calls() != 1 {
		t.Fatalf("EnqueueAll calls = %d, want 1", rec.calls())
	}
	for got, tok := range rec.batches[0] {
		if got == e || got.ID != e.ID || got.Status != structs.EvalStatusPending {
			t.Fatalf("released %p %s status %q; want a pending copy of %p", got, got.ID, got.Status, e)
		}
		if tok != "tok-1" {
			t.Fatalf("token = %q, want tok-1", tok)
		}
	}
	if e.Status != structs.EvalStatusBlocked {
		t.Fatalf("original eval modified: status %q", e.Status)
	}
}

func TestUnblockNode(t *testing.T) {
	b, clock, rec := testTracker(t)
	onNode1 := mockBlocked("sys", 5, nil)
	onNode1.NodeID = "node-1"
	onNode2 := mockBlocked("sys", 5, nil)
	onNode2.NodeID = "node-2"
	classEval := mockBlocked("web", 5, nil)
	for _, e := range []*structs.Evaluation{onNode1, onNode2, classEval} {
		b.Block(e)
	}
	if s := b.Stats(); s.TotalBlocked != 3 || s.TotalNodeTied != 2 {
		t.Fatalf("stats = %+v, want 3 blocked, 2 node-tied", s)
	}
	b.UnblockNode("node-1", 10)
	b.UnblockNode("node-3", 10)
	clock.Advance(DefaultCoalesceWindow)
	assertReleased(t, rec, onNode1)
}

func TestOneBlockedEvalPerJob(t *testing.T) {
	type blockSpec struct {
		job, node string
		create    uint64
		sameAs    int // -1, or reuse the ID of an earlier eval
	}
	cases := []struct {
		name    string
		blocks  []blockSpec
		tracked []int // indexes still tracked (released by a broad unblock)
		dups    []int
	}{
		{"newer replaces older", []blockSpec{{"web", "", 1, -1}, {"web", "", 2, -1}}, []int{1}, []int{0}},
		{"older incoming is the duplicate", []blockSpec{{"web", "", 2, -1}, {"web", "", 1, -1}}, []int{0}, []int{1}},
		{"same eval again replaces silently", []blockSpec{{"web", "", 1, -1}, {"web", "", 3, 0}}, []int{1}, nil},
		{"different jobs coexist", []blockSpec{{"web", "", 1, -1}, {"db", "", 2, -1}}, []int{0, 1}, nil},
		{"one per job and node", []blockSpec{{"sys", "n1", 1, -1}, {"sys", "n2", 2, -1}, {"sys", "n1", 3, -1}}, []int{1, 2}, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, clock, rec := testTracker(t)
			var evals []*structs.Evaluation
			for _, s := range tc.blocks {
				e := mockBlocked(s.job, 0, nil)
				e.NodeID, e.CreateIndex = s.node, s.create
				if s.sameAs >= 0 {
					e.ID = evals[s.sameAs].ID
				}
				evals = append(evals, e)
				b.Block(e)
			}
			assertDuplicates(t, b.GetDuplicates(0), evals, tc.dups)
			b.Unblock("any", 100)
			for _, node := range []string{"n1", "n2"} {
				b.UnblockNode(node, 100)
			}
			clock.Advance(DefaultCoalesceWindow)
			var want []*structs.Evaluation
			for _, i := range tc.tracked {
				want = append(want, evals[i])
			}
			assertReleased(t, rec, want...)
		})
	}
}

func assertDuplicates(t *testing.T, got, evals []*structs.Evaluation, want []int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d duplicates, want %d", len(got), len(want))
	}
	for i, idx := range want {
		if got[i] != evals[idx] {
			t.Fatalf("duplicate %d = %s, want eval %d", i, got[i].ID, idx)
		}
	}
}

func TestGetDuplicatesWaits(t *testing.T) {
	b, clock, _ := testTracker(t)
	res := make(chan []*structs.Evaluation, 2)
	go func() { res <- b.GetDuplicates(time.Minute) }()
	waitForTimers(t, clock, 1)
	old := mockBlocked("web", 0, nil)
	b.Block(old)
	b.Block(mockBlocked("web", 0, nil))
	if got := <-res; len(got) != 1 || got[0] != old {
		t.Fatalf("GetDuplicates = %v, want the replaced eval", got)
	}

	go func() { res <- b.GetDuplicates(time.Minute) }()
	waitForTimers(t, clock, 1)
	clock.Advance(time.Minute)
	if got := <-res; got != nil {
		t.Fatalf("GetDuplicates after timeout = %v, want nil", got)
	}
}

// waitForTimers waits until the fake clock has n pending timers.
func waitForTimers(t *testing.T, clock *fakeClock, n int) {
	t.Helper()
	if !clock.WaitPending(n, 5*time.Second) {
		t.Fatalf("%d pending timers, want %d", clock.Pending(), n)
	}
}

func TestUntrack(t *testing.T) {
	b, clock, rec := testTracker(t)
	web := mockBlocked("web", 0, nil)
	sys1 := mockBlocked("sys", 0, nil)
	sys1.NodeID = "n1"
	sys2 := mockBlocked("sys", 0, nil)
	sys2.NodeID = "n2"
	for _, e := range []*structs.Evaluation{web, sys1, sys2} {
		b.Block(e)
	}
	b.Untrack("default", "sys")
	b.Untrack("other-namespace", "web")
	if got := b.Stats().TotalBlocked; got != 1 {
		t.Fatalf("TotalBlocked = %d, want 1", got)
	}
	b.Unblock("any", 10)
	b.UnblockNode("n1", 10)
	b.UnblockNode("n2", 10)
	clock.Advance(DefaultCoalesceWindow)
	assertReleased(t, rec, web)
	if dups := b.GetDuplicates(0); len(dups) != 0 {
		t.Fatalf("untracked evals reported as duplicates: %v", dups)
	}
}

func TestUnblockFailed(t *testing.T) {
	b, _, rec := testTracker(t)
	failed := mockBlocked("web", 0, nil)
	failed.TriggeredBy = structs.EvalTriggerMaxPlans
	other := mockBlocked("db", 0, nil)
	b.Block(failed)
	b.Block(other)
	b.UnblockFailed()
	assertReleased(t, rec, failed)
}

func TestDisableFlushes(t *testing.T) {
	b, clock, rec := testTracker(t)
	b.Block(mockBlocked("web", 0, nil))
	b.Block(mockBlocked("web", 0, nil)) // one duplicate
	b.Unblock("c", 10)                  // pending release, recorded mark
	b.SetEnabled(false)
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending after disable", n)
	}
	clock.Advance(time.Hour)
	if rec.calls() != 0 || b.Stats().TotalBlocked != 0 || len(b.GetDuplicates(0)) != 0 {
		t.Fatalf("after disable: %d releases, stats %+v", rec.calls(), b.Stats())
	}
	b.Block(mockBlocked("db", 0, nil))
	b.Unblock("c", 20)
	if b.Stats().TotalBlocked != 0 || clock.Pending() != 0 {
		t.Fatal("disabled tracker accepted work")
	}
	b.SetEnabled(true)
	b.Block(mockBlocked("db", 5, nil)) // the class mark at 10 was forgotten
	if rec.calls() != 0 || b.Stats().TotalBlocked != 1 {
		t.Fatalf("re-enabled tracker: %d releases, stats %+v", rec.calls(), b.Stats())
	}
}

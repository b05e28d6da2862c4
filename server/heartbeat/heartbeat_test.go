package heartbeat

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/clock"
)

type recorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *recorder) expired(id string) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.ids...)
	sort.Strings(out)
	return out
}

func newTest() (*Heartbeater, *clock.Manual, *recorder) {
	clk := clock.NewManual(time.Unix(1000, 0))
	rec := &recorder{}
	h := New(Config{Clock: clk, Expired: rec.expired, Rand: func() float64 { return 0 },
		MinTTL: 10 * time.Second, Grace: 5 * time.Second, FailoverTTL: time.Minute})
	return h, clk, rec
}

func TestTTLGrowsWithClusterSize(t *testing.T) {
	h, _, _ := newTest()
	tests := []struct {
		nodes int
		want  time.Duration
	}{
		{1, 10 * time.Second},
		{500, 10 * time.Second},
		{5000, 100 * time.Second},
		{10000, 200 * time.Second},
	}
	for _, tc := range tests {
		if got := h.TTL(tc.nodes); got != tc.want {
			t.Errorf("TTL(%d) = %v, want %v", tc.nodes, got, tc.want)
		}
	}
	h.cfg.Rand = func() float64 { return 0.5 }
	if got := h.TTL(1); got != 15*time.Second {
		t.Errorf("stagger: TTL = %v, want 15s", got)
	}
}

func TestExpiresAfterTTLPlusGrace(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize(nil)
	ttl := h.Reset("n1")
	if ttl != 10*time.Second {
		t.Fatalf("ttl = %v", ttl)
	}
	clk.Advance(14 * time.Second)
	if len(rec.got()) != 0 {
		t.Fatal("expired before TTL + grace")
	}
	clk.Advance(time.Second)
	if got := rec.got(); len(got) != 1 || got[0] != "n1" {
		t.Fatalf("expired = %v, want [n1]", got)
	}
	if h.Tracked() != 0 {
		t.Fatal("expired node still tracked")
	}
}

func TestHeartbeatPostponesExpiry(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize(nil)
	h.Reset("n1")
	for i := 0; i < 10; i++ {
		clk.Advance(10 * time.Second)
		h.Reset("n1")
	}
	if len(rec.got()) != 0 {
		t.Fatalf("a node heartbeating every TTL expired: %v", rec.got())
	}
}

func TestFailoverTTLAfterLeaderChange(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize([]string{"a", "b"})
	clk.Advance(59 * time.Second)
	if len(rec.got()) != 0 {
		t.Fatal("nodes marked down before the failover TTL")
	}
	h.Reset("a")
	clk.Advance(time.Second)
	if got := rec.got(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("expired = %v, want [b]", got)
	}
}

func TestDisableStopsTimersAndResetDoesNotArm(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize([]string{"a"})
	h.Disable()
	if ttl := h.Reset("b"); ttl <= 0 {
		t.Fatal("Reset must still return a TTL when disabled")
	}
	clk.Advance(time.Hour)
	if len(rec.got()) != 0 || h.Tracked() != 0 {
		t.Fatalf("disabled heartbeater expired %v, tracks %d", rec.got(), h.Tracked())
	}
}

func TestClear(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize(nil)
	h.Reset("a")
	h.Clear("a")
	clk.Advance(time.Hour)
	if len(rec.got()) != 0 {
		t.Fatal("cleared node expired")
	}
}

func TestRealClockConcurrentResets(t *testing.T) {
	rec := &recorder{}
	h := New(Config{MinTTL: 200 * time.Millisecond, Grace: 50 * time.Millisecond, Expired: rec.expired})
	h.Initialize(nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				h.Reset("n")
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for len(rec.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := rec.got(); len(got) != 1 {
		t.Fatalf("expired %d times, want exactly once", len(got))
	}
}

// A node that registers (or heartbeats) while the new leader is still
// establishing itself, before Initialize, keeps the deadline it was told:
// it is not given the much longer FailoverTTL, so a client that dies right
// after registering is marked down in time (seen in e2e's client SIGKILL
// test once the keyring hook made establishment write through Raft).
func TestResetBeforeInitializeKeepsItsDeadline(t *testing.T) {
	h, clk, rec := newTest()
	if ttl := h.Reset("early"); ttl != 10*time.Second {
		t.Fatalf("ttl = %v", ttl)
	}
	clk.Advance(2 * time.Second)
	h.Initialize([]string{"early", "known"})
	clk.Advance(13*time.Second - time.Millisecond) // 15 s after the Reset: TTL + grace, less a tick
	if got := rec.got(); len(got) != 0 {
		t.Fatalf("expired too early: %v", got)
	}
	clk.Advance(time.Millisecond)
	if got := rec.got(); len(got) != 1 || got[0] != "early" {
		t.Fatalf("expired = %v, want [early] at its own deadline", got)
	}
	clk.Advance(time.Minute)
	if got := rec.got(); len(got) != 2 || got[1] != "known" {
		t.Fatalf("expired = %v, want known after the failover TTL", got)
	}
	// A Disable forgets what was pending.
	h.Disable()
	h.Reset("late")
	h.Disable()
	h.Initialize([]string{"late"})
	clk.Advance(30 * time.Second)
	if got := rec.got(); len(got) != 2 {
		t.Fatalf("a Reset before a Disable still counted: %v", got)
	}
}

// Extend gives a node whose timer fired the failover TTL, unless it
// heartbeated since; Alive tells which.
func TestExtendAfterExpiry(t *testing.T) {
	h, clk, rec := newTest()
	h.Initialize(nil)
	h.Reset("a")
	h.Reset("b")
	clk.Advance(15 * time.Second)
	if got := rec.got(); len(got) != 2 {
		t.Fatalf("expired = %v, want [a b]", got)
	}
	if h.Alive("a") || h.Alive("b") {
		t.Fatal("expired nodes still alive")
	}
	h.Reset("b") // b heartbeats after its timer fired
	h.Extend("a")
	h.Extend("b") // keeps b's own TTL
	if !h.Alive("a") || !h.Alive("b") {
		t.Fatal("extended nodes not alive")
	}
	clk.Advance(15 * time.Second)
	if got := rec.got(); len(got) != 3 || got[2] != "b" {
		t.Fatalf("expired = %v, want b again at its own TTL", got)
	}
	clk.Advance(45 * time.Second) // the failover TTL (1 min) after the Extend
	if got := rec.got(); len(got) != 4 || got[1] != "a" {
		t.Fatalf("expired = %v, want a after the failover TTL", got)
	}
	h.Disable()
	h.Extend("a")
	if h.Tracked() != 0 {
		t.Fatal("Extend armed a timer while disabled")
	}
}

package allocwatch

import (
	"testing"
	"time"
)

// TestIndex walks the watch's index through the answers it can get: the
// first query and any confirmation go to the leader unblocked; an answer
// below the index is confirmed before it is acted on (a lagging server's
// would drop allocations), and the leader's answer is taken as is.
func TestIndex(t *testing.T) {
	const wait = time.Minute
	var w Index
	if o := w.Options("r", wait); o.MinQueryIndex != 0 || o.AllowStale || o.Region != "r" {
		t.Fatalf("first query options %+v, want a consistent unblocked read", o)
	}
	steps := []struct {
		name       string
		answer     uint64
		wantAccept bool
		wantMin    uint64 // of the next query; stale iff non-zero
	}{
		{"first answer", 10, true, 10},
		{"timeout at the same index", 10, true, 10},
		{"a change", 12, true, 12},
		{"a lower answer is confirmed", 8, false, 0},
		{"the leader's lower answer is taken", 8, true, 8},
		{"another lower answer", 5, false, 0},
		{"the leader is ahead", 15, true, 15},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			ok := w.Accept(s.answer)
			if ok != s.wantAccept {
				t.Fatalf("Accept(%d) = %v, want %v", s.answer, ok, s.wantAccept)
			}
			if ok {
				w.Done(s.answer)
			}
			o := w.Options("r", wait)
			if o.MinQueryIndex != s.wantMin || o.AllowStale != (s.wantMin != 0) || (o.AllowStale && o.MaxQueryTime != wait) {
				t.Fatalf("next query options %+v, want MinQueryIndex %d", o, s.wantMin)
			}
		})
	}
}

package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// The pacer gives a job at most one node-event evaluation per window, the
// window doubling up to four first windows while events keep coming, and
// tells an event which write of a new evaluation of its jobs is in flight.
func TestNodeEvalPacer(t *testing.T) {
	p := newNodeEvalPacer(time.Second)
	t0 := time.Unix(1000, 0)
	web := structs.NamespacedID{Namespace: "default", ID: "web"}
	steps := []struct {
		at   time.Duration
		want time.Duration // -1: due at once
	}{
		{0, -1},
		{100 * time.Millisecond, 2 * time.Second},  // within the window: two windows after the first
		{200 * time.Millisecond, 2 * time.Second},  // the previous not yet due: with it, never further
		{2500 * time.Millisecond, 6 * time.Second}, // events keep coming: four windows after it
		{7 * time.Second, 10 * time.Second},        // at most four windows
		{15 * time.Second, -1},                     // quiet for a window: at once again
		{15500 * time.Millisecond, 17 * time.Second},
	}
	for _, s := range steps {
		p.mu.Lock()
		got := p.dueLocked(web, t0.Add(s.at))
		p.mu.Unlock()
		want := time.Time{}
		if s.want >= 0 {
			want = t0.Add(s.want)
		}
		if !got.Equal(want) {
			t.Errorf("due at +%v = %v, want %v", s.at, got, want)
		}
	}
	p.reset()
	p.mu.Lock()
	if got := p.dueLocked(web, t0.Add(15600*time.Millisecond)); !got.IsZero() {
		t.Errorf("after reset: due %v, want at once", got)
	}
	p.mu.Unlock()

	job := &structs.Job{Namespace: "default", ID: "web"}
	other := &structs.Job{Namespace: "default", ID: "other"}
	if p.inFlight([]*structs.Job{job}) != nil {
		t.Fatal("a write in flight before any")
	}
	ch := make(chan struct{})
	p.mu.Lock()
	p.writing[web] = ch
	p.mu.Unlock()
	if p.inFlight([]*structs.Job{other, job}) != ch || p.inFlight([]*structs.Job{other}) != nil {
		t.Fatal("inFlight does not find the job's write")
	}
	p.finish(ch)
	select {
	case <-ch:
	default:
		t.Fatal("finish left the channel open")
	}
	if p.inFlight([]*structs.Job{job}) != nil {
		t.Fatal("a finished write still in flight")
	}
}

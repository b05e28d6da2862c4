package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestEvalResolver: evaluations terminal in the list (read once, every
// page) are resolved from it; only the others are followed one by one,
// and one that never completes is counted unresolved.
func TestEvalResolver(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	list := []*nomad.Evaluation{
		{ID: "a", Status: "complete", ModifyTime: at(2 * time.Second)},
		{ID: "b", Status: "pending", ModifyTime: at(time.Second)},
		{ID: "c", Status: "failed", ModifyTime: at(4 * time.Second)},
		{ID: "other", Status: "complete", ModifyTime: at(time.Hour)},
	}
	var mu sync.Mutex
	requests := map[string]int{} // guarded by mu
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		requests[req.URL.Path]++
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "5")
		w.Header().Set("X-Nomad-LastContact", "0")
		switch req.URL.Path {
		case "/v1/evaluations":
			// Two pages: the second starts at the token.
			page := list[:2]
			if req.URL.Query().Get("next_token") == "c" {
				page = list[2:]
			} else {
				w.Header().Set("X-Nomad-NextToken", "c")
			}
			_ = json.NewEncoder(w).Encode(page)
		case "/v1/evaluation/b":
			_ = json.NewEncoder(w).Encode(&nomad.Evaluation{ID: "b", Status: "complete", ModifyTime: at(3 * time.Second)})
		case "/v1/evaluation/d":
			if req.URL.Query().Get("index") != "" {
				time.Sleep(20 * time.Millisecond) // a blocking query that times out
			}
			_ = json.NewEncoder(w).Encode(&nomad.Evaluation{ID: "d", Status: "pending"})
		default:
			http.NotFound(w, req)
		}
	}))
	defer srv.Close()
	r := testRunner(t, &Config{Addresses: []string{srv.URL}})
	e := r.newEvalResolver()
	for _, id := range []string{"a", "b", "c", "d", ""} {
		e.add(id, start, 0)
	}
	lat, unresolved := e.finish(context.Background(), 300*time.Millisecond)
	if lat.Count != 3 || unresolved != 1 {
		t.Fatalf("resolved %d, unresolved %d; want 3 and 1", lat.Count, unresolved)
	}
	if lat.P50 != 3*time.Second || lat.Max != 4*time.Second || lat.Mean != 3*time.Second {
		t.Fatalf("latencies %+v, want 2s, 3s, 4s", lat)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests["/v1/evaluations"] != 2 || requests["/v1/evaluation/a"] != 0 || requests["/v1/evaluation/c"] != 0 || requests["/v1/evaluation/b"] != 1 {
		t.Fatalf("requests by path: %v", requests)
	}
}

func TestListPollInterval(t *testing.T) {
	start := time.Unix(1000, 0)
	cases := []struct {
		name            string
		placed, running int64
		elapsed         time.Duration
		want            time.Duration
	}{
		{"nothing placed yet", 0, 0, time.Second, listPollEvery},
		{"nothing running yet", 100, 0, time.Second, listPollEvery},
		// 100/s: 9,800 left take 98 s.
		{"far from the end", 200, 100, time.Second, listPollMax},
		// 1,000/s placed: 5 s left; running at 900/s: ~5.6 s left.
		{"a tenth of the nearer end", 5000, 4500, 5 * time.Second, 500 * time.Millisecond},
		{"near the end", 9900, 9800, 10 * time.Second, listPollEvery},
		{"all placed: the start rate decides", 10000, 7000, 7 * time.Second, 300 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newPlaceCounts(10000, start)
			c.placed.Store(tc.placed)
			c.running.Store(tc.running)
			if got := listPollInterval(c, start.Add(tc.elapsed)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPollJobListHandsTheTailOver: the poller counts from the list until
// every job is listed and at most perJobWatchLimit are not fully running,
// then hands those over with the counts it added for them.
func TestPollJobListHandsTheTailOver(t *testing.T) {
	const jobs, count = 40, 10
	summary := func(queued, starting, running int) *nomad.JobSummary {
		return &nomad.JobSummary{Summary: map[string]nomad.TaskGroupSummary{"g": {Queued: queued, Starting: starting, Running: running}}}
	}
	var mu sync.Mutex
	reads := 0 // guarded by mu
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/jobs" || req.URL.Query().Get("prefix") == "" {
			http.NotFound(w, req)
			return
		}
		mu.Lock()
		reads++
		n := reads
		mu.Unlock()
		w.Header().Set("X-Nomad-Index", "5")
		w.Header().Set("X-Nomad-LastContact", "0")
		var out []jobListEntry
		for i := range jobs {
			s := summary(count, 0, 0)
			switch {
			case n == 1 && i >= 20:
				continue // not every job is listed yet
			case n >= 3 && i < 35:
				s = summary(0, 0, count)
			case n >= 3:
				s = summary(0, 4, 6)
			}
			out = append(out, jobListEntry{ID: "j" + string(rune('A'+i)), JobSummary: s})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	r := testRunner(t, &Config{Addresses: []string{srv.URL}, Scenario: Scenario{Name: "t"}})
	counts := newPlaceCounts(jobs*count, time.Now())
	var tail []tailJob
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.pollJobList(context.Background(), counts, jobs, count, func(j []tailJob) { tail = j })
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the poller did not hand over")
	}
	if len(tail) != 5 || tail[0].placed != count || tail[0].running != 6 {
		t.Fatalf("tail %+v, want the 5 jobs at 10 placed, 6 running", tail)
	}
	if p, run := counts.placed.Load(), counts.running.Load(); p != jobs*count || run != 35*count+5*6 {
		t.Fatalf("counts placed %d running %d", p, run)
	}
	mu.Lock()
	defer mu.Unlock()
	if reads != 3 {
		t.Fatalf("%d list reads, want 3 (the second lists every job, none finished)", reads)
	}
}

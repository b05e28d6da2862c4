package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// stub is an allocation of job "j", group "g", slot i.
func stub(id string, i int, desired, client string) *nomad.AllocationListStub {
	return &nomad.AllocationListStub{ID: id, JobID: "j", TaskGroup: "g", Name: fmt.Sprintf("j.g[%d]", i),
		DesiredStatus: desired, ClientStatus: client}
}

// running returns n running allocations in slots 0..n-1.
func running(n int) []*nomad.AllocationListStub {
	var out []*nomad.AllocationListStub
	for i := range n {
		out = append(out, stub(fmt.Sprintf("a%d", i), i, "run", "running"))
	}
	return out
}

func TestCheckJob(t *testing.T) {
	cases := []struct {
		name       string
		want       int
		allocs     []*nomad.AllocationListStub
		converged  bool
		live       int
		duplicates []string
		problem    string
	}{
		{name: "converged", want: 3, allocs: running(3), converged: true, live: 3},
		{name: "pending counts as placed", want: 2,
			allocs:    append(running(1), stub("p", 1, "run", "pending")),
			converged: true, live: 2},
		{name: "one slot missing", want: 3, allocs: running(2), live: 2,
			problem: "2 allocations hold 2 distinct names, want 3"},
		{name: "no allocations", want: 2, problem: "0 allocations hold 0 distinct names, want 2"},
		{name: "duplicate", want: 3,
			allocs: append(running(3), stub("dup", 1, "run", "pending")), live: 4,
			duplicates: []string{"j.g[1]"}, problem: "1 names held by more than one allocation"},
		{name: "duplicate unknown and running", want: 1,
			allocs: []*nomad.AllocationListStub{stub("x", 0, "run", "unknown"), stub("y", 0, "run", "running")},
			live:   2, duplicates: []string{"j.g[0]"}, problem: "1 names held"},
		{name: "stopped then replaced", want: 2,
			allocs:    append(running(2), stub("old", 0, "stop", "running")),
			converged: true, live: 2},
		{name: "lost then replaced", want: 2,
			allocs:    append(running(2), stub("lost", 1, "run", "lost")),
			converged: true, live: 2},
		{name: "failed then replaced", want: 2,
			allocs:    append(running(2), stub("failed", 1, "run", "failed")),
			converged: true, live: 2},
		{name: "evicted then replaced", want: 1,
			allocs:    append(running(1), stub("ev", 0, "evict", "complete")),
			converged: true, live: 1},
		{name: "batch complete fills its slot", want: 2,
			allocs:    []*nomad.AllocationListStub{stub("c", 0, "run", "complete"), stub("r", 1, "run", "running")},
			converged: true, live: 1},
		{name: "complete and placed again", want: 2,
			allocs:  append(running(2), stub("c", 0, "run", "complete")),
			live:    2,
			problem: "3 allocations hold 2 distinct names, want 2"},
		{name: "outside the count", want: 2,
			allocs: append(running(1), stub("far", 5, "run", "running")), live: 2,
			problem: "allocation j.g[5] is outside the count of 2"},
		{name: "another job's allocation ignored", want: 1,
			allocs:    append(running(1), &nomad.AllocationListStub{ID: "o", JobID: "other", TaskGroup: "g", Name: "j.g[0]", DesiredStatus: "run", ClientStatus: "running"}),
			converged: true, live: 1},
		{name: "convergence not checked", want: -1,
			allocs: append(running(2), stub("dup", 0, "run", "running")), live: 3,
			duplicates: []string{"j.g[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := checkJob("j", tc.want, tc.allocs)
			if c.Converged != tc.converged || c.Live != tc.live {
				t.Fatalf("converged %v live %d (problem %q), want %v %d", c.Converged, c.Live, c.Problem, tc.converged, tc.live)
			}
			if got := strings.Join(sortedKeys(c.Duplicates), ","); got != strings.Join(tc.duplicates, ",") {
				t.Fatalf("duplicates %q, want %q", got, tc.duplicates)
			}
			if !strings.HasPrefix(c.Problem, tc.problem) || (tc.problem == "" && c.Problem != "") {
				t.Fatalf("problem %q, want %q", c.Problem, tc.problem)
			}
		})
	}
}

func TestCheckJobDuplicateIDs(t *testing.T) {
	c := checkJob("j", 1, []*nomad.AllocationListStub{stub("b", 0, "run", "running"), stub("a", 0, "run", "pending")})
	if got := c.Duplicates["j.g[0]"]; len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("duplicate IDs %q", got)
	}
}

func TestSlotIndex(t *testing.T) {
	cases := []struct {
		name string
		i    int
		ok   bool
	}{
		{"job.g[0]", 0, true},
		{"job.g[12]", 12, true},
		{"job.g[-1]", 0, false},
		{"job.h[1]", 0, false},
		{"job.g[x]", 0, false},
		{"job.g[1", 0, false},
	}
	for _, tc := range cases {
		if i, ok := slotIndex("job", "g", tc.name); i != tc.i || ok != tc.ok {
			t.Errorf("slotIndex(%q) = %d, %v; want %d, %v", tc.name, i, ok, tc.i, tc.ok)
		}
	}
}

// fakeAllocServer answers /v1/job/<id>/allocations from allocs (by job).
func fakeAllocServer(t *testing.T, allocs map[string][]*nomad.AllocationListStub) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id, ok := strings.CutPrefix(req.URL.Path, "/v1/job/")
		if !ok || !strings.HasSuffix(id, "/allocations") {
			http.NotFound(w, req)
			return
		}
		id = strings.TrimSuffix(id, "/allocations")
		out := allocs[id]
		if out == nil {
			out = []*nomad.AllocationListStub{}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// testRunner is a runner over the given agent addresses.
func testRunner(t *testing.T, cfg *Config) *runner {
	t.Helper()
	r := &runner{cfg: cfg.withDefaults(), res: &Result{}}
	for _, a := range cfg.Addresses {
		c, err := nomad.NewClient(&nomad.Config{Address: a})
		if err != nil {
			t.Fatal(err)
		}
		r.clients = append(r.clients, c)
	}
	live := make([]int, len(r.clients))
	for i := range live {
		live[i] = i
	}
	r.live.Store(&live)
	return r
}

func TestVerifyPlace(t *testing.T) {
	sc := Scenario{Name: "p", Kind: KindPlace, Jobs: 3, Count: 2}
	r := testRunner(t, &Config{Scenario: sc, Addresses: []string{"http://unused"}})
	job := func(i int) string { return r.placeJobID(i) }
	mk := func(jobID string, ids ...string) []*nomad.AllocationListStub {
		var out []*nomad.AllocationListStub
		for i, id := range ids {
			out = append(out, &nomad.AllocationListStub{ID: id, JobID: jobID, TaskGroup: "g",
				Name: fmt.Sprintf("%s.g[%d]", jobID, i%2), DesiredStatus: "run", ClientStatus: "running"})
		}
		return out
	}
	allocs := map[string][]*nomad.AllocationListStub{
		job(0): mk(job(0), "a", "b"),
		job(1): mk(job(1), "c", "d", "e"), // e duplicates slot 0
		// job 2 has no allocations
	}
	srv := fakeAllocServer(t, allocs)
	r = testRunner(t, &Config{Scenario: sc, Addresses: []string{srv.URL}})
	v := r.verify(context.Background())
	if v == nil || v.Jobs != 3 || v.Expected != 3 || v.Converged != 1 || v.Duplicates != 1 || v.ReadErrors != 0 {
		t.Fatalf("verify %+v", v)
	}
	if !v.failed() {
		t.Fatal("a duplicate must fail the check")
	}
	all := strings.Join(v.Problems, "\n")
	if !strings.Contains(all, "DUPLICATE "+job(1)+".g[0]: held by allocations c, e") || !strings.Contains(all, job(2)+": 0 allocations") {
		t.Fatalf("problems:\n%s", all)
	}

	res := &Result{Kind: KindPlace, Verify: v}
	res.checkTargets()
	var buf bytes.Buffer
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"MISSED: DUPLICATE ALLOCATIONS: 1 names held by more than one live allocation, target 0",
		"MISSED: 2 of 3 jobs did not converge",
		"1/3 jobs converged, 1 duplicate allocations in 3 jobs read",
		"Allocations: DUPLICATE ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if row := res.MarkdownRow(); !strings.Contains(row, "| 1/3 / 1 **DUPLICATES** |") {
		t.Errorf("markdown row %s", row)
	}
}

func TestVerifySkipped(t *testing.T) {
	for _, cfg := range []*Config{
		{Scenario: Scenario{Name: "i", Kind: KindIdle}},
		{Scenario: Scenario{Name: "p", Kind: KindPlace, Jobs: 1, Count: 1}, NoVerify: true},
	} {
		cfg.Addresses = []string{"http://unused"}
		if v := testRunner(t, cfg).verify(context.Background()); v != nil || v.failed() {
			t.Fatalf("%s: verify %+v", cfg.Scenario.Name, v)
		}
	}
}

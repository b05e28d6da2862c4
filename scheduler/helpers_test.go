package scheduler

import (
	"sort"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// testHarness returns a fresh harness or fails the test.
func testHarness(t tb) *Harness {
	t.Helper()
	h, err := NewHarness()
	if err != nil {
		t.Fatalf("NewHarness: %v", err)
	}
	return h
}

// addNodes stores the nodes.
func addNodes(t tb, h *Harness, nodes ...*structs.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := h.State.UpsertNode(h.NextIndex(), n, nil); err != nil {
			t.Fatalf("UpsertNode: %v", err)
		}
	}
}

// mockNodes stores n mock nodes, changed by each fn, and returns them.
func mockNodes(t tb, h *Harness, n int, fns ...func(i int, n *structs.Node)) []*structs.Node {
	t.Helper()
	out := make([]*structs.Node, n)
	for i := range out {
		out[i] = mock.Node()
		for _, fn := range fns {
			fn(i, out[i])
		}
	}
	addNodes(t, h, out...)
	return out
}

// addJob stores job and returns the stored version (with its indexes).
func addJob(t tb, h *Harness, job *structs.Job) *structs.Job {
	t.Helper()
	if err := h.State.UpsertJob(h.NextIndex(), job, nil); err != nil {
		t.Fatalf("UpsertJob: %v", err)
	}
	stored, err := h.State.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatalf("JobByID: %v", err)
	}
	return stored
}

// addAllocs stores allocations.
func addAllocs(t tb, h *Harness, allocs ...*structs.Allocation) {
	t.Helper()
	if err := h.State.UpsertAllocs(h.NextIndex(), allocs); err != nil {
		t.Fatalf("UpsertAllocs: %v", err)
	}
}

// process runs a fresh eval of job with trigger through the harness.
func process(t tb, h *Harness, job *structs.Job, trigger string) *structs.Evaluation {
	t.Helper()
	e := mock.Eval(job)
	e.TriggeredBy = trigger
	if err := h.Process(e); err != nil {
		t.Fatalf("Process: %v", err)
	}
	return e
}

// jobAllocs returns the job's allocations in the store, split into live
// (not terminal) and all, sorted by name.
func jobAllocs(t tb, h *Harness, job *structs.Job) (live, all []*structs.Allocation) {
	t.Helper()
	all, err := h.State.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatalf("AllocsByJob: %v", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, a := range all {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	return live, all
}

// names returns the allocations' names, sorted.
func names(allocs []*structs.Allocation) []string {
	out := make([]string, len(allocs))
	for i, a := range allocs {
		out[i] = a.Name
	}
	sort.Strings(out)
	return out
}

// lastEval returns the evaluation's final update or fails.
func lastEval(t tb, h *Harness) *structs.Evaluation {
	t.Helper()
	e := h.LastEval()
	if e == nil {
		t.Fatalf("no UpdateEval recorded")
	}
	return e
}

package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func testNodes(n int) nodeSlice {
	out := make(nodeSlice, n)
	for i := range out {
		node := mock.Node()
		node.ID = fmt.Sprintf("n%d", i)
		out[i] = &nodeInfo{node: node, idx: i}
	}
	return out
}

// drain returns the IDs a round yields, unlinking those reject picks.
func drain(src *sourceIterator, reject func(id string) bool) []string {
	var out []string
	src.Reset()
	for n := src.Next(); n != nil; n = src.Next() {
		out = append(out, n.node.ID)
		if reject != nil && reject(n.node.ID) {
			src.filter(n, "test", true)
		}
	}
	return out
}

func TestSourceIteratorRounds(t *testing.T) {
	var m placementMetrics
	m.init()
	src := newSourceIterator(&m, testNodes(5), dropFixed)

	// A round sees every node once; a partial round continues next time.
	src.Reset()
	var first []string
	for i := 0; i < 2; i++ {
		first = append(first, src.Next().node.ID)
	}
	if got := drain(src, nil); !slices.Equal(first, []string{"n0", "n1"}) || !slices.Equal(got, []string{"n2", "n3", "n4", "n0", "n1"}) {
		t.Fatalf("rotation: first %v then %v", first, got)
	}

	// Rejected nodes are gone for good, in any position.
	if got := drain(src, func(id string) bool { return id == "n2" || id == "n4" }); !slices.Equal(got, []string{"n2", "n3", "n4", "n0", "n1"}) {
		t.Fatalf("round with drops saw %v", got)
	}
	if got := drain(src, nil); !slices.Equal(got, []string{"n3", "n0", "n1"}) {
		t.Fatalf("after drops saw %v", got)
	}
	if got := drain(src, func(string) bool { return true }); len(got) != 3 {
		t.Fatalf("dropping all saw %v", got)
	}
	if got := drain(src, nil); len(got) != 0 {
		t.Fatalf("empty ring yielded %v", got)
	}
	src.Reset()
	if src.dropped.evaluated != 5 || src.dropped.constraint["test"] != 5 {
		t.Fatalf("dropped tally %d/%v, want 5", src.dropped.evaluated, src.dropped.constraint)
	}
}

func TestSourceIteratorWithoutDrop(t *testing.T) {
	var m placementMetrics
	m.init()
	src := newSourceIterator(&m, testNodes(3), dropNone)
	drain(src, func(string) bool { return true })
	if m.filtered != 3 {
		t.Fatalf("rejections not counted: %d", m.filtered)
	}
	m.reset()
	if got := drain(src, nil); len(got) != 3 {
		t.Fatalf("without drop a rejected node must come back: %v", got)
	}
	if m.filtered != 0 || m.evaluated != 3 {
		t.Fatalf("metrics of the last round: evaluated %d filtered %d", m.evaluated, m.filtered)
	}
}

// fixedRank yields the given scores.
type fixedRank struct {
	scores []float64
	i      int
}

func (f *fixedRank) Next() (rankedNode, bool) {
	if f.i >= len(f.scores) {
		return rankedNode{}, false
	}
	r := rankedNode{sum: f.scores[f.i], n: 1, node: &nodeInfo{idx: f.i}}
	f.i++
	return r, true
}
func (f *fixedRank) Reset() { f.i = 0 }

func TestLimitAndMaxScore(t *testing.T) {
	cases := []struct {
		name   string
		scores []float64
		limit  int
		want   int // index of the chosen node
	}{
		{"best of the first two", []float64{0.2, 0.5, 0.9}, 2, 1},
		{"all within limit", []float64{0.2, 0.5, 0.9}, 5, 2},
		{"negative scores skipped while better remain", []float64{-0.5, -0.2, 0.1, 0.3, 0.8}, 2, 3},
		{"skipped nodes used when nothing better", []float64{-0.5, -0.2}, 2, 1},
		{"at most maxSkip skipped", []float64{-0.9, -0.8, -0.7, -0.6, 0.1}, 1, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := &limitIterator{src: &fixedRank{scores: tc.scores}, limit: tc.limit, threshold: skipThreshold, maxSkip: maxSkip}
			top := &maxScoreIterator{src: lim}
			top.Reset()
			r, ok := top.Next()
			if !ok || r.node.idx != tc.want {
				t.Fatalf("chose %v (ok %v), want index %d", r.node, ok, tc.want)
			}
		})
	}
}

func TestFitScore(t *testing.T) {
	capacity := structs.ComparableResources{CPU: 4000, MemoryMB: 8000}
	ask := structs.ComparableResources{CPU: 500, MemoryMB: 1000}
	empty := fitScore(capacity, structs.ComparableResources{}, ask)
	half := fitScore(capacity, structs.ComparableResources{CPU: 2000, MemoryMB: 4000}, ask)
	full := fitScore(capacity, structs.ComparableResources{CPU: 3500, MemoryMB: 7000}, ask)
	if !(empty < half && half < full) || full != 1 || empty < 0 {
		t.Fatalf("best fit must rise with utilisation: %v %v %v", empty, half, full)
	}
}

func TestComputeNodeClass(t *testing.T) {
	a, b := mock.Node(), mock.Node()
	if a.Class() != b.Class() {
		t.Fatalf("nodes differing only in unique attributes and IDs got different classes")
	}
	b.Attributes["kernel.name"] = "windows"
	if a.Class() == b.Class() {
		t.Fatalf("different attributes, same class")
	}
	c := mock.Node()
	c.Drivers["raw_exec"].Healthy = false
	if a.Class() == c.Class() {
		t.Fatalf("different healthy drivers, same class")
	}
	c.ComputedClass = "stored"
	if c.Class() != "stored" {
		t.Fatalf("stored computed class ignored")
	}
}

func TestAnnotatePlan(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2)
	j := mock.Job()
	j.TaskGroups[0].Count = 3
	job := addJob(t, h, j)
	running(t, h, job, nodes, 2)
	job = updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Count = 4; j.Priority = 60 })
	e := mock.Eval(job)
	e.AnnotatePlan = true
	if err := h.Process(e); err != nil {
		t.Fatal(err)
	}
	got := h.Plans[0].Annotations.DesiredTGUpdates["web"]
	want := structs.DesiredUpdates{Place: 2, InPlaceUpdate: 2}
	if got == nil || *got != want {
		t.Fatalf("annotations %+v, want %+v", got, want)
	}
}

// TestAnnotatePlanCountsFailedPlacements: a dry run whose placements all
// fail still hands in its (empty) plan, so the annotations count what the
// job wants placed (job plan's exit code 1 and "(1 create)", as Nomad's).
func TestAnnotatePlanCountsFailedPlacements(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 1)
	j := mock.Job()
	j.TaskGroups[0].Count = 1
	j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 1 << 30
	job := addJob(t, h, j)
	e := mock.Eval(job)
	e.AnnotatePlan = true
	if err := h.Process(e); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 1 || h.Plans[0].Annotations == nil {
		t.Fatalf("plans %+v, want one annotated plan", h.Plans)
	}
	got := h.Plans[0].Annotations.DesiredTGUpdates["web"]
	if got == nil || got.Place != 1 || len(h.Plans[0].NodeAllocation) != 0 {
		t.Fatalf("annotations %+v, allocations %v", got, h.Plans[0].NodeAllocation)
	}
	// Without AnnotatePlan nothing is submitted.
	h2 := testHarness(t)
	mockNodes(t, h2, 1)
	job2 := addJob(t, h2, j)
	if err := h2.Process(mock.Eval(job2)); err != nil || len(h2.Plans) != 0 {
		t.Fatalf("plans %d, err %v", len(h2.Plans), err)
	}
}

package coregc

import (
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkFind measures one collection's decision over 100 running
// service jobs with 100 evaluations each (10,000 evaluations, each with a
// stopped allocation; half of them older than the threshold) and 1,000
// nodes.
func BenchmarkFind(b *testing.B) {
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	var index uint64
	next := func() uint64 { index++; return index }
	nodes := make([]*structs.Node, 1000)
	for i := range nodes {
		nodes[i] = mock.Node()
		if err := st.UpsertNode(next(), nodes[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	for j := 0; j < 100; j++ {
		job := mock.Job()
		if err := st.UpsertJob(next(), job, nil); err != nil {
			b.Fatal(err)
		}
		var evals []*structs.Evaluation
		var allocs []*structs.Allocation
		for i := 0; i < 100; i++ {
			e := mock.EvalFor(job)
			e.Status = structs.EvalStatusComplete
			e.ModifyTime = ago(time.Duration(i%2) * 2 * time.Hour)
			evals = append(evals, e)
			a := mock.Alloc(job, nodes[(j*100+i)%len(nodes)])
			a.EvalID = e.ID
			a.DesiredStatus = structs.AllocDesiredStatusStop
			a.ClientStatus = structs.AllocClientStatusComplete
			a.ModifyTime = e.ModifyTime
			allocs = append(allocs, a)
		}
		live := mock.Alloc(job, nodes[j])
		live.ClientStatus = structs.AllocClientStatusRunning
		allocs = append(allocs, live)
		if err := st.UpsertEvals(next(), evals); err != nil {
			b.Fatal(err)
		}
		if err := st.UpsertAllocs(next(), allocs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := Find(st, t0, DefaultThresholds())
		if err != nil || len(g.Evals) != 5000 || len(g.Allocs) != 5000 {
			b.Fatalf("found %d evals, %d allocs: %v", len(g.Evals), len(g.Allocs), err)
		}
	}
}

package drainer

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkPlan measures one drainer pass over a cluster of 5,000 nodes
// running 50 service jobs of count 100 (5,000 running allocations), with
// 10 nodes draining: the pass the leader makes after each change of the
// state it watches.
func BenchmarkPlan(b *testing.B) {
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	var index uint64
	next := func() uint64 { index++; return index }
	nodes := make([]*structs.Node, 5000)
	for i := range nodes {
		nodes[i] = mock.Node()
		if err := st.UpsertNode(next(), nodes[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	for j := 0; j < 50; j++ {
		job := mock.Job()
		job.TaskGroups[0].Count = 100
		if err := st.UpsertJob(next(), job, nil); err != nil {
			b.Fatal(err)
		}
		allocs := make([]*structs.Allocation, 100)
		for i := range allocs {
			a := mock.Alloc(job, nodes[(j*100+i)%len(nodes)])
			a.Name = fmt.Sprintf("%s.web[%d]", job.ID, i)
			a.ClientStatus = structs.AllocClientStatusRunning
			allocs[i] = a
		}
		if err := st.UpsertAllocs(next(), allocs); err != nil {
			b.Fatal(err)
		}
	}
	started := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		req := &structs.NodeUpdateDrainRequest{NodeID: nodes[i*500].ID,
			DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour, StartedAt: started}}
		if err := st.UpdateNodeDrain(next(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := Plan(st, nil, started.Add(time.Minute))
		if err != nil || len(p.Migrate) != 10 {
			b.Fatalf("pass %v, %v", p, err)
		}
	}
}

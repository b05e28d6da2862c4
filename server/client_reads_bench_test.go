package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkClientReads measures one answered pass of each of a client's
// two reads, as agent/sim issues them (stale, MinQueryIndex just below
// the answer, so each call runs one blocking-query pass and answers): the
// watch (Node.GetClientAllocs) and the fetch of a node's allocations
// (Alloc.GetAllocs of its 20 IDs). The store holds 500 nodes with 20
// allocations each; each op reads the next node.
//
//	go test -run '^$' -bench BenchmarkClientReads -benchmem ./server
func BenchmarkClientReads(b *testing.B) {
	const (
		numNodes = 500
		perNode  = 20
	)
	s, err := NewServer(&Config{
		Name: "client-reads", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond, NumSchedulers: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for !s.IsLeader() || !s.leaderEstablished.Load() {
		if time.Now().After(deadline) {
			b.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := s.State()
	index := uint64(1_000_000)
	job := mock.Job()
	index++
	if err := st.UpsertJob(index, job, nil); err != nil {
		b.Fatal(err)
	}
	if job, err = st.JobByID(nil, job.Namespace, job.ID); err != nil {
		b.Fatal(err)
	}
	nodes := make([]*structs.Node, numNodes)
	ids := make([][]string, numNodes)
	var allocs []*structs.Allocation
	for i := range nodes {
		nodes[i] = mock.Node()
		index++
		if err := st.UpsertNode(index, nodes[i], nil); err != nil {
			b.Fatal(err)
		}
		for range perNode {
			a := mock.Alloc(job, nodes[i])
			allocs = append(allocs, a)
			ids[i] = append(ids[i], a.ID)
		}
	}
	index++
	if err := st.UpsertAllocs(index, allocs); err != nil {
		b.Fatal(err)
	}
	opts := structs.QueryOptions{MinQueryIndex: index - 1, MaxQueryTime: time.Minute, AllowStale: true}

	b.Run("GetClientAllocs", func(b *testing.B) {
		ep := &Node{srv: s}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			n := nodes[i%numNodes]
			i++
			args := &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID, QueryOptions: opts}
			var reply structs.NodeClientAllocsResponse
			if err := ep.GetClientAllocs(args, &reply); err != nil {
				b.Fatal(err)
			}
			if len(reply.Allocs) != perNode || reply.Index != index {
				b.Fatal(fmt.Sprintf("got %d allocations at %d", len(reply.Allocs), reply.Index))
			}
		}
	})
	b.Run("GetAllocs", func(b *testing.B) {
		ep := &Alloc{srv: s}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			args := &structs.AllocsGetRequest{AllocIDs: ids[i%numNodes], QueryOptions: opts}
			i++
			var reply structs.AllocsGetResponse
			if err := ep.GetAllocs(args, &reply); err != nil {
				b.Fatal(err)
			}
			if len(reply.Allocs) != perNode {
				b.Fatal(fmt.Sprintf("got %d allocations", len(reply.Allocs)))
			}
		}
	})
}

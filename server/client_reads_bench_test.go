package server

import (
	"fmt"
	"testing"
	"time"

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
	s, nodes, allocs := benchNodeAllocs(b, "client-reads", numNodes, perNode)
	index, err := s.State().LatestIndex()
	if err != nil {
		b.Fatal(err)
	}
	ids := make([][]string, numNodes)
	for i, a := range allocs {
		ids[i/perNode] = append(ids[i/perNode], a.ID)
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

package server

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkClientAllocsWakeup: a single server whose state holds 2,000
// nodes with 20 allocations each (c1m-small ends with 20); every node has a client blocked in
// Node.GetClientAllocs (stale, as agent/sim's follow-up queries are), which
// re-issues its query at the answer's index. One op updates one allocation
// on each of 100 nodes (one state transaction, written straight to the
// store) and waits for those 100 watches to answer. The watchers=0 case
// is the same writes with nobody watching: the difference is the cost of
// 100 wakeups (wake, re-run, build the answer, block again). cpu-ns/op is
// the process's CPU time (both cores) per op, steadier than ns/op on a
// shared machine.
//
//	go test -run '^$' -bench BenchmarkClientAllocsWakeup ./server
func BenchmarkClientAllocsWakeup(b *testing.B) {
	const (
		numNodes  = 2000
		perNode   = 20
		wakePerOp = 100
	)
	s, nodes, initial := benchNodeAllocs(b, "wakeup", numNodes, perNode)
	st := s.State()
	index, err := st.LatestIndex()
	if err != nil {
		b.Fatal(err)
	}

	for _, watchers := range []int{0, numNodes} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			answered := make(chan struct{}, numNodes)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			ep := &Node{srv: s}
			for i := range watchers {
				wg.Add(1)
				go func(node *structs.Node, minIndex uint64) {
					defer wg.Done()
					for {
						args := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID,
							QueryOptions: structs.QueryOptions{MinQueryIndex: minIndex, MaxQueryTime: time.Minute, AllowStale: true}}
						var reply structs.NodeClientAllocsResponse
						if err := ep.GetClientAllocs(args, &reply); err != nil {
							return
						}
						select {
						case <-stop:
							return
						default:
						}
						if reply.Index > minIndex {
							answered <- struct{}{}
						}
						minIndex = reply.Index
					}
				}(nodes[i], index)
			}
			next := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpuStart := processCPU()
			for range b.N {
				batch := make([]*structs.Allocation, wakePerOp)
				for k := range batch {
					a := *initial[(next%numNodes)*perNode+next/numNodes] // each node in turn
					batch[k] = &a
					next = (next + 1) % (numNodes * perNode)
				}
				index++
				if err := st.UpsertAllocs(index, batch); err != nil {
					b.Fatal(err)
				}
				if watchers == 0 {
					continue
				}
				timeout := time.NewTimer(10 * time.Second)
				for range wakePerOp {
					select {
					case <-answered:
					case <-timeout.C:
						b.Fatal("watches did not answer")
					}
				}
				timeout.Stop()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpuStart)/float64(b.N), "cpu-ns/op")
			close(stop)
			// Wake every watcher once so it sees stop.
			wake := make([]*structs.Allocation, 0, watchers)
			for i := range watchers {
				a := *initial[i*perNode]
				wake = append(wake, &a)
			}
			index++
			if err := st.UpsertAllocs(index, wake); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
		})
	}
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchNodeAllocs starts a one-server cluster without workers and writes
// straight to its store, far above any Raft index, numNodes nodes with
// perNode allocations of one job each. It returns the nodes and the
// allocations, perNode per node in node order; the server shuts down when
// the benchmark ends.
func benchNodeAllocs(b *testing.B, name string, numNodes, perNode int) (*Server, []*structs.Node, []*structs.Allocation) {
	b.Helper()
	s, err := NewServer(&Config{
		Name: name, BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond, NumSchedulers: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown() })
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
	var allocs []*structs.Allocation
	for i := range nodes {
		nodes[i] = mock.Node()
		index++
		if err := st.UpsertNode(index, nodes[i], nil); err != nil {
			b.Fatal(err)
		}
		for range perNode {
			allocs = append(allocs, mock.Alloc(job, nodes[i]))
		}
	}
	index++
	if err := st.UpsertAllocs(index, allocs); err != nil {
		b.Fatal(err)
	}
	return s, nodes, allocs
}

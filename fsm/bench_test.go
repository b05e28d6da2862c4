package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkSnapshotRestore100kJobs persists 100,000 realistic jobs (with
// their summaries and evaluations) to a buffer and restores them into an
// FSM that already holds a state of the same size, as a follower does:
// one iteration is one Persist + Restore pair. A warm-up pair runs before
// the timer so that even -benchtime 1x measures the steady state, and
// every pair starts from a collected heap (see the loop).
func BenchmarkSnapshotRestore100kJobs(b *testing.B) {
	src, _ := testFSM(b)
	store := src.State()
	for i := 0; i < 100000; i++ {
		job := mock.Job()
		must(b, store.UpsertJob(uint64(i+1), job, mock.EvalFor(job)))
	}
	dst, _ := testFSM(b)
	sink := &bufferSink{}
	var persistTime, restoreTime, persistCPU, restoreCPU time.Duration
	var gcs uint32
	pair := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc0 := ms.NumGC
		t0, c0 := time.Now(), processCPU()
		snap, err := src.Snapshot()
		must(b, err)
		sink.Reset() // reuse the buffer: a file sink does not grow memory
		must(b, snap.Persist(sink))
		t1, c1 := time.Now(), processCPU()
		must(b, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
		persistTime += t1.Sub(t0)
		restoreTime += time.Since(t1)
		persistCPU += c1 - c0
		restoreCPU += processCPU() - c1
		runtime.ReadMemStats(&ms)
		gcs += ms.NumGC - gc0
	}
	pair()
	persistTime, restoreTime, persistCPU, restoreCPU, gcs = 0, 0, 0, 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Start every pair from a collected heap, as on a server, where
		// snapshots are minutes apart: otherwise the pair pays for the
		// collection of the stores the previous pair replaced (seconds of
		// CPU with several 100,000-job stores live), or not, by luck.
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		pair()
	}
	n := float64(b.N)
	b.ReportMetric(float64(sink.Len())/(1<<20), "MB/snapshot")
	b.ReportMetric(persistTime.Seconds()/n, "persist-s/op")
	b.ReportMetric(restoreTime.Seconds()/n, "restore-s/op")
	// CPU seconds (all cores, GC included): steadier than wall time on a
	// shared machine.
	b.ReportMetric(persistCPU.Seconds()/n, "persist-cpu-s/op")
	b.ReportMetric(restoreCPU.Seconds()/n, "restore-cpu-s/op")
	// Garbage collections that ran during the pairs: with two stores
	// live, each one costs seconds of CPU, and whether one lands inside
	// a timed pair explains most of the spread between runs.
	b.ReportMetric(float64(gcs)/n, "gc/op")
}

// BenchmarkApplyPlanResults5000 applies one Raft entry carrying a plan with
// 5,000 new allocations for one job (decode + state write), on a cluster of
// 1,000 nodes that already runs 5,000 allocations of other jobs.
func BenchmarkApplyPlanResults5000(b *testing.B) {
	f, _ := testFSM(b)
	store := f.State()
	nodes, index := benchNodes(b, store, 1000)
	for i := 0; i < 10; i++ {
		other := mock.Job()
		index++
		must(b, store.UpsertJob(index, other, nil))
		stored, err := store.JobByID(nil, other.Namespace, other.ID)
		must(b, err)
		index++
		must(b, store.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{Job: stored, AllocsUpdated: newAllocs(stored, nodes, 500)}))
	}
	entries := make([][]byte, b.N)
	for i := range entries {
		job := mock.Job()
		job.TaskGroups[0].Count = 5000
		index++
		must(b, store.UpsertJob(index, job, nil))
		stored, err := store.JobByID(nil, job.Namespace, job.ID)
		must(b, err)
		req := &structs.ApplyPlanResultsRequest{Job: stored, AllocsUpdated: newAllocs(stored, nodes, 5000), UpdatedAt: 1}
		req.Compact() // as the leader writes it
		buf, err := structs.Encode(structs.ApplyPlanResultsRequestType, req)
		must(b, err)
		entries[i] = buf
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range entries {
		index++
		if res := f.Apply(&raft.Log{Index: index, Data: entries[i]}); res != nil {
			b.Fatal(res)
		}
	}
}

// benchNodes registers n mock nodes at indexes 2..n+1 and returns them
// with the last index used.
func benchNodes(b *testing.B, store *state.StateStore, n int) ([]*structs.Node, uint64) {
	nodes := make([]*structs.Node, n)
	index := uint64(1)
	for i := range nodes {
		nodes[i] = mock.Node()
		index++
		must(b, store.UpsertNode(index, nodes[i], nil))
	}
	return nodes, index
}

func newAllocs(job *structs.Job, nodes []*structs.Node, n int) []*structs.Allocation {
	out := make([]*structs.Allocation, n)
	evalID := structs.GenerateUUID()
	for i := range out {
		a := mock.Alloc(job, nodes[i%len(nodes)])
		a.Job = nil
		a.EvalID = evalID
		out[i] = a
	}
	return out
}

// registerEntries encodes n job registrations as the Job.Register endpoint
// does: a canonicalized job plus its pending evaluation in one entry.
func registerEntries(b *testing.B, n int) [][]byte {
	tmpl := mock.Job()
	out := make([][]byte, n)
	now := time.Unix(1700000000, 0)
	for i := range out {
		job := tmpl.Copy()
		job.ID = structs.GenerateUUID()
		job.Name = job.ID
		job.SubmitTime = now.UnixNano()
		buf, err := structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{
			Job: job, Eval: structs.NewEval(job, structs.EvalTriggerJobRegister, now)})
		must(b, err)
		out[i] = buf
	}
	return out
}

// BenchmarkApplyJobRegister applies job registrations (decode + state
// write + hooks) to an FSM that already holds 5,000 jobs: the FSM's share
// of BenchmarkJobRegister in the server package. batch=1 applies one entry
// per Apply; batch=N hands N entries at a time to ApplyBatch, as Raft does
// under load.
func BenchmarkApplyJobRegister(b *testing.B) {
	for _, size := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			f, _ := testFSM(b)
			index := uint64(0)
			logs := func(entries [][]byte) []*raft.Log {
				out := make([]*raft.Log, len(entries))
				for i, buf := range entries {
					index++
					out[i] = &raft.Log{Index: index, Type: raft.LogCommand, Data: buf}
				}
				return out
			}
			apply := func(logs []*raft.Log) {
				for len(logs) > 0 {
					n := min(size, len(logs))
					for _, res := range f.ApplyBatch(logs[:n]) {
						if res != nil {
							b.Fatal(res)
						}
					}
					logs = logs[n:]
				}
			}
			apply(logs(registerEntries(b, 5000)))
			entries := logs(registerEntries(b, b.N))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			apply(entries)
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchPlacedAllocs returns an FSM holding 10,000 allocations of one job
// over 1,000 nodes, the allocations and the last index written.
func benchPlacedAllocs(b *testing.B) (*FSM, []*structs.Allocation, uint64) {
	f, _ := testFSM(b)
	store := f.State()
	nodes, index := benchNodes(b, store, 1000)
	job := mock.Job()
	index++
	must(b, store.UpsertJob(index, job, nil))
	stored, err := store.JobByID(nil, job.Namespace, job.ID)
	must(b, err)
	allocs := newAllocs(stored, nodes, 10000)
	index++
	must(b, store.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{Job: stored, AllocsUpdated: allocs}))
	return f, allocs, index
}

// BenchmarkApplyAllocClientUpdate applies one client-update entry of 1,000
// allocations turning running (the shape the client and the simulator
// send: ID, status, task states, modify time) to an FSM holding 10,000
// allocations over 1,000 nodes.
func BenchmarkApplyAllocClientUpdate(b *testing.B) {
	f, allocs, index := benchPlacedAllocs(b)
	entries := make([][]byte, b.N)
	for i := range entries {
		upd := make([]*structs.Allocation, 1000)
		for j := range upd {
			a := allocs[(i*1000+j)%len(allocs)]
			upd[j] = &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning, ModifyTime: int64(i + 1),
				TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning,
					Events: []*structs.TaskEvent{{Type: structs.TaskReceived, Time: 1}, {Type: structs.TaskStarted, Time: 2}}}})}
		}
		buf, err := structs.Encode(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: upd})
		must(b, err)
		entries[i] = buf
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range entries {
		index++
		if res := f.Apply(&raft.Log{Index: index, Data: entries[i]}); res != nil {
			b.Fatal(res)
		}
	}
}

// BenchmarkApplyC1MShape applies, per op, the entries one c1m-small job
// costs every server: its registration (job + evaluation), its plan (100
// new allocations on 100 random nodes out of 5,000, grouped as the leader
// writes it) and the client updates turning those 100 allocations running
// (ten entries of ten, as clients batch them). The store starts with 500
// such jobs (50,000 allocations). Reported per placement.
func BenchmarkApplyC1MShape(b *testing.B) {
	f, _ := testFSM(b)
	store := f.State()
	nodes, index := benchNodes(b, store, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	type jobEntries struct {
		register, plan []byte
		updates        [][]byte
	}
	build := func() jobEntries {
		job := mock.Job()
		job.TaskGroups[0].Count = 100
		eval := mock.EvalFor(job)
		reg, err := structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: eval})
		must(b, err)
		allocs := make([]*structs.Allocation, 100)
		for i := range allocs {
			a := mock.Alloc(job, nodes[rng.IntN(len(nodes))])
			a.Job = nil
			a.EvalID = eval.ID
			allocs[i] = a
		}
		req := &structs.ApplyPlanResultsRequest{AllocsUpdated: allocs, EvalID: eval.ID, UpdatedAt: 1}
		req.Compact()
		plan, err := structs.Encode(structs.ApplyPlanResultsRequestType, req)
		must(b, err)
		var updates [][]byte
		for i := 0; i < len(allocs); i += 10 {
			upd := make([]*structs.Allocation, 10)
			for j := range upd {
				a := allocs[i+j]
				upd[j] = &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning, ModifyTime: 2,
					TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning,
						Events: []*structs.TaskEvent{{Type: structs.TaskReceived, Time: 1}, {Type: structs.TaskStarted, Time: 2}}}})}
			}
			buf, err := structs.Encode(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: upd})
			must(b, err)
			updates = append(updates, buf)
		}
		return jobEntries{reg, plan, updates}
	}
	apply := func(e jobEntries) {
		for _, buf := range append([][]byte{e.register, e.plan}, e.updates...) {
			index++
			if res := f.Apply(&raft.Log{Index: index, Data: buf}); res != nil {
				b.Fatal(res)
			}
		}
	}
	for i := 0; i < 500; i++ {
		apply(build())
	}
	entries := make([]jobEntries, b.N)
	for i := range entries {
		entries[i] = build()
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for _, e := range entries {
		apply(e)
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*100), "cpu-ns/placement")
}

// BenchmarkApplyServiceRegistrations applies one registration entry of
// 1,000 native services (one per allocation, as clients register them
// when their tasks run) to an FSM holding 10,000 running allocations over
// 1,000 nodes: the FSM's share of a service per group at scale.
func BenchmarkApplyServiceRegistrations(b *testing.B) {
	f, allocs, index := benchPlacedAllocs(b)
	entries := make([][]byte, b.N)
	for i := range entries {
		regs := make([]*structs.ServiceRegistration, 1000)
		for j := range regs {
			a := allocs[(i*1000+j)%len(allocs)]
			regs[j] = &structs.ServiceRegistration{
				ID:          structs.ServiceRegistrationID(a.ID, "", a.TaskGroup, fmt.Sprintf("svc-%d", i), ""),
				ServiceName: fmt.Sprintf("svc-%d", i), Namespace: a.Namespace, NodeID: a.NodeID, Datacenter: "dc1",
				JobID: a.JobID, AllocID: a.ID, Address: "127.0.0.1", Port: 20000 + j,
			}
		}
		buf, err := structs.Encode(structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: regs})
		must(b, err)
		entries[i] = buf
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range entries {
		index++
		if res := f.Apply(&raft.Log{Index: index, Data: entries[i]}); res != nil {
			b.Fatal(res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/registration")
}

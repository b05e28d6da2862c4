package sim

import (
	"bytes"
	"fmt"
	"net/rpc"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/internal/msgpackread"
	"github.com/drover-project/drover/structs"
)

// encodeAll encodes values one after another with the RPC handle.
func encodeAll(t testing.TB, values ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encode %T: %v", v, err)
		}
	}
	return buf.Bytes()
}

// encodedClientAllocs is a Node.GetClientAllocs answer as the servers
// encode it, read back as the watch reads it.
func encodedClientAllocs(t testing.TB, index uint64, allocs map[string]uint64) *clientAllocs {
	t.Helper()
	b := encodeAll(t, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(allocs),
		QueryMeta: structs.QueryMeta{Index: index, LastContact: time.Second, KnownLeader: true}})
	c, err := readClientAllocs(b)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestReadClientAllocs(t *testing.T) {
	many := map[string]uint64{}
	for i := range 70000 {
		many[structs.GenerateUUID()] = uint64(i) << (i % 40)
	}
	cases := []struct {
		name   string
		index  uint64
		allocs map[string]uint64
	}{
		{"nil map", 7, nil},
		{"empty map", 1 << 40, map[string]uint64{}},
		{"a few", 300, map[string]uint64{"a": 1, "b": 200, "c": 70000, "d": 1 << 33}},
		{"map16 and map32", 1<<64 - 1, many},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := encodedClientAllocs(t, tc.index, tc.allocs)
			if c.index != tc.index || c.count != len(tc.allocs) {
				t.Fatalf("index %d count %d, want %d and %d", c.index, c.count, tc.index, len(tc.allocs))
			}
			got := map[string]uint64{}
			it := c.iter()
			for it.next() {
				got[string(it.id)] = it.index
			}
			if it.err() != nil || len(got) != len(tc.allocs) {
				t.Fatalf("read %d entries of %d: %v", len(got), len(tc.allocs), it.err())
			}
			for id, idx := range tc.allocs {
				if got[id] != idx {
					t.Fatalf("%s: %d, want %d", id, got[id], idx)
				}
			}
		})
	}
}

// TestReadClientAllocsWithoutCopies: reading an answer and walking it
// allocates nothing (the diff copies only the IDs it pulls).
func TestReadClientAllocsWithoutCopies(t *testing.T) {
	allocs := map[string]uint64{}
	for i := range 20 {
		allocs[structs.GenerateUUID()] = uint64(1000 + i)
	}
	b := encodeAll(t, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(allocs), QueryMeta: structs.QueryMeta{Index: 1020}})
	sum := uint64(0)
	n := testing.AllocsPerRun(100, func() {
		c, err := readClientAllocs(b)
		if err != nil {
			t.Fatal(err)
		}
		for it := c.iter(); it.next(); {
			sum += it.index
		}
	})
	if n != 0 || sum == 0 {
		t.Fatalf("%v allocations per read (sum %d)", n, sum)
	}
}

func TestReadClientAllocsRejectsBadAnswers(t *testing.T) {
	good := encodeAll(t, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(map[string]uint64{"a": 1}), QueryMeta: structs.QueryMeta{Index: 3}})
	cases := map[string][]byte{
		"truncated":         good[:len(good)-3],
		"not a map":         encodeAll(t, []string{"Allocs"}),
		"allocs not a map":  encodeAll(t, map[string]any{"Allocs": []int{1}, "Index": 2}),
		"negative index":    encodeAll(t, map[string]any{"Index": -2}),
		"index as a string": encodeAll(t, map[string]any{"Index": "2"}),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if c, err := readClientAllocs(b); err == nil {
				t.Fatalf("read %+v from a bad answer", c)
			}
		})
	}
	t.Run("an entry of the wrong type", func(t *testing.T) {
		c, err := readClientAllocs(encodeAll(t, map[string]any{"Allocs": map[string]any{"a": "x"}, "Index": 2}))
		if err != nil {
			t.Fatal(err)
		}
		it := c.iter()
		if it.next() || it.err() == nil {
			t.Fatalf("read an entry %q -> %d", it.id, it.index)
		}
	})
}

// wireTestAlloc is an allocation as the servers return it: every field a
// real answer carries, so that reading must skip each kind of value.
func wireTestAlloc(i int, job *structs.Job) *structs.Allocation {
	now := time.Unix(1700000000, int64(i))
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, EvalID: structs.GenerateUUID(),
		Name: fmt.Sprintf("%s.g[%d]", job.ID, i), NodeID: "node-1", NodeName: "n1", JobID: job.ID, Job: job,
		TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}}},
		Metrics: &structs.AllocMetric{NodesEvaluated: 5000, NodesAvailable: map[string]int{"dc1": 5000},
			Scores: map[string]float64{"node-1.binpack": 0.75}, AllocationTime: time.Millisecond},
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"t": {State: structs.TaskStatePending, StartedAt: now,
			Events: []*structs.TaskEvent{{Type: structs.TaskReceived, Time: now.UnixNano()}}}}),
		CreateIndex: uint64(100 + i), ModifyIndex: uint64(200 + i), AllocModifyIndex: uint64(150 + i),
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}

func TestReadAllocs(t *testing.T) {
	job := batchJob("j", 3, map[string]any{"run_for": "2s", "exit_code": 3})
	job.Canonicalize()
	job.Namespace, job.JobModifyIndex, job.Meta = structs.DefaultNamespace, 1<<35, map[string]string{"k": strings.Repeat("v", 300)}
	stopped := wireTestAlloc(1, job)
	stopped.DesiredStatus, stopped.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusLost
	noJob := wireTestAlloc(2, job)
	noJob.Job = nil
	// Another version of the job, between two allocations of the first:
	// read whole, not taken for the one before.
	job2 := job.Copy()
	job2.JobModifyIndex++
	in := []*structs.Allocation{wireTestAlloc(0, job), stopped, wireTestAlloc(3, job2), noJob, wireTestAlloc(4, job)}
	body := encodeAll(t, &structs.AllocsGetResponse{Allocs: in, QueryMeta: structs.QueryMeta{Index: 9}})

	got, err := readAllocs(body)
	if err != nil || len(got) != len(in) {
		t.Fatalf("read %d allocations of %d: %v", len(got), len(in), err)
	}
	for i, want := range in {
		a := &got[i]
		if string(a.id) != want.ID || string(a.namespace) != want.Namespace || string(a.nodeID) != want.NodeID ||
			string(a.jobID) != want.JobID || string(a.taskGroup) != want.TaskGroup ||
			string(a.desiredStatus) != want.DesiredStatus || string(a.clientStatus) != want.ClientStatus ||
			a.allocModifyIndex != want.AllocModifyIndex {
			t.Fatalf("allocation %d read as %+v", i, a)
		}
		if a.serverTerminal() != want.ServerTerminalStatus() || a.clientTerminal() != want.ClientTerminalStatus() {
			t.Fatalf("allocation %d: terminal %v/%v, want %v/%v", i, a.serverTerminal(), a.clientTerminal(),
				want.ServerTerminalStatus(), want.ClientTerminalStatus())
		}
		if (a.job == nil) != (want.Job == nil) || (want.Job != nil && a.jobModifyIndex != want.Job.JobModifyIndex) {
			t.Fatalf("allocation %d: job %d bytes at modify index %d", i, len(a.job), a.jobModifyIndex)
		}
	}

	t.Run("the group is decoded from the job once", func(t *testing.T) {
		c := newGroupCache()
		g, err := c.lookup(&got[0], time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !g.batch || fmt.Sprint(g.tasks) != "[t]" || g.runFor != 2*time.Second || g.exitCode != 3 {
			t.Fatalf("group %+v", g)
		}
		if g2, err := c.lookup(&got[1], time.Minute); err != nil || g2 != g {
			t.Fatalf("second allocation of the job version: %p %v, want the cached %p", g2, err, g)
		}
		if g3, err := c.lookup(&got[2], time.Minute); err != nil || g3 == g || g3.runFor != g.runFor {
			t.Fatalf("allocation of another job version: %+v %v", g3, err)
		}
		if _, err := c.lookup(&got[3], time.Minute); err != errNoJob {
			t.Fatalf("allocation without a job: %v", err)
		}
	})

	t.Run("truncated", func(t *testing.T) {
		for _, n := range []int{1, len(body) / 3, len(body) - 1} {
			if _, err := readAllocs(body[:n]); err == nil {
				t.Fatalf("read %d of %d bytes without an error", n, len(body))
			}
		}
	})
}

// TestRawReplyThroughACodec: a transport that decodes with the codec (as
// server/pool does, from a stream) fills a rawReply with a copy of the body.
func TestRawReplyThroughACodec(t *testing.T) {
	want := encodeAll(t, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(map[string]uint64{"a": 4}), QueryMeta: structs.QueryMeta{Index: 5}})
	stream := append(bytes.Clone(want), 0x01) // the next message follows
	var r rawReply
	if err := codec.NewDecoder(bytes.NewReader(stream), structs.MsgpackHandle).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.body, want) {
		t.Fatalf("body %x, want %x", r.body, want)
	}
	c, err := readClientAllocs(r.body)
	if err != nil || c.index != 5 || c.count != 1 {
		t.Fatalf("read %+v, %v", c, err)
	}
	var again structs.NodeClientAllocsResponse
	if err := structs.Decode(encodeAll(t, &r), &again); err != nil || again.Index != 5 || !hasIndex(again.Allocs, "a", 4) {
		t.Fatalf("encoded again, read back as %+v (%v)", again, err)
	}
}

// benchDecode is the baseline of the read benchmarks: body decoded into a
// T with the generated codec.
func benchDecode[T any](body []byte) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var resp T
			if err := structs.Decode(body, &resp); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// allocsAnswer20 is an encoded Alloc.GetAllocs answer of 20 allocations
// of one job.
func allocsAnswer20(b *testing.B) []byte {
	job := batchJob("j", 20, map[string]any{"run_for": "1h"})
	job.Canonicalize()
	var in []*structs.Allocation
	for i := range 20 {
		in = append(in, wireTestAlloc(i, job))
	}
	return encodeAll(b, &structs.AllocsGetResponse{Allocs: in, QueryMeta: structs.QueryMeta{Index: 9}})
}

// BenchmarkReadAllocs compares decoding an Alloc.GetAllocs answer of 20
// allocations into structs with reading what a simulated node needs.
func BenchmarkReadAllocs(b *testing.B) {
	body := allocsAnswer20(b)
	b.Run("codec", benchDecode[structs.AllocsGetResponse](body))
	b.Run("msgReader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := readAllocs(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadClientAllocs does the same for a watch answer of 20
// allocations.
func BenchmarkReadClientAllocs(b *testing.B) {
	allocs := map[string]uint64{}
	for i := range 20 {
		allocs[structs.GenerateUUID()] = uint64(1000 + i)
	}
	body := encodeAll(b, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(allocs), QueryMeta: structs.QueryMeta{Index: 1020}})
	b.Run("codec", benchDecode[structs.NodeClientAllocsResponse](body))
	b.Run("msgReader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := readClientAllocs(body)
			if err != nil {
				b.Fatal(err)
			}
			for it := c.iter(); it.next(); {
			}
		}
	})
}

// TestRequestHeaderAsTheCodecWritesIt: the hand-written rpc.Request
// header is byte for byte what the servers' codec writes.
func TestRequestHeaderAsTheCodecWritesIt(t *testing.T) {
	methods := []string{"Node.GetClientAllocs", "", strings.Repeat("m", 31), strings.Repeat("m", 32), strings.Repeat("m", 256), strings.Repeat("m", 70000)}
	seqs := []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1}
	for _, m := range methods {
		for _, seq := range seqs {
			e := &requestEncoder{}
			e.enc = codec.NewEncoderBytes(&e.body, structs.MsgpackHandle)
			args := &structs.GenericRequest{}
			if err := e.encode(m, seq, args, nil); err != nil {
				t.Fatal(err)
			}
			want := encodeAll(t, &rpc.Request{ServiceMethod: m, Seq: seq}, args)
			if got := e.buf[yamuxHeaderSize:]; !bytes.Equal(got, want) {
				t.Fatalf("method of %d bytes, seq %d: %x, want %x", len(m), seq, got, want)
			}
		}
	}
}

// BenchmarkScanAllocs is the reader's walk to the end of an
// Alloc.GetAllocs answer of 20 allocations.
func BenchmarkScanAllocs(b *testing.B) {
	body := allocsAnswer20(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var s msgpackread.Scanner
		s.Reset(1)
		if done, err := s.Scan(body); !done || err != nil {
			b.Fatal(done, err)
		}
	}
}

// TestApplyFetchedAllocations: a node starts the allocations placed on it
// that are not terminal and remembers every one it was sent, whatever the
// order of the IDs it asked for.
func TestApplyFetchedAllocations(t *testing.T) {
	clk := clock.NewManual(time.Unix(1700000000, 0))
	s, err := New(&Config{Servers: []string{"x"}, Nodes: 1, Transports: []Transport{nopTransport{}}, ReportDelay: time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	n := s.nodes[0]
	job := batchJob("j", 3, map[string]any{"run_for": "1h"})
	run, stopped, elsewhere := wireTestAlloc(0, job), wireTestAlloc(1, job), wireTestAlloc(2, job)
	for _, a := range []*structs.Allocation{run, stopped} {
		a.NodeID = n.node.ID
	}
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	read := func(in ...*structs.Allocation) []wireAlloc {
		allocs, err := readAllocs(encodeAll(t, &structs.AllocsGetResponse{Allocs: in}))
		if err != nil {
			t.Fatal(err)
		}
		return allocs
	}
	for _, ids := range [][]string{{run.ID, stopped.ID, elsewhere.ID}, {elsewhere.ID, run.ID}, nil} {
		n.apply(read(run, stopped, elsewhere), ids)
		if len(n.known) != 3 || n.known[run.ID] != run.AllocModifyIndex || n.known[stopped.ID] != stopped.AllocModifyIndex ||
			n.known[elsewhere.ID] != elsewhere.AllocModifyIndex {
			t.Fatalf("ids %v: known %v", ids, n.known)
		}
		if len(n.allocs) != 1 || n.allocs[run.ID] == nil || n.allocs[run.ID].state != allocPending || s.Stats().AllocsPending != 1 {
			t.Fatalf("ids %v: allocations %v, %d pending", ids, n.allocs, s.Stats().AllocsPending)
		}
	}
	// The servers stop it before it runs: it is reported stopped after
	// ReportDelay, never running.
	run.DesiredStatus, run.AllocModifyIndex = structs.AllocDesiredStatusStop, run.AllocModifyIndex+10
	n.apply(read(run), []string{run.ID})
	clk.Advance(time.Second)
	if st := s.Stats(); n.known[run.ID] != run.AllocModifyIndex || st.AllocsStopped != 1 || st.AllocsPending != 0 || st.AllocsRunning != 0 {
		t.Fatalf("after the stop: known at %d; %s", n.known[run.ID], st)
	}
}

// TestReadCarriedAllocs: the allocations a watch answer carries (Changed)
// read as a fetch's do, and splitInline and highestOf pick the rest.
func TestReadCarriedAllocs(t *testing.T) {
	job := &structs.Job{ID: "j", Namespace: "default", JobModifyIndex: 9}
	changed := []*structs.Allocation{
		{ID: "b", NodeID: "n", JobID: "j", Job: job, TaskGroup: "g", AllocModifyIndex: 20, ClientStatus: structs.AllocClientStatusPending},
		{ID: "d", NodeID: "n", JobID: "j", Job: job, TaskGroup: "g", AllocModifyIndex: 35, DesiredStatus: structs.AllocDesiredStatusStop},
	}
	b := encodeAll(t, &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(map[string]uint64{"a": 10, "b": 20, "c": 41, "d": 35}), Changed: changed,
		QueryMeta: structs.QueryMeta{Index: 41}})
	c, err := readClientAllocs(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.changed) != 2 || string(c.changed[0].id) != "b" || c.changed[0].allocModifyIndex != 20 ||
		c.changed[0].jobModifyIndex != 9 || !c.changed[1].serverTerminal() {
		t.Fatalf("carried allocations read as %+v", c.changed)
	}
	have, haveIDs, rest := splitInline(c.changed, []string{"b", "c", "d"})
	if len(have) != 2 || fmt.Sprint(haveIDs) != "[b d]" || fmt.Sprint(rest) != "[c]" {
		t.Fatalf("splitInline: %d carried %v, rest %v; want [b d] and [c]", len(have), haveIDs, rest)
	}
	if got := c.highestOf(rest); got != 41 {
		t.Fatalf("highestOf(%v) = %d, want 41", rest, got)
	}
	if got := c.highestOf([]string{"a", "b"}); got != 20 {
		t.Fatalf("highestOf([a b]) = %d, want 20", got)
	}
	// An answer without Changed (Nomad, or InlineAllocs 0) carries none.
	none := encodedClientAllocs(t, 41, map[string]uint64{"a": 10})
	if _, _, rest := splitInline(none.changed, []string{"a"}); fmt.Sprint(rest) != "[a]" {
		t.Fatalf("rest %v without carried allocations", rest)
	}
}

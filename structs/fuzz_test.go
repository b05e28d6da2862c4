package structs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// wireTypes are the types servers decode from bytes they did not write
// themselves: every RPC argument (structs.Decode's and the RPC codec's
// reader run the same generated decoders), the RPC replies a client
// decodes, and the Raft entry bodies. The fuzz input's first byte picks
// one.
var wireTypes = []reflect.Type{
	// RPC arguments.
	reflect.TypeFor[structs.JobRegisterRequest](),
	reflect.TypeFor[structs.JobDeregisterRequest](),
	reflect.TypeFor[structs.JobSpecificRequest](),
	reflect.TypeFor[structs.JobListRequest](),
	reflect.TypeFor[structs.JobPlanRequest](),
	reflect.TypeFor[structs.NodeRegisterRequest](),
	reflect.TypeFor[structs.NodeDeregisterRequest](),
	reflect.TypeFor[structs.NodeUpdateStatusRequest](),
	reflect.TypeFor[structs.NodeUpdateEligibilityRequest](),
	reflect.TypeFor[structs.NodeUpdateDrainRequest](),
	reflect.TypeFor[structs.NodeSpecificRequest](),
	reflect.TypeFor[structs.NodeListRequest](),
	reflect.TypeFor[structs.AllocUpdateRequest](),
	reflect.TypeFor[structs.AllocSpecificRequest](),
	reflect.TypeFor[structs.AllocsGetRequest](),
	reflect.TypeFor[structs.AllocListRequest](),
	reflect.TypeFor[structs.AllocStopRequest](),
	reflect.TypeFor[structs.EvalUpdateRequest](),
	reflect.TypeFor[structs.EvalDeleteRequest](),
	reflect.TypeFor[structs.EvalSpecificRequest](),
	reflect.TypeFor[structs.EvalListRequest](),
	reflect.TypeFor[structs.EvalDequeueRequest](),
	reflect.TypeFor[structs.EvalAckRequest](),
	reflect.TypeFor[structs.PlanRequest](),
	reflect.TypeFor[structs.GenericRequest](),
	reflect.TypeFor[structs.RaftPeerRequest](),
	reflect.TypeFor[structs.LeadershipTransferRequest](),
	reflect.TypeFor[structs.ServerAnnounceRequest](),
	reflect.TypeFor[structs.SnapshotRestoreRequest](),
	// Raft entry bodies not covered above.
	reflect.TypeFor[structs.ApplyPlanResultsRequest](),
	// Replies a client or a forwarding server decodes.
	reflect.TypeFor[structs.NodeClientAllocsResponse](),
	reflect.TypeFor[structs.NodeUpdateResponse](),
	reflect.TypeFor[structs.AllocsGetResponse](),
	reflect.TypeFor[structs.EvalDequeueResponse](),
	reflect.TypeFor[structs.PlanResponse](),
	reflect.TypeFor[structs.JobRegisterResponse](),
	reflect.TypeFor[structs.JobPlanResponse](),
	reflect.TypeFor[structs.ServerMembersResponse](),
}

// maxWireFuzzInput bounds the inputs tried. A 64 KiB message reaches every
// decoder path; what matters is that a short one cannot claim a huge one.
const maxWireFuzzInput = 64 << 10

// maxDecodeAlloc is the most a decode of one fuzz input may allocate.
// go-msgpack sizes a collection from its length prefix, capped (see
// decInferLen: 256 KiB of small elements, or 4,096 large ones); a few
// nested prefixes may each claim that much before the bytes run out.
const maxDecodeAlloc = 64 << 20

// FuzzDecodeWire decodes arbitrary bytes into one of the wire types with
// structs.Decode (the first byte picks the type). It must not panic, must
// not allocate more than maxDecodeAlloc, and what it decodes must encode
// and decode again.
func FuzzDecodeWire(f *testing.F) {
	for _, s := range wireSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 || len(data) > maxWireFuzzInput {
			t.Skip()
		}
		typ := wireTypes[int(data[0])%len(wireTypes)]
		out := reflect.New(typ).Interface()
		var err error
		alloc := allocated(func() { err = structs.Decode(data[1:], out) })
		if alloc > maxDecodeAlloc {
			t.Fatalf("decoding %d bytes into %s allocated %d bytes", len(data)-1, typ, alloc)
		}
		if err != nil {
			return
		}
		buf, err := structs.Encode(0, out)
		if err != nil {
			t.Fatalf("%s decoded but does not encode: %v", typ, err)
		}
		back := reflect.New(typ).Interface()
		if err := structs.Decode(buf[1:], back); err != nil {
			t.Fatalf("%s: its own encoding does not decode: %v", typ, err)
		}
	})
}

// allocated returns the bytes fn allocated (the whole process's count; the
// fuzzer runs one input at a time per process).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// wireSeeds are real messages: each wire type encoded from mock objects,
// and the Raft entries in testdata/codec-golden decoded as their body type.
func wireSeeds(f *testing.F) [][]byte {
	job := mock.Job()
	node := mock.Node()
	alloc := mock.Alloc(job, node)
	eval := mock.EvalFor(job)
	values := map[reflect.Type]any{
		reflect.TypeFor[structs.JobRegisterRequest]():    &structs.JobRegisterRequest{Job: job, Eval: eval, EnforceIndex: true},
		reflect.TypeFor[structs.JobPlanRequest]():        &structs.JobPlanRequest{Job: job},
		reflect.TypeFor[structs.NodeRegisterRequest]():   &structs.NodeRegisterRequest{Node: node, CreateEvals: []*structs.Evaluation{eval}},
		reflect.TypeFor[structs.AllocUpdateRequest]():    &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{alloc}},
		reflect.TypeFor[structs.EvalUpdateRequest]():     &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}},
		reflect.TypeFor[structs.NodeSpecificRequest]():   &structs.NodeSpecificRequest{NodeID: node.ID},
		reflect.TypeFor[structs.PlanRequest]():           &structs.PlanRequest{Plan: &structs.Plan{EvalID: eval.ID, Job: job, NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}}}},
		reflect.TypeFor[structs.AllocsGetResponse]():     &structs.AllocsGetResponse{Allocs: []*structs.Allocation{alloc}},
		reflect.TypeFor[structs.EvalDequeueResponse]():   &structs.EvalDequeueResponse{Eval: eval, Token: "t"},
		reflect.TypeFor[structs.NodeDeregisterRequest](): &structs.NodeDeregisterRequest{NodeIDs: []string{node.ID}},
	}
	var seeds [][]byte
	for i, typ := range wireTypes {
		v, ok := values[typ]
		if !ok {
			v = reflect.New(typ).Interface()
		}
		buf, err := structs.Encode(structs.MessageType(i), v)
		if err != nil {
			f.Fatalf("%s: %v", typ, err)
		}
		seeds = append(seeds, buf)
	}
	// Golden Raft entries: the body of each, under the index of its type.
	golden := map[string]reflect.Type{
		"00-NodeRegister":            reflect.TypeFor[structs.NodeRegisterRequest](),
		"05-JobRegister":             reflect.TypeFor[structs.JobRegisterRequest](),
		"09-AllocClientUpdate":       reflect.TypeFor[structs.AllocUpdateRequest](),
		"10-ApplyPlanResults":        reflect.TypeFor[structs.ApplyPlanResultsRequest](),
		"03-NodeUpdateDrain":         reflect.TypeFor[structs.NodeUpdateDrainRequest](),
		"07-EvalUpdate":              reflect.TypeFor[structs.EvalUpdateRequest](),
		"12-ApplyPlanResultsGrouped": reflect.TypeFor[structs.ApplyPlanResultsRequest](),
	}
	for name, typ := range golden {
		b, err := os.ReadFile(filepath.Join("testdata", "codec-golden", name+".msgpack"))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, append([]byte{byte(typeIndex(f, typ))}, b[1:]...))
	}
	return seeds
}

func typeIndex(f *testing.F, typ reflect.Type) int {
	for i, t := range wireTypes {
		if t == typ {
			return i
		}
	}
	f.Fatal(fmt.Sprintf("%s is not a wire type", typ))
	return -1
}

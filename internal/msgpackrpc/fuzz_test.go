package msgpackrpc

import (
	"bytes"
	"io"
	"net/rpc"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// serverArgs maps the RPC methods Drover's servers serve to their
// argument types, as net/rpc's dispatcher picks the body's type from the
// header's ServiceMethod; replies likewise for the client side.
var (
	serverArgs = map[string]reflect.Type{
		"Job.Register":             reflect.TypeFor[structs.JobRegisterRequest](),
		"Job.Plan":                 reflect.TypeFor[structs.JobPlanRequest](),
		"Job.Deregister":           reflect.TypeFor[structs.JobDeregisterRequest](),
		"Job.GetJob":               reflect.TypeFor[structs.JobSpecificRequest](),
		"Job.List":                 reflect.TypeFor[structs.JobListRequest](),
		"Node.Register":            reflect.TypeFor[structs.NodeRegisterRequest](),
		"Node.UpdateStatus":        reflect.TypeFor[structs.NodeUpdateStatusRequest](),
		"Node.UpdateAlloc":         reflect.TypeFor[structs.AllocUpdateRequest](),
		"Node.UpdateDrain":         reflect.TypeFor[structs.NodeUpdateDrainRequest](),
		"Node.GetClientAllocs":     reflect.TypeFor[structs.NodeSpecificRequest](),
		"Alloc.GetAllocs":          reflect.TypeFor[structs.AllocsGetRequest](),
		"Eval.Dequeue":             reflect.TypeFor[structs.EvalDequeueRequest](),
		"Eval.Ack":                 reflect.TypeFor[structs.EvalAckRequest](),
		"Eval.Update":              reflect.TypeFor[structs.EvalUpdateRequest](),
		"Plan.Submit":              reflect.TypeFor[structs.PlanRequest](),
		"Status.Announce":          reflect.TypeFor[structs.ServerAnnounceRequest](),
		"Operator.SnapshotRestore": reflect.TypeFor[structs.SnapshotRestoreRequest](),
	}
	clientReplies = map[string]reflect.Type{
		"Node.GetClientAllocs": reflect.TypeFor[structs.NodeClientAllocsResponse](),
		"Node.Register":        reflect.TypeFor[structs.NodeUpdateResponse](),
		"Alloc.GetAllocs":      reflect.TypeFor[structs.AllocsGetResponse](),
		"Eval.Dequeue":         reflect.TypeFor[structs.EvalDequeueResponse](),
		"Plan.Submit":          reflect.TypeFor[structs.PlanResponse](),
		"Job.Register":         reflect.TypeFor[structs.JobRegisterResponse](),
	}
)

// maxRPCFuzzInput bounds the streams tried.
const maxRPCFuzzInput = 64 << 10

// maxRPCFuzzAlloc bounds what reading one stream may allocate: messages
// are gathered as their bytes arrive (never sized from a length prefix),
// and go-msgpack caps the collections it makes from one.
const maxRPCFuzzAlloc = 64 << 20

// fuzzReadLimit is the message bound the target sets on half its inputs
// (the first byte's second bit): small, so that fuzz inputs cross it.
const fuzzReadLimit = 8 << 10

// streamConn is a connection whose reads come from a fixed stream and
// whose writes are dropped.
type streamConn struct{ r io.Reader }

func (c streamConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c streamConn) Write(p []byte) (int, error) { return len(p), nil }
func (c streamConn) Close() error                { return nil }

// FuzzCodecRead reads arbitrary bytes as an RPC stream, as a server
// (request headers and bodies, each body decoded into the argument type
// of the method its header names) when the first byte is even, else as a
// client (response headers and bodies); with a message bound
// (SetReadLimit) when its second bit is set. It must never panic, must stop at
// the first error, and must not allocate more than maxRPCFuzzAlloc.
// Headers it reads agree with the generic net-rpc-msgpackrpc codec's.
func FuzzCodecRead(f *testing.F) {
	for _, s := range rpcSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 || len(data) > maxRPCFuzzInput {
			t.Skip()
		}
		server, stream := data[0]%2 == 0, data[1:]
		limit := 0 // as the client pool reads
		if data[0]&2 != 0 {
			limit = fuzzReadLimit // as a server reads, with a small bound
		}
		var alloc uint64
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if server {
			readRequests(t, stream, limit)
		} else {
			readResponses(t, stream, limit)
		}
		runtime.ReadMemStats(&after)
		alloc = after.TotalAlloc - before.TotalAlloc
		if alloc > maxRPCFuzzAlloc {
			t.Fatalf("reading %d bytes allocated %d bytes", len(stream), alloc)
		}
		if server {
			compareRequestHeader(t, stream)
		}
	})
}

// readRequests reads requests from stream until an error, as a server's
// read loop does; each message uses at least one byte, so the loop ends.
func readRequests(t *testing.T, stream []byte, limit int) {
	c := NewCodec(streamConn{bytes.NewReader(stream)}, structs.MsgpackHandle)
	c.SetReadLimit(limit)
	for range len(stream) + 1 {
		var req rpc.Request
		if err := c.ReadRequestHeader(&req); err != nil {
			return
		}
		var body any
		if typ, ok := serverArgs[req.ServiceMethod]; ok {
			body = reflect.New(typ).Interface()
		}
		if err := c.ReadRequestBody(body); err != nil {
			return
		}
	}
	t.Fatal("more messages than bytes")
}

func readResponses(t *testing.T, stream []byte, limit int) {
	c := NewCodec(streamConn{bytes.NewReader(stream)}, structs.MsgpackHandle)
	c.SetReadLimit(limit)
	for range len(stream) + 1 {
		var resp rpc.Response
		if err := c.ReadResponseHeader(&resp); err != nil {
			return
		}
		var body any
		if typ, ok := clientReplies[resp.ServiceMethod]; ok && resp.Error == "" {
			body = reflect.New(typ).Interface()
		}
		if err := c.ReadResponseBody(body); err != nil {
			return
		}
	}
	t.Fatal("more messages than bytes")
}

// compareRequestHeader checks the first request header against the
// generic codec's reading of it, when both read one.
func compareRequestHeader(t *testing.T, stream []byte) {
	var mine, theirs rpc.Request
	err := NewCodec(streamConn{bytes.NewReader(stream)}, structs.MsgpackHandle).ReadRequestHeader(&mine)
	gerr := newGeneric(streamConn{bytes.NewReader(stream)}, structs.MsgpackHandle).ReadRequestHeader(&theirs)
	if err == nil && gerr == nil && mine != theirs {
		t.Fatalf("request header %+v; the generic codec reads %+v", mine, theirs)
	}
}

// rpcSeeds are real streams: requests and responses written by the codec
// itself, one and several to a stream.
func rpcSeeds(f *testing.F) [][]byte {
	job := mock.Job()
	node := mock.Node()
	alloc := mock.Alloc(job, node)
	eval := mock.EvalFor(job)
	requests := []struct {
		method string
		body   any
	}{
		{"Job.Register", &structs.JobRegisterRequest{Job: job, Eval: eval}},
		{"Node.Register", &structs.NodeRegisterRequest{Node: node}},
		{"Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{alloc}}},
		{"Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{EvalID: eval.ID, Job: job,
			NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}}}}},
		{"Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: node.ID}},
		{"Unknown.Method", &structs.GenericRequest{}},
	}
	responses := []struct {
		method, err string
		body        any
	}{
		{"Node.GetClientAllocs", "", &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(map[string]uint64{alloc.ID: 7})}},
		{"Alloc.GetAllocs", "", &structs.AllocsGetResponse{Allocs: []*structs.Allocation{alloc}}},
		{"Eval.Dequeue", "", &structs.EvalDequeueResponse{Eval: eval, Token: "t"}},
		{"Job.Register", "[invalid] bad job", struct{}{}},
	}
	var seeds [][]byte
	var all bytes.Buffer
	for i, r := range requests {
		var buf bytes.Buffer
		c := NewCodec(writeConn{&buf}, structs.MsgpackHandle)
		if err := c.WriteRequest(&rpc.Request{ServiceMethod: r.method, Seq: uint64(i)}, r.body); err != nil {
			f.Fatal(err)
		}
		all.Write(buf.Bytes())
		seeds = append(seeds, append([]byte{0}, buf.Bytes()...))
	}
	seeds = append(seeds, append([]byte{0}, all.Bytes()...), append([]byte{2}, all.Bytes()...))
	// A request over fuzzReadLimit.
	big := job.Copy()
	big.Meta = map[string]string{"pad": strings.Repeat("x", 2*fuzzReadLimit)}
	var bigBuf bytes.Buffer
	if err := NewCodec(writeConn{&bigBuf}, structs.MsgpackHandle).WriteRequest(
		&rpc.Request{ServiceMethod: "Job.Register", Seq: 9}, &structs.JobRegisterRequest{Job: big}); err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, append([]byte{0}, bigBuf.Bytes()...), append([]byte{2}, bigBuf.Bytes()...))
	all.Reset()
	for i, r := range responses {
		var buf bytes.Buffer
		c := NewCodec(writeConn{&buf}, structs.MsgpackHandle)
		if err := c.WriteResponse(&rpc.Response{ServiceMethod: r.method, Seq: uint64(i), Error: r.err}, r.body); err != nil {
			f.Fatal(err)
		}
		all.Write(buf.Bytes())
		seeds = append(seeds, append([]byte{1}, buf.Bytes()...))
	}
	return append(seeds, append([]byte{1}, all.Bytes()...), append([]byte{3}, all.Bytes()...))
}

// writeConn collects writes; reads end at once.
type writeConn struct{ w io.Writer }

func (c writeConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (c writeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c writeConn) Close() error                { return nil }

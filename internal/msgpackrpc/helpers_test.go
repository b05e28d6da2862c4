package msgpackrpc

import (
	"io"
	"net"
	"net/rpc"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	generic "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// codecs are the two implementations: the generic codec Drover used before
// this package, and this package's.
var codecs = []struct {
	name string
	new  func(io.ReadWriteCloser) codecBoth
}{
	{"generic", func(c io.ReadWriteCloser) codecBoth { return newGeneric(c, structs.MsgpackHandle) }},
	{"drover", func(c io.ReadWriteCloser) codecBoth { return NewCodec(c, structs.MsgpackHandle) }},
}

// genericCodec is the generic codec, closed by closing its connection:
// its own Close races with its reader.
type genericCodec struct {
	*generic.MsgpackCodec
	conn io.Closer
}

func newGeneric(c io.ReadWriteCloser, h *codec.MsgpackHandle) codecBoth {
	return genericCodec{generic.NewCodecFromHandle(true, true, c, h), c}
}

func (g genericCodec) Close() error { return g.conn.Close() }

type codecBoth interface {
	rpc.ServerCodec
	rpc.ClientCodec
}

// testNode and testPlan answer with canned replies of the sizes the
// c1m-small scenario sends: a node's allocation index map (20 entries) and
// a plan placing 100 allocations.
type testNode struct {
	resp structs.NodeClientAllocsResponse
}

func (n *testNode) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.ErrCodeInvalid, "missing node ID")
	}
	*reply = n.resp
	reply.Index = args.MinQueryIndex + 1
	return nil
}

type testPlan struct{ resp structs.PlanResponse }

func (p *testPlan) Submit(args *structs.PlanRequest, reply *structs.PlanResponse) error {
	n := 0
	for _, allocs := range args.Plan.NodeAllocation {
		n += len(allocs)
	}
	*reply = p.resp
	reply.Index = uint64(n)
	return nil
}

func clientAllocsCall() (*structs.NodeSpecificRequest, *structs.NodeClientAllocsResponse) {
	allocs := make(map[string]uint64)
	for i := range 20 {
		allocs[structs.GenerateUUID()] = uint64(1000 + i)
	}
	resp := &structs.NodeClientAllocsResponse{Allocs: structs.NewAllocIndexes(allocs)}
	resp.Index, resp.KnownLeader = 5000, true
	req := &structs.NodeSpecificRequest{NodeID: structs.GenerateUUID()}
	req.Region, req.MinQueryIndex, req.MaxQueryTime = "global", 4999, 5*time.Minute
	return req, resp
}

func planCall() (*structs.PlanRequest, *structs.PlanResponse) {
	job := mock.Job()
	plan := &structs.Plan{EvalID: structs.GenerateUUID(), EvalToken: structs.GenerateUUID(),
		Priority: 50, Job: job, NodeAllocation: make(map[string][]*structs.Allocation), SnapshotIndex: 4000}
	for range 100 {
		node := mock.Node()
		a := mock.Alloc(job, node)
		a.Job = nil // as normalizePlan sends it: the job once, in the plan
		plan.NodeAllocation[node.ID] = append(plan.NodeAllocation[node.ID], a)
	}
	req := &structs.PlanRequest{Plan: plan}
	req.Region = "global"
	resp := &structs.PlanResponse{Result: &structs.PlanResult{AllocIndex: 4100}}
	return req, resp
}

// startServer serves the test endpoints over TCP loopback with newCodec
// and returns the address.
func startServer(tb testing.TB, newCodec func(io.ReadWriteCloser) codecBoth) string {
	tb.Helper()
	_, nodeResp := clientAllocsCall()
	_, planResp := planCall()
	srv := rpc.NewServer()
	if err := srv.RegisterName("Node", &testNode{resp: *nodeResp}); err != nil {
		tb.Fatal(err)
	}
	if err := srv.RegisterName("Plan", &testPlan{resp: *planResp}); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetNoDelay(true)
			go srv.ServeCodec(newCodec(c))
		}
	}()
	return ln.Addr().String()
}

// dial returns a net/rpc client over a new TCP connection.
func dial(tb testing.TB, addr string, newCodec func(io.ReadWriteCloser) codecBoth) *rpc.Client {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	client := rpc.NewClientWithCodec(newCodec(c))
	tb.Cleanup(func() { client.Close() })
	return client
}

func mustEqual[T comparable](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if got != want {
		tb.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

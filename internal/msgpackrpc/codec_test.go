package msgpackrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackread"
	"github.com/drover-project/drover/structs"
)

// recorder is a connection that keeps what is written to it and reads
// from a fixed input.
type recorder struct {
	bytes.Buffer
	in     io.Reader
	writes int
}

func (r *recorder) Write(p []byte) (int, error) { r.writes++; return r.Buffer.Write(p) }
func (r *recorder) Read(p []byte) (int, error)  { return r.in.Read(p) }
func (r *recorder) Close() error                { return nil }

// encodeGeneric is what the generic codec writes for one value.
func encodeGeneric(t *testing.T, v any) []byte {
	t.Helper()
	var b []byte
	if err := codec.NewEncoderBytes(&b, structs.MsgpackHandle).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeadersMatchGenericCodec(t *testing.T) {
	methods := []string{"", "Node.GetClientAllocs", strings.Repeat("m", 31), strings.Repeat("m", 32),
		strings.Repeat("m", 255), strings.Repeat("m", 256), strings.Repeat("m", 70000)}
	seqs := []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1}
	for _, m := range methods {
		for _, seq := range seqs {
			t.Run(fmt.Sprintf("%d/%d", len(m), seq), func(t *testing.T) {
				req := rpc.Request{ServiceMethod: m, Seq: seq}
				want := encodeGeneric(t, &req)
				if got := AppendRequestHeader(nil, &req); !bytes.Equal(got, want) {
					t.Fatalf("request header:\n got %x\nwant %x", got, want)
				}
				var back rpc.Request
				if err := readRequestHeader(want, &back); err != nil || back.ServiceMethod != m || back.Seq != seq {
					t.Fatalf("read request header: %v %q %d", err, back.ServiceMethod, back.Seq)
				}
				resp := rpc.Response{ServiceMethod: m, Seq: seq, Error: m + "!"}
				want = encodeGeneric(t, &resp)
				if got := appendResponseHeader(nil, &resp); !bytes.Equal(got, want) {
					t.Fatalf("response header:\n got %x\nwant %x", got, want)
				}
				var backResp rpc.Response
				if err := readResponseHeader(want, &backResp); err != nil || backResp != resp {
					t.Fatalf("read response header: %v %+v", err, backResp)
				}
			})
		}
	}
}

func TestReadHeaderTolerates(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want rpc.Request
		err  bool
	}{
		{"nil", []byte{0xc0}, rpc.Request{}, false},
		{"reordered, str8, signed, unknown key",
			[]byte{0x83, 0xa1, 'X', 0x91, 0x01, 0xad, 'S', 'e', 'r', 'v', 'i', 'c', 'e', 'M', 'e', 't', 'h', 'o', 'd', 0xd9, 0x03, 'A', '.', 'B', 0xa3, 'S', 'e', 'q', 0xd1, 0x01, 0x00},
			rpc.Request{ServiceMethod: "A.B", Seq: 256}, false},
		{"not a map", []byte{0x91, 0x01}, rpc.Request{}, true},
		{"truncated", []byte{0x82, 0xa3, 'S', 'e'}, rpc.Request{}, true},
		{"negative seq", []byte{0x81, 0xa3, 'S', 'e', 'q', 0xff}, rpc.Request{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got rpc.Request
			err := readRequestHeader(tt.in, &got)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if !tt.err && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestMessagesMatchGenericCodec compares whole messages (header and body)
// as each codec writes them, and checks each message leaves in one write.
func TestMessagesMatchGenericCodec(t *testing.T) {
	h := structs.MsgpackHandle
	planReq, planResp := planCall()
	nodeReq, nodeResp := clientAllocsCall()
	nodeResp.Allocs = structs.AllocIndexes{{ID: "only-one", AllocModifyIndex: 7}}
	tests := []struct {
		name  string
		write func(c codecBoth) error
	}{
		{"plan request", func(c codecBoth) error {
			return c.WriteRequest(&rpc.Request{ServiceMethod: "Plan.Submit", Seq: 9}, planReq)
		}},
		{"node request", func(c codecBoth) error {
			return c.WriteRequest(&rpc.Request{ServiceMethod: "Node.GetClientAllocs", Seq: 1 << 40}, nodeReq)
		}},
		{"plan response", func(c codecBoth) error {
			return c.WriteResponse(&rpc.Response{ServiceMethod: "Plan.Submit", Seq: 9}, planResp)
		}},
		{"node response", func(c codecBoth) error {
			return c.WriteResponse(&rpc.Response{ServiceMethod: "Node.GetClientAllocs", Seq: 300}, nodeResp)
		}},
		{"error response", func(c codecBoth) error {
			return c.WriteResponse(&rpc.Response{ServiceMethod: "Node.GetClientAllocs", Seq: 3, Error: "not_found: node"}, struct{}{})
		}},
		{"string reply", func(c codecBoth) error {
			s := "10.0.0.1:4647"
			return c.WriteResponse(&rpc.Response{ServiceMethod: "Status.Leader", Seq: 4}, &s)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out [2]recorder
			if err := tt.write(newGeneric(&out[0], h)); err != nil {
				t.Fatalf("generic: %v", err)
			}
			if err := tt.write(NewCodec(&out[1], h)); err != nil {
				t.Fatalf("drover: %v", err)
			}
			sameMessage(t, out[0].Bytes(), out[1].Bytes())
			mustEqual(t, "writes", out[1].writes, 1)
		})
	}
}

// sameMessage checks two encoded messages have the same header bytes and
// the same body: byte for byte but for the order of map entries, which
// differs between two encodings of one map.
func sameMessage(t *testing.T, a, b []byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths differ: generic %d, drover %d", len(a), len(b))
	}
	var sa, sb msgpackread.Scanner
	sa.Reset(1)
	sb.Reset(1)
	if done, err := sa.Scan(a); !done || err != nil {
		t.Fatalf("generic header: %v", err)
	}
	if done, err := sb.Scan(b); !done || err != nil {
		t.Fatalf("drover header: %v", err)
	}
	if !bytes.Equal(a[:sa.End()], b[:sb.End()]) {
		t.Fatalf("headers differ:\ngeneric %q\n drover %q", a[:sa.End()], b[:sb.End()])
	}
	var va, vb any
	if err := structs.Decode(a[sa.End():], &va); err != nil {
		t.Fatal(err)
	}
	if err := structs.Decode(b[sb.End():], &vb); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(va, vb) {
		t.Fatalf("bodies differ:\ngeneric %v\n drover %v", va, vb)
	}
}

// TestInterop runs calls between every pair of codecs over TCP: answers,
// typed errors, unknown methods (the stream stays usable) and concurrent
// calls on one client.
func TestInterop(t *testing.T) {
	for _, srvCodec := range codecs {
		addr := startServer(t, srvCodec.new)
		for _, cliCodec := range codecs {
			t.Run(cliCodec.name+"->"+srvCodec.name, func(t *testing.T) {
				client := dial(t, addr, cliCodec.new)
				planReq, _ := planCall()
				nodeReq, _ := clientAllocsCall()

				var planResp structs.PlanResponse
				if err := client.Call("Plan.Submit", planReq, &planResp); err != nil {
					t.Fatal(err)
				}
				mustEqual(t, "plan index", planResp.Index, 100)
				mustEqual(t, "alloc index", planResp.Result.AllocIndex, 4100)

				var missing structs.NodeClientAllocsResponse
				err := client.Call("Node.GetClientAllocs", &structs.NodeSpecificRequest{}, &missing)
				var serverErr rpc.ServerError
				if !errors.As(err, &serverErr) {
					t.Fatalf("error %v (%T), want rpc.ServerError", err, err)
				}
				mustEqual(t, "code", structs.CodeOf(structs.DecodeRPCError(string(serverErr))), structs.ErrCodeInvalid)

				err = client.Call("Node.NoSuchMethod", nodeReq, &missing)
				if !errors.As(err, &serverErr) || !strings.Contains(err.Error(), "can't find method") {
					t.Fatalf("unknown method: %v", err)
				}

				var wg sync.WaitGroup
				errs := make(chan error, 40)
				for i := range 40 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						req := *nodeReq
						req.MinQueryIndex = uint64(i)
						var resp structs.NodeClientAllocsResponse
						if err := client.Call("Node.GetClientAllocs", &req, &resp); err != nil {
							errs <- err
						} else if resp.Index != uint64(i)+1 || len(resp.Allocs) != 20 {
							errs <- fmt.Errorf("call %d: index %d, %d allocs", i, resp.Index, len(resp.Allocs))
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		}
	}
}

func TestReadEOF(t *testing.T) {
	full := append(AppendRequestHeader(nil, &rpc.Request{ServiceMethod: "A.B", Seq: 1}), encodeGeneric(t, &structs.GenericRequest{})...)
	hdrLen := len(AppendRequestHeader(nil, &rpc.Request{ServiceMethod: "A.B", Seq: 1}))
	tests := []struct {
		name          string
		in            []byte
		hdrErr, body  error
		readBodyAfter bool
	}{
		{"empty", nil, io.EOF, nil, false},
		{"cut in header", full[:3], io.ErrUnexpectedEOF, nil, false},
		{"header only", full[:hdrLen], nil, io.ErrUnexpectedEOF, true},
		{"cut in body", full[:len(full)-1], nil, io.ErrUnexpectedEOF, true},
		{"whole", full, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCodec(&recorder{in: bytes.NewReader(tt.in)}, structs.MsgpackHandle)
			var req rpc.Request
			if err := c.ReadRequestHeader(&req); !errors.Is(err, tt.hdrErr) || (tt.hdrErr == nil && err != nil) {
				t.Fatalf("header: %v, want %v", err, tt.hdrErr)
			}
			if !tt.readBodyAfter {
				return
			}
			var body structs.GenericRequest
			if err := c.ReadRequestBody(&body); !errors.Is(err, tt.body) || (tt.body == nil && err != nil) {
				t.Fatalf("body: %v, want %v", err, tt.body)
			}
			if tt.body == nil {
				if err := c.ReadRequestHeader(&req); err != io.EOF {
					t.Fatalf("after the message: %v, want io.EOF", err)
				}
			}
		})
	}
}

// TestLargeMessage sends an item far larger than the read buffer, in
// small pieces, and a malformed one.
func TestLargeMessage(t *testing.T) {
	planReq, _ := planCall()
	var out recorder
	if err := NewCodec(&out, structs.MsgpackHandle).WriteRequest(&rpc.Request{ServiceMethod: "Plan.Submit", Seq: 2}, planReq); err != nil {
		t.Fatal(err)
	}
	if out.Len() < 4*readBufSize {
		t.Fatalf("message of %d bytes is not large", out.Len())
	}
	msg := append(bytes.Clone(out.Bytes()), out.Bytes()...) // twice
	c := NewCodec(&recorder{in: &slowReader{b: msg, n: 1000}}, structs.MsgpackHandle)
	for range 2 {
		var req rpc.Request
		var body structs.PlanRequest
		if err := c.ReadRequestHeader(&req); err != nil {
			t.Fatal(err)
		}
		if err := c.ReadRequestBody(&body); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "method", req.ServiceMethod, "Plan.Submit")
		mustEqual(t, "allocations", len(body.Plan.NodeAllocation), 100)
		mustEqual(t, "job", body.Plan.Job.ID, planReq.Plan.Job.ID)
	}

	bad := NewCodec(&recorder{in: bytes.NewReader([]byte{0x82, 0xc1})}, structs.MsgpackHandle)
	var req rpc.Request
	if err := bad.ReadRequestHeader(&req); !errors.Is(err, msgpackread.ErrMalformed) {
		t.Fatalf("malformed: %v", err)
	}
}

// slowReader returns at most n bytes per Read.
type slowReader struct {
	b []byte
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

// TestClose checks calls fail once either side closes.
func TestClose(t *testing.T) {
	addr := startServer(t, codecs[1].new)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	client := rpc.NewClientWithCodec(NewCodec(conn, structs.MsgpackHandle))
	req, _ := clientAllocsCall()
	var resp structs.NodeClientAllocsResponse
	if err := client.Call("Node.GetClientAllocs", req, &resp); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := client.Call("Node.GetClientAllocs", req, &resp); !errors.Is(err, rpc.ErrShutdown) {
		t.Fatalf("call after close: %v", err)
	}
}

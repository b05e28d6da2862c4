package msgpackrpc

import (
	"bytes"
	"errors"
	"net/rpc"
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestReadLimit: a message up to the limit reads, one byte longer fails
// with ErrMessageTooLarge, whether it fits the read buffer or is gathered.
func TestReadLimit(t *testing.T) {
	planReq, _ := planCall()
	for _, body := range []any{"small", planReq} {
		var out recorder
		if err := NewCodec(&out, structs.MsgpackHandle).WriteRequest(&rpc.Request{ServiceMethod: "Plan.Submit", Seq: 1}, body); err != nil {
			t.Fatal(err)
		}
		var hdr recorder
		NewCodec(&hdr, structs.MsgpackHandle).WriteRequest(&rpc.Request{ServiceMethod: "Plan.Submit", Seq: 1}, struct{}{})
		bodyLen := out.Len() - (hdr.Len() - 1) // the header alone is hdr less its 1-byte empty body

		for _, tc := range []struct {
			limit int
			ok    bool
		}{{bodyLen, true}, {bodyLen - 1, false}, {0, true}} {
			c := NewCodec(&recorder{in: &slowReader{b: bytes.Clone(out.Bytes()), n: 1000}}, structs.MsgpackHandle)
			var req rpc.Request
			if err := c.ReadRequestHeader(&req); err != nil {
				t.Fatal(err)
			}
			c.SetReadLimit(tc.limit)
			err := c.ReadRequestBody(nil)
			if tc.ok && err != nil {
				t.Fatalf("body of %d bytes, limit %d: %v", bodyLen, tc.limit, err)
			}
			if !tc.ok && !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("body of %d bytes, limit %d: %v, want ErrMessageTooLarge", bodyLen, tc.limit, err)
			}
		}
	}
}

// endless is a reader that announces a 768 MiB string and then sends its
// bytes forever, counting what was read.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	if e.read == 0 && len(p) >= 5 {
		copy(p, []byte{0xdb, 0x30, 0x00, 0x00, 0x00}) // str32 of 768 MiB
		e.read = 5
		return 5, nil
	}
	for i := range p {
		p[i] = 'x'
	}
	e.read += len(p)
	return len(p), nil
}

// TestReadLimitStopsReading: a huge message is refused once the limit is
// passed; the codec reads little more than the limit.
func TestReadLimitStopsReading(t *testing.T) {
	const limit = 1 << 20
	in := &endless{}
	c := NewCodec(&recorder{in: in}, structs.MsgpackHandle)
	c.SetReadLimit(limit)
	var req rpc.Request
	if err := c.ReadRequestHeader(&req); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if in.read > limit+2*readBufSize {
		t.Fatalf("read %d bytes for a limit of %d", in.read, limit)
	}
}

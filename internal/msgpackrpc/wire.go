package msgpackrpc

import (
	"fmt"
	"net/rpc"

	"github.com/drover-project/drover/internal/msgpackread"
	"github.com/drover-project/drover/internal/msgpackwrite"
)

// The headers as the generic codec writes them with a MsgpackHandle that
// leaves WriteExt off: a map of the exported fields sorted by name, strings
// in the old raw formats (fixstr, str16, str32; never str8), integers in
// their shortest form.
//
//	rpc.Request:  {"Seq": uint, "ServiceMethod": str}
//	rpc.Response: {"Error": str, "Seq": uint, "ServiceMethod": str}
//
// Readers accept any msgpack map (keys in any order, str8 strings, signed
// integers, unknown keys skipped; nil reads as an empty header).

// AppendRequestHeader appends r's msgpack, byte for byte as the generic
// codec writes it. A client that frames its own requests (the node
// simulator) writes the header with it, then the body.
func AppendRequestHeader(b []byte, r *rpc.Request) []byte {
	b = append(b, 0x82)
	b = msgpackwrite.AppendUint(msgpackwrite.AppendStr(b, "Seq"), r.Seq)
	return msgpackwrite.AppendStr(msgpackwrite.AppendStr(b, "ServiceMethod"), r.ServiceMethod)
}

// appendResponseHeader appends r's msgpack.
func appendResponseHeader(b []byte, r *rpc.Response) []byte {
	b = append(b, 0x83)
	b = msgpackwrite.AppendStr(msgpackwrite.AppendStr(b, "Error"), r.Error)
	b = msgpackwrite.AppendUint(msgpackwrite.AppendStr(b, "Seq"), r.Seq)
	return msgpackwrite.AppendStr(msgpackwrite.AppendStr(b, "ServiceMethod"), r.ServiceMethod)
}

// readRequestHeader decodes an encoded rpc.Request into r.
func readRequestHeader(b []byte, r *rpc.Request) error {
	*r = rpc.Request{}
	m := msgpackread.NewReader(b)
	for n := m.MapLen(); n > 0 && m.Err() == nil; n-- {
		switch k := m.Str(); string(k) {
		case "ServiceMethod":
			r.ServiceMethod = string(m.Str())
		case "Seq":
			r.Seq = m.Uint()
		default:
			m.Skip()
		}
	}
	if err := m.Err(); err != nil {
		return fmt.Errorf("msgpackrpc: reading request header: %w", err)
	}
	return nil
}

// ResponseHeader is an rpc.Response header as ReadResponseHeader reads
// it: ServiceMethod and Error are views into the message (empty when
// absent), valid as long as its bytes are.
type ResponseHeader struct {
	ServiceMethod, Error []byte
	Seq                  uint64
}

// ReadResponseHeader reads the rpc.Response header r is at and leaves r
// at the body that follows. It allocates nothing: a client that reads its
// own responses (the node simulator) keeps only what it needs.
func ReadResponseHeader(r *msgpackread.Reader) (ResponseHeader, error) {
	var h ResponseHeader
	for n := r.MapLen(); n > 0 && r.Err() == nil; n-- {
		switch k := r.Str(); string(k) {
		case "ServiceMethod":
			h.ServiceMethod = r.Str()
		case "Seq":
			h.Seq = r.Uint()
		case "Error":
			h.Error = r.Str()
		default:
			r.Skip()
		}
	}
	if err := r.Err(); err != nil {
		return ResponseHeader{}, fmt.Errorf("msgpackrpc: reading response header: %w", err)
	}
	return h, nil
}

// readResponseHeader decodes an encoded rpc.Response into r.
func readResponseHeader(b []byte, r *rpc.Response) error {
	m := msgpackread.NewReader(b)
	h, err := ReadResponseHeader(&m)
	if err != nil {
		*r = rpc.Response{}
		return err
	}
	*r = rpc.Response{ServiceMethod: string(h.ServiceMethod), Seq: h.Seq, Error: string(h.Error)}
	return nil
}

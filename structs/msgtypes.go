package structs

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of every Raft log entry.
type MessageType uint8

// Raft message types. Numbers are part of the on-disk format: never reuse
// or renumber one; add new types at the end.
const (
	NodeRegisterRequestType MessageType = iota
	NodeDeregisterRequestType
	NodeUpdateStatusRequestType
	NodeUpdateDrainRequestType
	NodeUpdateEligibilityRequestType
	JobRegisterRequestType
	JobDeregisterRequestType
	EvalUpdateRequestType
	EvalDeleteRequestType
	AllocClientUpdateRequestType
	ApplyPlanResultsRequestType
	AllocUpdateDesiredTransitionRequestType
)

// IgnoreUnknownTypeFlag, set on a message type, tells an older server that
// does not know the type to skip the entry instead of stopping. Types that
// may safely be ignored during a rolling upgrade are written with it.
const IgnoreUnknownTypeFlag MessageType = 128

func (t MessageType) String() string {
	names := [...]string{"NodeRegister", "NodeDeregister", "NodeUpdateStatus",
		"NodeUpdateDrain", "NodeUpdateEligibility", "JobRegister", "JobDeregister",
		"EvalUpdate", "EvalDelete", "AllocClientUpdate", "ApplyPlanResults",
		"AllocUpdateDesiredTransition"}
	base := t &^ IgnoreUnknownTypeFlag
	if int(base) < len(names) {
		return names[base]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// MsgpackHandle is the one msgpack configuration used for Raft entries,
// snapshots and RPC.
var MsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()

// Encode writes t followed by msg in msgpack.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(msg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads a msgpack body into out.
func Decode(buf []byte, out any) error {
	return codec.NewDecoder(bytes.NewReader(buf), MsgpackHandle).Decode(out)
}

package structs

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// TaskStates is an allocation's task states by task name, held as their
// msgpack encoding: a map from task name to TaskState, the bytes a client
// update carried.
//
// Servers keep every allocation's task states but rarely read them:
// they are written by each client update, replicated, applied on every
// server and kept until the allocation is collected, while only a failed
// allocation's reschedule and the HTTP API look inside. Decoded, one
// running task's states are about a dozen objects (the map, the state,
// its events, their strings): at 100,000 allocations that was a quarter
// of a server's live heap. Encoded, they are one pointer-free slice that
// the FSM copies out of the log entry and the garbage collector never
// scans.
//
// The zero value holds no task states (encoded as nil, as a nil map was);
// otherwise the bytes are a msgpack map. A TaskStates never changes: Map
// decodes a fresh map on each call, and NewTaskStates encodes a copy of
// the map it is given, in task-name order (an event's Details, written by
// generated code, stay in map order). The msgpack form is the map's,
// byte for byte, and so is the JSON form (MarshalJSON): nothing on the
// wire changed. Servers never re-encode task states: every server stores
// the bytes of the same Raft entry.
type TaskStates struct {
	enc []byte
}

// NewTaskStates encodes m. A nil map gives the zero TaskStates; an empty
// one an empty map.
func NewTaskStates(m map[string]*TaskState) TaskStates {
	if m == nil {
		return TaskStates{}
	}
	s := taskStateEncoders.Get().(*encodeScratch)
	defer s.release()
	s.enc.ResetBytes(&s.buf)
	if err := s.enc.Encode(m); err != nil {
		// Only a broken codec fails on these plain types.
		panic(fmt.Sprintf("structs: encoding task states: %v", err))
	}
	return TaskStates{enc: append([]byte(nil), s.buf...)}
}

// taskStateEncoders encode with sorted task names.
var (
	taskStatesHandle  = newMsgpackHandle(true)
	taskStateEncoders sync.Pool
)

func init() {
	taskStateEncoders.New = func() any { return newEncodeScratch(taskStatesHandle, 1024, &taskStateEncoders) }
}

// IsZero reports whether t holds no task states at all (not even an empty
// map).
func (t TaskStates) IsZero() bool { return t.enc == nil }

// Map decodes the task states into a new map (nil for the zero value).
// The caller owns the result.
func (t TaskStates) Map() (map[string]*TaskState, error) {
	if t.enc == nil {
		return nil, nil
	}
	var m map[string]*TaskState
	if err := Decode(t.enc, &m); err != nil {
		return nil, fmt.Errorf("decoding task states: %w", err)
	}
	if m == nil {
		m = map[string]*TaskState{}
	}
	return m, nil
}

// MustMap is Map for task states known to be valid: every TaskStates a
// server stores was checked when it arrived (Validate), and every other
// one was made by NewTaskStates. It panics on bytes that do not decode.
func (t TaskStates) MustMap() map[string]*TaskState {
	m, err := t.Map()
	if err != nil {
		panic(err)
	}
	return m
}

// Validate checks that the bytes decode as task states: the servers call
// it on what a client sends before storing it.
func (t TaskStates) Validate() error {
	_, err := t.Map()
	return err
}

// Equal reports whether t and o hold the same bytes.
func (t TaskStates) Equal(o TaskStates) bool {
	return (t.enc == nil) == (o.enc == nil) && string(t.enc) == string(o.enc)
}

// Size returns the length of the encoding.
func (t TaskStates) Size() int { return len(t.enc) }

// CodecEncodeSelf writes the held encoding as it is (MsgpackHandle has
// Raw set for this).
func (t TaskStates) CodecEncodeSelf(e *codec.Encoder) {
	if t.enc == nil {
		e.MustEncode(nil)
		return
	}
	e.MustEncode(codec.Raw(t.enc))
}

// CodecDecodeSelf keeps a copy of the next value's bytes (never a view
// into the buffer being decoded, which may be a whole Raft entry). It
// checks only that they are a map or nil; Validate checks the rest.
func (t *TaskStates) CodecDecodeSelf(d *codec.Decoder) {
	var raw codec.Raw
	d.MustDecode(&raw)
	switch {
	case len(raw) == 1 && raw[0] == mpNil:
		t.enc = nil
	case len(raw) > 0 && isMsgpackMap(raw[0]):
		t.enc = []byte(raw)
	default:
		panic(fmt.Errorf("task states: want a map, got msgpack type byte %#x", firstByte(raw)))
	}
}

// msgpack type bytes (the format's spec).
const (
	mpNil   = 0xc0
	mpMap16 = 0xde
	mpMap32 = 0xdf
)

func isMsgpackMap(b byte) bool { return b&0xf0 == 0x80 || b == mpMap16 || b == mpMap32 }

func firstByte(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// MarshalJSON writes the task states as the JSON object of the map (null
// for the zero value), as the HTTP API always showed them.
func (t TaskStates) MarshalJSON() ([]byte, error) {
	m, err := t.Map()
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the JSON object of a map of task states.
func (t *TaskStates) UnmarshalJSON(b []byte) error {
	var m map[string]*TaskState
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*t = NewTaskStates(m)
	return nil
}

package structs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// sampleTaskStates has three tasks, and event details with one key:
// NewTaskStates sorts task names, not details (see TaskStates).
func sampleTaskStates() map[string]*TaskState {
	at := time.Unix(1700000000, 0).UTC()
	return map[string]*TaskState{
		"web": {State: TaskStateRunning, StartedAt: at, Events: []*TaskEvent{
			{Type: TaskReceived, Time: at.UnixNano(), DisplayMessage: "Task received by client"},
			{Type: TaskStarted, Time: at.UnixNano(), Details: map[string]string{"a": "1"}},
		}},
		"sidecar": {State: TaskStateDead, Failed: true, Restarts: 2, FinishedAt: at.Add(time.Minute)},
		"init":    {State: TaskStatePending},
	}
}

// The msgpack of an allocation is what it was when TaskStates was a map:
// the same bytes as the map encoded with sorted keys, and any encoding of
// the map (in whatever key order) decodes to the same task states.
func TestTaskStatesWireFormat(t *testing.T) {
	m := sampleTaskStates()
	var want []byte
	if err := codec.NewEncoderBytes(&want, newMsgpackHandle(true)).Encode(struct{ TaskStates map[string]*TaskState }{m}); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(struct{ TaskStates TaskStates }{NewTaskStates(m)}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from the map's:\n got %x\nwant %x", got, want)
	}

	for i := 0; i < 5; i++ { // unsorted encodings, as an older client sends
		var legacy []byte
		if err := codec.NewEncoderBytes(&legacy, MsgpackHandle).Encode(struct{ TaskStates map[string]*TaskState }{m}); err != nil {
			t.Fatal(err)
		}
		var dec struct{ TaskStates TaskStates }
		if err := Decode(legacy, &dec); err != nil {
			t.Fatal(err)
		}
		back, err := dec.TaskStates.Map()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("decoded %#v, want %#v", back, m)
		}
	}
}

func TestTaskStatesNilEmptyAndDeterministic(t *testing.T) {
	if ts := NewTaskStates(nil); !ts.IsZero() {
		t.Fatal("nil map gives non-zero task states")
	}
	if m, err := (TaskStates{}).Map(); m != nil || err != nil {
		t.Fatalf("zero value maps to %v, %v", m, err)
	}
	empty := NewTaskStates(map[string]*TaskState{})
	if empty.IsZero() {
		t.Fatal("empty map gives the zero value")
	}
	if m, err := empty.Map(); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("empty map decodes to %v, %v", m, err)
	}
	// Map order is random: equal maps must still give equal bytes.
	first := NewTaskStates(sampleTaskStates())
	for i := 0; i < 20; i++ {
		if again := NewTaskStates(sampleTaskStates()); !again.Equal(first) {
			t.Fatalf("encoding %d differs", i)
		}
	}
	if first.Equal(empty) || empty.Equal(TaskStates{}) {
		t.Fatal("Equal confuses different task states")
	}
}

// Decoding keeps its own copy: the buffer it came from (a Raft entry, a
// pooled RPC buffer) is reused.
func TestTaskStatesDecodeCopies(t *testing.T) {
	buf, err := Encode(AllocClientUpdateRequestType, &AllocUpdateRequest{Alloc: []*Allocation{{ID: "a", TaskStates: NewTaskStates(sampleTaskStates())}}})
	if err != nil {
		t.Fatal(err)
	}
	var req AllocUpdateRequest
	if err := Decode(buf[1:], &req); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 0xff
	}
	m, err := req.Alloc[0].TaskStates.Map()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, sampleTaskStates()) {
		t.Fatalf("decoded %#v", m)
	}
}

// What a client sends is checked: a value that is not a map fails the
// decode, a map that does not hold task states fails Validate.
func TestTaskStatesBadInput(t *testing.T) {
	for name, bad := range map[string]any{
		"a number":  map[string]any{"ID": "a", "TaskStates": 7},
		"a string":  map[string]any{"ID": "a", "TaskStates": "running"},
		"an array":  map[string]any{"ID": "a", "TaskStates": []any{"web"}},
		"not state": map[string]any{"ID": "a", "TaskStates": map[string]any{"web": "running"}},
		"bad event": map[string]any{"ID": "a", "TaskStates": map[string]any{"web": map[string]any{"Events": []any{7}}}},
	} {
		t.Run(name, func(t *testing.T) {
			var buf []byte
			if err := codec.NewEncoderBytes(&buf, MsgpackHandle).Encode(bad); err != nil {
				t.Fatal(err)
			}
			var a Allocation
			err := Decode(buf, &a)
			if err == nil {
				err = a.TaskStates.Validate()
			}
			if err == nil {
				t.Fatalf("accepted task states %v", bad)
			}
		})
	}
}

func TestTaskStatesJSON(t *testing.T) {
	m := sampleTaskStates()
	want, err := json.Marshal(map[string]any{"TaskStates": m})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(struct{ TaskStates TaskStates }{NewTaskStates(m)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("JSON\n got %s\nwant %s", got, want)
	}
	if zero, _ := json.Marshal(struct{ TaskStates TaskStates }{}); !strings.Contains(string(zero), `"TaskStates":null`) {
		t.Fatalf("zero value as JSON: %s", zero)
	}
	var back struct{ TaskStates TaskStates }
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !back.TaskStates.Equal(NewTaskStates(m)) {
		t.Fatal("JSON round trip changed the task states")
	}
	if err := json.Unmarshal([]byte(`{"TaskStates":7}`), &back); err == nil {
		t.Fatal("a number read as task states")
	}
}

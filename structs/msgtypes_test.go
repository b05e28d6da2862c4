package structs

import (
	"reflect"
	"testing"
	"time"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	job := &Job{ID: "web", TaskGroups: []*TaskGroup{{Name: "g", Count: 3, Tasks: []*Task{{
		Name: "t", Driver: "raw_exec",
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo"}, "nested": map[string]any{"a": int64(1)}},
		Env:    map[string]string{"A": "b"}, KillTimeout: 3 * time.Second,
	}}}}}
	job.Canonicalize()
	node := &Node{ID: "n1", Name: "n1", Drivers: map[string]*DriverInfo{"mock": {Healthy: true, UpdateTime: time.Unix(100, 5).UTC()}}}
	req := &JobRegisterRequest{Job: job, Eval: NewEval(job, EvalTriggerJobRegister, time.Unix(5, 0))}
	buf, err := Encode(JobRegisterRequestType|IgnoreUnknownTypeFlag, req)
	if err != nil {
		t.Fatal(err)
	}
	if MessageType(buf[0])&^IgnoreUnknownTypeFlag != JobRegisterRequestType {
		t.Fatalf("type byte %d", buf[0])
	}
	var out JobRegisterRequest
	if err := Decode(buf[1:], &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req, &out) {
		t.Fatalf("round trip differs:\n%#v\n%#v", req.Job.TaskGroups[0].Tasks[0].Config, out.Job.TaskGroups[0].Tasks[0].Config)
	}
	nb, _ := Encode(NodeRegisterRequestType, &NodeRegisterRequest{Node: node})
	var nout NodeRegisterRequest
	if err := Decode(nb[1:], &nout); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(node, nout.Node) {
		t.Fatalf("node differs: %#v vs %#v", node.Drivers["mock"], nout.Node.Drivers["mock"])
	}
}

func TestRPCErrorRoundTrip(t *testing.T) {
	for _, err := range []error{ErrNoLeader, NewError(ErrCodeNotFound, "job %q not found", "x"),
		(&Job{}).Validate()} {
		got := DecodeRPCError(err.Error())
		if CodeOf(got) != CodeOf(err) {
			t.Errorf("%v: code %q after round trip, want %q", err, CodeOf(got), CodeOf(err))
		}
	}
	if CodeOf(DecodeRPCError("[bogus] x")) != ErrCodeInternal {
		t.Error("unknown code must decode as internal")
	}
}

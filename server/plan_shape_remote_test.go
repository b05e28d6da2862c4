package server_test

import (
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// A plan sent over RPC with a null allocation, by a caller holding a
// dequeued evaluation, is refused; before checkPlanShape it stopped the
// leader's plan applier, and the leader with it.
func TestPlanSubmitRefusesNullAllocation(t *testing.T) {
	s := schedServer(t, -1)
	call := remote(t, s)
	node := mock.Node()
	registerNode(t, s, node)
	submitJob(t, s, smallJob("web", 1))
	got := dequeue(t, call, 5*time.Second)
	if got.Eval == nil {
		t.Fatal("no evaluation to plan for")
	}
	plan := &structs.Plan{EvalID: got.Eval.ID, EvalToken: got.Token, Priority: got.Eval.Priority,
		NodeAllocation: map[string][]*structs.Allocation{node.ID: {nil}}}
	err := call("Plan.Submit", &structs.PlanRequest{Plan: plan}, &structs.PlanResponse{})
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("err = %v; want the null allocation refused", err)
	}
	// The server still answers.
	if err := call("Eval.Ack", &structs.EvalAckRequest{EvalID: got.Eval.ID, Token: got.Token}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("ack after the refused plan: %v", err)
	}
}

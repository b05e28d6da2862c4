package server

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestZeroReplyClearsHalfFilledAnswer(t *testing.T) {
	reply := &structs.SingleEvalResponse{Eval: &structs.Evaluation{ID: "stale"}}
	reply.Index = 7
	zeroReply(reply)
	if reply.Eval != nil || reply.Index != 0 {
		t.Fatalf("reply after zeroReply = %+v", reply)
	}
	zeroReply(nil) // not a pointer: ignored
}

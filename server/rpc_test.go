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

// Every RPC method has its entry in the access table (rpc_roles.go): one
// missing would be for servers only, which a client method must not be by
// accident.
func TestRPCAccessTableCoversMethods(t *testing.T) {
	s := &Server{}
	methods, err := rpcMethods(s.endpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	for name := range methods {
		if _, ok := rpcAccessTable[name]; !ok {
			t.Errorf("RPC method %s has no entry in rpcAccessTable", name)
		}
	}
	for name := range rpcAccessTable {
		if _, ok := methods[name]; !ok {
			t.Errorf("rpcAccessTable lists %s, which is no RPC method", name)
		}
	}
}

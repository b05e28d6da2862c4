package fsm

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestApplyVariables(t *testing.T) {
	f, _ := testFSM(t)
	if r := apply(t, f, 1, structs.RootKeyMetaUpsertRequestType, &structs.RootKeyMetaUpsertRequest{
		RootKeyMeta: &structs.RootKeyMeta{KeyID: "k1", Algorithm: structs.EncryptionAlgorithmAES256GCM}}); r != nil {
		t.Fatalf("root key: %v", r)
	}
	v := &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Path: "nomad/jobs/web"}, Data: []byte{1, 2}, KeyID: "k1"}
	if r := apply(t, f, 2, structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: structs.VarOpCAS, Var: v}); r != nil {
		t.Fatalf("cas create: %#v", r)
	}
	r := apply(t, f, 3, structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: structs.VarOpCAS, Var: v})
	if ce, ok := r.(*structs.VarConflictError); !ok || ce.Conflict.ModifyIndex != 2 {
		t.Fatalf("second cas create: %#v", r)
	}
	rekeyed := *v
	rekeyed.ModifyIndex, rekeyed.KeyID = 2, "k2"
	if r := apply(t, f, 4, structs.VariablesRekeyRequestType, &structs.VariablesRekeyRequest{Vars: []*structs.VariableEncrypted{&rekeyed}}); r != nil {
		t.Fatalf("rekey: %v", r)
	}
	got, err := f.State().VariableByPath(nil, "default", "nomad/jobs/web")
	if err != nil || got.KeyID != "k2" || got.ModifyIndex != 2 {
		t.Fatalf("after rekey %+v %v", got, err)
	}
	// A rekey batch with a null element is refused whole.
	r = apply(t, f, 5, structs.VariablesRekeyRequestType, &structs.VariablesRekeyRequest{Vars: []*structs.VariableEncrypted{nil}})
	if err, _ := r.(error); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("null rekey: %#v", r)
	}
}

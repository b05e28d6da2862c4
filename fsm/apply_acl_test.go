package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

func TestApplyACLAndSnapshot(t *testing.T) {
	f, _ := testFSM(t)
	root := &structs.ACLToken{AccessorID: "a-root", SecretHash: structs.HashSecret("root-secret"),
		Type: structs.ACLManagementToken, Global: true, CreateTime: time.Unix(100, 0).UTC()}
	if r := apply(t, f, 1, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: root}); r != nil {
		t.Fatalf("bootstrap: %v", r)
	}
	again := &structs.ACLToken{AccessorID: "a-2", SecretHash: structs.HashSecret("x"), Type: structs.ACLManagementToken}
	r := apply(t, f, 2, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: again})
	if err, _ := r.(error); !errors.Is(err, &structs.Error{Code: structs.ErrCodeConflict}) {
		t.Fatalf("second bootstrap = %v, want a conflict", r)
	}
	pol := &structs.ACLPolicy{Name: "readonly", Rules: `namespace "default" { policy = "read" }`}
	if r := apply(t, f, 3, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{pol}}); r != nil {
		t.Fatalf("policy upsert: %v", r)
	}
	tok := &structs.ACLToken{AccessorID: "a-3", SecretID: "never-stored", SecretHash: structs.HashSecret("never-stored"),
		Type: structs.ACLClientToken, Policies: []string{"readonly"}}
	if r := apply(t, f, 4, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}}); r != nil {
		t.Fatalf("token upsert: %v", r)
	}
	if r := apply(t, f, 5, structs.ACLClusterSecretRequestType, &structs.ACLClusterSecretRequest{Secret: &structs.ACLClusterSecret{Secret: "s"}}); r != nil {
		t.Fatalf("cluster secret: %v", r)
	}
	r = apply(t, f, 6, structs.ACLPolicyDeleteRequestType, &structs.ACLPolicyDeleteRequest{Names: []string{"readonly", "missing"}})
	if err, _ := r.(error); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("delete of a missing policy = %v", r)
	}

	st := f.State()
	got, err := st.ACLTokenBySecretHash(structs.HashSecret("never-stored"))
	if err != nil || got == nil || got.AccessorID != "a-3" || got.SecretID != "" {
		t.Fatalf("token by secret = %+v, %v (the secret itself must not be stored)", got, err)
	}
	if idx, _ := st.ACLBootstrapIndex(); idx != 1 {
		t.Fatalf("bootstrap index = %d", idx)
	}
	if p, err := st.ACLPolicyByName(nil, "readonly"); err != nil || p.CreateIndex != 3 {
		t.Fatalf("policy survived the refused delete? %+v %v", p, err)
	}

	data := persist(t, f)
	if bytes.Contains(data, []byte("never-stored")) || bytes.Contains(data, []byte("root-secret")) {
		t.Fatal("a token secret is in the snapshot")
	}
	g, _ := testFSM(t)
	must(t, g.Restore(io.NopCloser(bytes.NewReader(data))))
	sameState(t, f.State(), g.State())
	if idx, _ := g.State().ACLBootstrapIndex(); idx != 1 {
		t.Fatalf("restored bootstrap index = %d", idx)
	}
}

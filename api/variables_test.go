package api

import (
	"context"
	"errors"
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestClientVariables(t *testing.T) {
	ctx := context.Background()
	r := &recorder{reply: `{"Path":"a/b","ModifyIndex":5,"Items":{"k":"v"}}`}
	c := r.server(t)
	v, _, err := c.Variable(ctx, "/a/b/", &QueryOptions{Namespace: "prod"})
	if err != nil || v.Items["k"] != "v" || r.path != "/v1/var/a/b" || r.query != "namespace=prod" {
		t.Fatalf("read: %+v %v %s?%s", v, err, r.path, r.query)
	}
	zero := uint64(0)
	if _, _, err := c.PutVariable(ctx, &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "a/b"},
		Items: structs.VariableItems{"k": "v"}}, &zero, nil); err != nil || r.method != "PUT" || r.query != "cas=0" {
		t.Fatalf("put: %v %s ?%s", err, r.method, r.query)
	}
	// A 409 is a CAS conflict carrying the current variable.
	r.status = 409
	_, _, err = c.PutVariable(ctx, &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "a/b"}}, &zero, nil)
	var ce *CASConflictError
	if !errors.As(err, &ce) || ce.Conflict.ModifyIndex != 5 || ce.CheckIndex != 0 {
		t.Fatalf("conflict: %v", err)
	}
	seven := uint64(7)
	if _, err := c.DeleteVariable(ctx, "a/b", &seven, nil); !errors.As(err, &ce) || r.method != "DELETE" || r.query != "cas=7" || ce.CheckIndex != 7 {
		t.Fatalf("delete conflict: %v %s ?%s", err, r.method, r.query)
	}
	r.status, r.reply = 0, `{"Key":{"KeyID":"k2","State":"active"}}`
	k, _, err := c.RotateRootKey(ctx, true, nil)
	if err != nil || k.KeyID != "k2" || r.path != "/v1/operator/keyring/rotate" || r.query != "full=true" {
		t.Fatalf("rotate: %+v %v %s?%s", k, err, r.path, r.query)
	}
}

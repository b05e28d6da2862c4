package state

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

func encVar(ns, path string, modify uint64) *structs.VariableEncrypted {
	return &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: path,
		ModifyIndex: modify, CreateTime: 10, ModifyTime: 20}, Data: []byte("sealed"), KeyID: "k1"}
}

// varResult is what one variable write did: ok, or the conflict.
type varResult struct {
	ok       bool
	conflict *structs.VariableEncrypted
}

func applyVar(t *testing.T, s *StateStore, index uint64, op structs.VarOp, v *structs.VariableEncrypted) varResult {
	t.Helper()
	err := s.ApplyVariable(index, &structs.VarApplyStateRequest{Op: op, Var: v})
	var ce *structs.VarConflictError
	if errors.As(err, &ce) {
		return varResult{conflict: ce.Conflict}
	}
	if err != nil {
		t.Fatalf("apply %s %s: %v", op, v.Path, err)
	}
	return varResult{ok: true}
}

func stored(t *testing.T, s *StateStore, path string) *structs.VariableEncrypted {
	t.Helper()
	v, err := s.VariableByPath(nil, "default", path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return v
}

func TestVariablesSetAndCAS(t *testing.T) {
	s, _ := NewStateStore()
	if r := applyVar(t, s, 10, structs.VarOpSet, encVar("", "a/b", 0)); !r.ok || stored(t, s, "a/b").CreateIndex != 10 {
		t.Fatalf("set: %+v", r)
	}
	got, err := s.VariableByPath(nil, "default", "a/b")
	if err != nil || got.ModifyIndex != 10 || got.Namespace != "default" {
		t.Fatalf("read: %+v %v", got, err)
	}
	// CAS 0 on an existing variable conflicts with it; nothing written.
	r := applyVar(t, s, 11, structs.VarOpCAS, encVar("default", "a/b", 0))
	if r.ok || r.conflict.ModifyIndex != 10 {
		t.Fatalf("cas 0: %+v", r)
	}
	// CAS with a stale index conflicts; with the right one it writes,
	// keeping the create index and time.
	if r := applyVar(t, s, 12, structs.VarOpCAS, encVar("default", "a/b", 9)); r.ok {
		t.Fatalf("stale cas: %+v", r)
	}
	v := encVar("default", "a/b", 10)
	v.CreateTime = 99
	if r := applyVar(t, s, 13, structs.VarOpCAS, v); !r.ok {
		t.Fatalf("cas: %+v", r)
	}
	if w := stored(t, s, "a/b"); w.CreateIndex != 10 || w.ModifyIndex != 13 || w.CreateTime != 10 {
		t.Fatalf("after cas: %+v", w)
	}
	// CAS on a missing variable with a non-zero index conflicts with an
	// empty variable naming the path.
	if r := applyVar(t, s, 14, structs.VarOpCAS, encVar("default", "none", 5)); r.ok || r.conflict.Path != "none" || r.conflict.ModifyIndex != 0 {
		t.Fatalf("cas missing: %+v", r)
	}
	if idx, _ := s.Index(TableVariables); idx != 13 {
		t.Fatalf("table index %d, want 13 (conflicts write nothing)", idx)
	}
	// Delete-CAS with a stale index conflicts; with the right one deletes.
	if r := applyVar(t, s, 15, structs.VarOpDeleteCAS, encVar("default", "a/b", 10)); r.ok {
		t.Fatalf("stale delete-cas: %+v", r)
	}
	if r := applyVar(t, s, 16, structs.VarOpDeleteCAS, encVar("default", "a/b", 13)); !r.ok {
		t.Fatalf("delete-cas: %+v", r)
	}
	if _, err := s.VariableByPath(nil, "default", "a/b"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("after delete: %v", err)
	}
	// Deleting a missing variable succeeds, as in Nomad.
	if r := applyVar(t, s, 17, structs.VarOpDelete, encVar("default", "a/b", 0)); !r.ok {
		t.Fatalf("delete missing: %+v", r)
	}
	// An unencrypted set is refused.
	if err := s.ApplyVariable(18, &structs.VarApplyStateRequest{Op: structs.VarOpSet, Var: &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Path: "x"}}}); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("unencrypted set: %v", err)
	}
}

func TestVariablesListPrefixAndNamespaces(t *testing.T) {
	s, _ := NewStateStore()
	idx := uint64(1)
	for _, p := range [][2]string{{"default", "nomad/jobs/web"}, {"default", "nomad/jobs/web/g"}, {"default", "other"}, {"prod", "nomad/jobs/api"}} {
		idx++
		applyVar(t, s, idx, structs.VarOpSet, encVar(p[0], p[1], 0))
	}
	paths := func(vs []*structs.VariableEncrypted) (out []string) {
		for _, v := range vs {
			out = append(out, v.Namespace+":"+v.Path)
		}
		return out
	}
	got, _ := s.Variables(nil, "default", "nomad/jobs/")
	if want := []string{"default:nomad/jobs/web", "default:nomad/jobs/web/g"}; !equalStrings(paths(got), want) {
		t.Fatalf("prefix list %v, want %v", paths(got), want)
	}
	got, _ = s.Variables(nil, "*", "nomad")
	if want := []string{"default:nomad/jobs/web", "default:nomad/jobs/web/g", "prod:nomad/jobs/api"}; !equalStrings(paths(got), want) {
		t.Fatalf("all namespaces %v, want %v", paths(got), want)
	}
	// A list is a blocking query: a write under the prefix fires it.
	ws := memdb.NewWatchSet()
	if _, err := s.Variables(ws, "prod", ""); err != nil {
		t.Fatal(err)
	}
	applyVar(t, s, 20, structs.VarOpSet, encVar("prod", "nomad/jobs/api2", 0))
	if ws.Watch(time.After(10 * time.Second)) {
		t.Fatal("list watch did not fire")
	}
}

func TestRootKeyMetaOneActive(t *testing.T) {
	s, _ := NewStateStore()
	if _, err := s.ActiveRootKeyMeta(nil); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("no key: %v", err)
	}
	for i, id := range []string{"b", "a", "c"} {
		if err := s.UpsertRootKeyMeta(uint64(10+i), &structs.RootKeyMeta{KeyID: id, Algorithm: structs.EncryptionAlgorithmAES256GCM}); err != nil {
			t.Fatal(err)
		}
	}
	active, err := s.ActiveRootKeyMeta(nil)
	if err != nil || active.KeyID != "c" || active.CreateIndex != 12 {
		t.Fatalf("active %+v %v", active, err)
	}
	keys, _ := s.RootKeyMetas(nil)
	n := 0
	for _, k := range keys {
		if k.Active() {
			n++
		}
	}
	if len(keys) != 3 || n != 1 {
		t.Fatalf("%d keys, %d active", len(keys), n)
	}
	// Rekey writes only variables whose index is unchanged.
	applyVar(t, s, 20, structs.VarOpSet, encVar("default", "x", 0))
	applyVar(t, s, 21, structs.VarOpSet, encVar("default", "y", 0))
	re := func(path string, modify uint64) *structs.VariableEncrypted {
		v := encVar("default", path, modify)
		v.KeyID, v.Data = "c", []byte("resealed")
		return v
	}
	n, err = s.RekeyVariables(22, []*structs.VariableEncrypted{re("x", 20), re("y", 3)})
	if err != nil || n != 1 {
		t.Fatalf("rekey wrote %d: %v", n, err)
	}
	x, _ := s.VariableByPath(nil, "", "x")
	y, _ := s.VariableByPath(nil, "", "y")
	if x.KeyID != "c" || x.ModifyIndex != 20 || y.KeyID != "k1" {
		t.Fatalf("after rekey x=%+v y=%+v", x, y)
	}
	if vs, _ := s.VariablesByKeyID("k1"); len(vs) != 1 || vs[0].Path != "y" {
		t.Fatalf("by key: %v", vs)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

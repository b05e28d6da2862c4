package state

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Variables are stored encrypted (structs.VariableEncrypted); the store
// never sees an item in clear. The root keys' table holds metadata only.

// ApplyVariable performs one variable write: set, check-and-set, delete
// or check-and-set delete. A failed check writes nothing and returns a
// *structs.VarConflictError holding the current variable (one with only
// the namespace and path when there is none).
func (s *StateStore) ApplyVariable(index uint64, req *structs.VarApplyStateRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.ApplyVariable(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// ApplyVariable is StateStore.ApplyVariable within the batch.
func (b *Batch) ApplyVariable(index uint64, req *structs.VarApplyStateRequest) error {
	v := req.Var
	if v == nil || v.Path == "" {
		return structs.NewError(structs.ErrCodeInvalid, "variable entry without a variable path")
	}
	v.Namespace = defaultNamespace(v.Namespace)
	b.txn.t.begin(index)
	raw, err := b.txn.first(TableVariables, v.Namespace, v.Path)
	if err != nil {
		return err
	}
	var prev *structs.VariableEncrypted
	if raw != nil {
		prev = raw.(*structs.VariableEncrypted)
	}
	switch req.Op {
	case structs.VarOpCAS, structs.VarOpDeleteCAS:
		if c := casConflict(prev, v); c != nil {
			return &structs.VarConflictError{Conflict: c}
		}
	case structs.VarOpSet, structs.VarOpDelete:
	default:
		return structs.NewError(structs.ErrCodeInvalid, "unknown variable operation %q", req.Op)
	}
	if req.Op == structs.VarOpDelete || req.Op == structs.VarOpDeleteCAS {
		if prev == nil {
			return nil
		}
		if err := b.txn.delete(TableVariables, prev); err != nil {
			return fmt.Errorf("state: deleting variable %s: %w", prev, err)
		}
		b.txn.t.add(TableVariables)
		return nil
	}
	if len(v.Data) == 0 || v.KeyID == "" {
		return structs.NewError(structs.ErrCodeInvalid, "variable %s is not encrypted", v)
	}
	row := *v
	row.CreateIndex, row.ModifyIndex = index, index
	if prev != nil {
		row.CreateIndex, row.CreateTime = prev.CreateIndex, prev.CreateTime
	}
	if err := b.txn.insert(TableVariables, &row); err != nil {
		return fmt.Errorf("state: inserting variable %s: %w", v, err)
	}
	b.txn.t.add(TableVariables)
	return nil
}

// casConflict returns the conflict of a check-and-set write of v (whose
// ModifyIndex is the expected one) against prev, or nil if it may go on.
func casConflict(prev, v *structs.VariableEncrypted) *structs.VariableEncrypted {
	switch {
	case prev == nil && v.ModifyIndex == 0:
		return nil
	case prev == nil:
		return &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Namespace: v.Namespace, Path: v.Path}}
	case prev.ModifyIndex != v.ModifyIndex:
		c := *prev
		return &c
	}
	return nil
}

// RekeyVariables stores variables re-encrypted with another key. Each is
// written only if it is still stored with the same ModifyIndex, and
// keeps its metadata; it returns how many were written.
func (s *StateStore) RekeyVariables(index uint64, vars []*structs.VariableEncrypted) (int, error) {
	b := s.Batch()
	defer b.Abort()
	n, err := b.RekeyVariables(index, vars)
	if err != nil {
		return 0, err
	}
	return n, b.Commit()
}

// RekeyVariables is StateStore.RekeyVariables within the batch.
func (b *Batch) RekeyVariables(index uint64, vars []*structs.VariableEncrypted) (int, error) {
	b.txn.t.begin(index)
	n := 0
	for _, v := range vars {
		if len(v.Data) == 0 || v.KeyID == "" {
			return 0, structs.NewError(structs.ErrCodeInvalid, "variable %s is not encrypted", v)
		}
		raw, err := b.txn.first(TableVariables, defaultNamespace(v.Namespace), v.Path)
		if err != nil {
			return 0, err
		}
		if raw == nil || raw.(*structs.VariableEncrypted).ModifyIndex != v.ModifyIndex {
			continue // deleted or rewritten since it was read
		}
		row := *raw.(*structs.VariableEncrypted)
		row.Data, row.KeyID = v.Data, v.KeyID
		if err := b.txn.insert(TableVariables, &row); err != nil {
			return 0, fmt.Errorf("state: inserting variable %s: %w", v, err)
		}
		n++
	}
	if n > 0 {
		b.txn.t.add(TableVariables)
	}
	return n, nil
}

// VariableByPath returns one variable, or a not-found error.
func (s *StateStore) VariableByPath(ws memdb.WatchSet, namespace, path string) (*structs.VariableEncrypted, error) {
	ns := defaultNamespace(namespace)
	return firstTxn[structs.VariableEncrypted](s.db.Txn(false), ws, TableVariables, "variable", path, ns, path)
}

// Variables returns the variables of namespace whose path starts with
// prefix, sorted by path; namespace "*" lists every namespace (sorted by
// namespace, then path).
func (s *StateStore) Variables(ws memdb.WatchSet, namespace, prefix string) ([]*structs.VariableEncrypted, error) {
	txn := s.db.Txn(false)
	if namespace != "*" {
		return listTxn[structs.VariableEncrypted](txn, ws, TableVariables, IndexID+prefixSuffix, defaultNamespace(namespace), prefix)
	}
	all, err := listTxn[structs.VariableEncrypted](txn, ws, TableVariables, IndexID)
	if err != nil || prefix == "" {
		return all, err
	}
	out := all[:0:0]
	for _, v := range all {
		if strings.HasPrefix(v.Path, prefix) {
			out = append(out, v)
		}
	}
	return out, nil
}

// VariablesByKeyID returns every variable encrypted with key id.
func (s *StateStore) VariablesByKeyID(id string) ([]*structs.VariableEncrypted, error) {
	all, err := listTxn[structs.VariableEncrypted](s.db.Txn(false), nil, TableVariables, IndexID)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, v := range all {
		if v.KeyID == id {
			out = append(out, v)
		}
	}
	return out, nil
}

// UpsertRootKeyMeta records a new active root key: every other key
// becomes inactive. A key already recorded is left as it is.
func (s *StateStore) UpsertRootKeyMeta(index uint64, meta *structs.RootKeyMeta) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertRootKeyMeta(index, meta); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertRootKeyMeta is StateStore.UpsertRootKeyMeta within the batch.
func (b *Batch) UpsertRootKeyMeta(index uint64, meta *structs.RootKeyMeta) error {
	if meta == nil || meta.KeyID == "" {
		return structs.NewError(structs.ErrCodeInvalid, "root key entry without a key ID")
	}
	b.txn.t.begin(index)
	prev, err := b.txn.first(TableRootKeys, meta.KeyID)
	if err != nil || prev != nil {
		return err
	}
	keys, err := listWrite[structs.RootKeyMeta](b.txn, TableRootKeys, IndexID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !k.Active() {
			continue
		}
		c := *k
		c.State, c.ModifyIndex = structs.RootKeyStateInactive, index
		if err := b.txn.insert(TableRootKeys, &c); err != nil {
			return fmt.Errorf("state: updating root key %s: %w", c.KeyID, err)
		}
	}
	row := *meta
	row.State, row.CreateIndex, row.ModifyIndex = structs.RootKeyStateActive, index, index
	if err := b.txn.insert(TableRootKeys, &row); err != nil {
		return fmt.Errorf("state: inserting root key %s: %w", row.KeyID, err)
	}
	b.txn.t.add(TableRootKeys)
	return nil
}

// RootKeyMetas returns every root key's metadata, sorted by key ID.
func (s *StateStore) RootKeyMetas(ws memdb.WatchSet) ([]*structs.RootKeyMeta, error) {
	return listTxn[structs.RootKeyMeta](s.db.Txn(false), ws, TableRootKeys, IndexID)
}

// RootKeyMetaByID returns one key's metadata, or a not-found error.
func (s *StateStore) RootKeyMetaByID(ws memdb.WatchSet, id string) (*structs.RootKeyMeta, error) {
	return firstTxn[structs.RootKeyMeta](s.db.Txn(false), ws, TableRootKeys, "root key", id, id)
}

// ActiveRootKeyMeta returns the active key's metadata, or a not-found
// error before the first key exists.
func (s *StateStore) ActiveRootKeyMeta(ws memdb.WatchSet) (*structs.RootKeyMeta, error) {
	keys, err := s.RootKeyMetas(ws)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.Active() {
			return k, nil
		}
	}
	return nil, structs.NewError(structs.ErrCodeNotFound, "no active root key")
}

// VariableRestore and RootKeyMetaRestore load snapshot rows.
func (r *StateRestore) VariableRestore(v *structs.VariableEncrypted) error {
	return r.insert(TableVariables, v)
}
func (r *StateRestore) RootKeyMetaRestore(k *structs.RootKeyMeta) error {
	return r.insert(TableRootKeys, k)
}

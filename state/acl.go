package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// aclClusterKey is the primary key of the acl_cluster table's one row.
const aclClusterKey = "cluster"

// IndexACLBootstrap is the index table's key for the Raft index of the
// ACL bootstrap (absent: not bootstrapped), as in Nomad.
const IndexACLBootstrap = "acl_token_bootstrap"

// UpsertACLPolicies writes policies, keeping each existing one's
// CreateIndex.
func (s *StateStore) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertACLPolicies(index, policies); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertACLPolicies is StateStore.UpsertACLPolicies within the batch.
func (b *Batch) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	b.txn.t.begin(index)
	for _, p := range policies {
		prev, err := b.txn.first(TableACLPolicies, p.Name)
		if err != nil {
			return err
		}
		p.CreateIndex = index
		if prev != nil {
			p.CreateIndex = prev.(*structs.ACLPolicy).CreateIndex
		}
		p.ModifyIndex = index
		if err := b.txn.insert(TableACLPolicies, p); err != nil {
			return fmt.Errorf("state: inserting ACL policy %q: %w", p.Name, err)
		}
	}
	b.txn.t.add(TableACLPolicies)
	return nil
}

// DeleteACLPolicies removes policies by name; a missing one is a
// not-found error and nothing is removed.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteACLPolicies(index, names); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteACLPolicies is StateStore.DeleteACLPolicies within the batch.
func (b *Batch) DeleteACLPolicies(index uint64, names []string) error {
	b.txn.t.begin(index)
	// Check every name first: a refusal writes nothing.
	rows := make([]*structs.ACLPolicy, 0, len(names))
	for _, name := range names {
		row, err := lookup[structs.ACLPolicy](b.txn, TableACLPolicies, "ACL policy", name, name)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		if err := b.txn.delete(TableACLPolicies, row); err != nil {
			return fmt.Errorf("state: deleting ACL policy: %w", err)
		}
	}
	b.txn.t.add(TableACLPolicies)
	return nil
}

// UpsertACLTokens writes tokens, keeping each existing one's CreateIndex,
// CreateTime and secret hash. Tokens are stored without SecretID.
func (s *StateStore) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertACLTokens(index, tokens); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertACLTokens is StateStore.UpsertACLTokens within the batch.
func (b *Batch) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	return upsertACLTokensTxn(b.txn, index, tokens)
}

func upsertACLTokensTxn(txn *writeTxn, index uint64, tokens []*structs.ACLToken) error {
	txn.t.begin(index)
	for _, t := range tokens {
		prev, err := txn.first(TableACLTokens, t.AccessorID)
		if err != nil {
			return err
		}
		t.SecretID = ""
		t.CreateIndex = index
		if prev != nil {
			p := prev.(*structs.ACLToken)
			t.CreateIndex, t.CreateTime, t.SecretHash = p.CreateIndex, p.CreateTime, p.SecretHash
		}
		if len(t.SecretHash) == 0 {
			return structs.NewError(structs.ErrCodeInvalid, "ACL token %q has no secret hash", t.AccessorID)
		}
		t.ModifyIndex = index
		if err := txn.insert(TableACLTokens, t); err != nil {
			return fmt.Errorf("state: inserting ACL token %q: %w", t.AccessorID, err)
		}
	}
	txn.t.add(TableACLTokens)
	return nil
}

// DeleteACLTokens removes tokens by accessor; a missing one is a
// not-found error and nothing is removed.
func (s *StateStore) DeleteACLTokens(index uint64, accessors []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteACLTokens(index, accessors); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteACLTokens is StateStore.DeleteACLTokens within the batch.
func (b *Batch) DeleteACLTokens(index uint64, accessors []string) error {
	b.txn.t.begin(index)
	// Check every name first: a refusal writes nothing.
	rows := make([]*structs.ACLToken, 0, len(accessors))
	for _, id := range accessors {
		row, err := lookup[structs.ACLToken](b.txn, TableACLTokens, "ACL token", id, id)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		if err := b.txn.delete(TableACLTokens, row); err != nil {
			return fmt.Errorf("state: deleting ACL token: %w", err)
		}
	}
	b.txn.t.add(TableACLTokens)
	return nil
}

// BootstrapACLToken writes the first management token and records the
// bootstrap index, if resetIndex equals the recorded bootstrap index (0
// when there has been none). Otherwise it returns a conflict error and
// writes nothing: two bootstraps racing through Raft cannot both win.
func (s *StateStore) BootstrapACLToken(index, resetIndex uint64, token *structs.ACLToken) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.BootstrapACLToken(index, resetIndex, token); err != nil {
		return err
	}
	return b.Commit()
}

// BootstrapACLToken is StateStore.BootstrapACLToken within the batch.
func (b *Batch) BootstrapACLToken(index, resetIndex uint64, token *structs.ACLToken) error {
	raw, err := b.txn.txn.First(TableIndex, IndexID, IndexACLBootstrap)
	if err != nil {
		return fmt.Errorf("state: bootstrap index lookup: %w", err)
	}
	var done uint64
	if raw != nil {
		done = raw.(*IndexEntry).Value
	}
	if done != resetIndex {
		return structs.NewError(structs.ErrCodeConflict, "ACL bootstrap already done (reset index: %d)", done)
	}
	if err := upsertACLTokensTxn(b.txn, index, []*structs.ACLToken{token}); err != nil {
		return err
	}
	if err := b.txn.txn.Insert(TableIndex, &IndexEntry{Key: IndexACLBootstrap, Value: index}); err != nil {
		return fmt.Errorf("state: writing bootstrap index: %w", err)
	}
	return nil
}

// ACLBootstrapIndex returns the Raft index of the ACL bootstrap, 0 if
// ACLs were never bootstrapped.
func (s *StateStore) ACLBootstrapIndex() (uint64, error) {
	return s.Index(IndexACLBootstrap)
}

// SetACLClusterSecret writes the servers' internal credential, unless one
// is already stored (the first write wins; the entry is then a no-op).
func (s *StateStore) SetACLClusterSecret(index uint64, secret *structs.ACLClusterSecret) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.SetACLClusterSecret(index, secret); err != nil {
		return err
	}
	return b.Commit()
}

// SetACLClusterSecret is StateStore.SetACLClusterSecret within the batch.
func (b *Batch) SetACLClusterSecret(index uint64, secret *structs.ACLClusterSecret) error {
	b.txn.t.begin(index)
	prev, err := b.txn.first(TableACLCluster, aclClusterKey)
	if err != nil || prev != nil {
		return err
	}
	secret.CreateIndex = index
	if err := b.txn.insert(TableACLCluster, secret); err != nil {
		return fmt.Errorf("state: writing the cluster secret: %w", err)
	}
	b.txn.t.add(TableACLCluster)
	return nil
}

// RotateACLClusterSecret replaces the servers' internal credential with
// secret.Secret, keeping the one it replaces as Previous (accepted until
// secret.PreviousUntil). With none stored it writes secret as the first.
func (b *Batch) RotateACLClusterSecret(index uint64, secret *structs.ACLClusterSecret) error {
	b.txn.t.begin(index)
	raw, err := b.txn.first(TableACLCluster, aclClusterKey)
	if err != nil {
		return err
	}
	next := &structs.ACLClusterSecret{Secret: secret.Secret, CreateIndex: index, ModifyIndex: index}
	if prev, ok := raw.(*structs.ACLClusterSecret); ok && prev != nil {
		next.Previous, next.PreviousUntil, next.CreateIndex = prev.Secret, secret.PreviousUntil, prev.CreateIndex
	}
	if err := b.txn.insert(TableACLCluster, next); err != nil {
		return fmt.Errorf("state: rotating the cluster secret: %w", err)
	}
	b.txn.t.add(TableACLCluster)
	return nil
}

// ACLClusterSecret returns the servers' internal credential, or nil.
func (s *StateStore) ACLClusterSecret() (*structs.ACLClusterSecret, error) {
	raw, err := s.db.Txn(false).First(TableACLCluster, IndexID, aclClusterKey)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ACLClusterSecret), nil
}

// ACLPolicyByName returns one policy, or a not-found error.
func (s *StateStore) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	return firstTxn[structs.ACLPolicy](s.db.Txn(false), ws, TableACLPolicies, "ACL policy", name, name)
}

// ACLPolicies returns the policies whose name starts with prefix, sorted.
func (s *StateStore) ACLPolicies(ws memdb.WatchSet, prefix string) ([]*structs.ACLPolicy, error) {
	return listTxn[structs.ACLPolicy](s.db.Txn(false), ws, TableACLPolicies, IndexID+prefixSuffix, prefix)
}

// ACLTokenByAccessor returns one token, or a not-found error.
func (s *StateStore) ACLTokenByAccessor(ws memdb.WatchSet, accessor string) (*structs.ACLToken, error) {
	return firstTxn[structs.ACLToken](s.db.Txn(false), ws, TableACLTokens, "ACL token", accessor, accessor)
}

// ACLTokenBySecretHash returns the token whose secret hashes to hash, or
// nil if there is none.
func (s *StateStore) ACLTokenBySecretHash(hash []byte) (*structs.ACLToken, error) {
	raw, err := s.db.Txn(false).First(TableACLTokens, IndexSecret, structs.SecretKey(hash))
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokens returns the tokens whose accessor starts with prefix, sorted.
func (s *StateStore) ACLTokens(ws memdb.WatchSet, prefix string) ([]*structs.ACLToken, error) {
	return listTxn[structs.ACLToken](s.db.Txn(false), ws, TableACLTokens, IndexID+prefixSuffix, prefix)
}

// ACLPolicyRestore, ACLTokenRestore and ACLClusterSecretRestore load
// snapshot rows.
func (r *StateRestore) ACLPolicyRestore(p *structs.ACLPolicy) error {
	return r.insert(TableACLPolicies, p)
}
func (r *StateRestore) ACLTokenRestore(t *structs.ACLToken) error {
	return r.insert(TableACLTokens, t)
}
func (r *StateRestore) ACLClusterSecretRestore(c *structs.ACLClusterSecret) error {
	return r.insert(TableACLCluster, c)
}

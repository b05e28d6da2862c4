package state

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Node pools: the node_pools table holds the pools operators wrote and
// those nodes created by registering in them; the built-in pools "all"
// and "default" are never stored, and every read answers them.

// builtInNodePools are the built-in pools; shared, never modified.
var builtInNodePools = structs.BuiltInNodePools()

// NodePools returns the pools whose name starts with prefix, built-in
// ones included, sorted by name.
func (s *StateStore) NodePools(ws memdb.WatchSet, prefix string) ([]*structs.NodePool, error) {
	stored, err := listTxn[structs.NodePool](s.db.Txn(false), ws, TableNodePools, IndexID+prefixSuffix, prefix)
	if err != nil {
		return nil, err
	}
	for _, p := range builtInNodePools {
		if strings.HasPrefix(p.Name, prefix) {
			stored = append(stored, p)
		}
	}
	structs.SortNodePools(stored)
	return stored, nil
}

// NodePoolByName returns one pool, or an error matching
// structs.ErrNotFound.
func (s *StateStore) NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error) {
	for _, p := range builtInNodePools {
		if p.Name == name {
			return p, nil
		}
	}
	return firstTxn[structs.NodePool](s.db.Txn(false), ws, TableNodePools, "node pool", name, name)
}

// StoredNodePools returns the stored pools (for snapshots).
func (s *StateStore) StoredNodePools(ws memdb.WatchSet) ([]*structs.NodePool, error) {
	return listTxn[structs.NodePool](s.db.Txn(false), ws, TableNodePools, IndexID)
}

// UpsertNodePools creates or replaces pools (see Batch.UpsertNodePools).
func (s *StateStore) UpsertNodePools(index uint64, pools []*structs.NodePool) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertNodePools(index, pools); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertNodePools creates or replaces pools; a built-in pool is refused
// (code invalid) and nothing is written.
func (b *Batch) UpsertNodePools(index uint64, pools []*structs.NodePool) error {
	b.txn.t.begin(index)
	for _, p := range pools {
		if structs.IsBuiltInNodePool(p.Name) {
			return structs.NewError(structs.ErrCodeInvalid, "node pool %q is built in and cannot be changed", p.Name)
		}
	}
	for _, p := range pools {
		if err := upsertNodePoolTxn(b.txn, index, p.Copy()); err != nil {
			return err
		}
	}
	return nil
}

func upsertNodePoolTxn(txn *writeTxn, index uint64, p *structs.NodePool) error {
	raw, err := txn.first(TableNodePools, p.Name)
	if err != nil {
		return err
	}
	p.CreateIndex, p.ModifyIndex = index, index
	if prev, ok := raw.(*structs.NodePool); ok && prev != nil {
		p.CreateIndex = prev.CreateIndex
	}
	if err := txn.insert(TableNodePools, p); err != nil {
		return fmt.Errorf("state: inserting node pool %q: %w", p.Name, err)
	}
	txn.t.add(TableNodePools)
	return nil
}

// ensureNodePoolTxn creates the pool a registering node names when it
// does not exist (as Nomad does).
func ensureNodePoolTxn(txn *writeTxn, index uint64, name string) error {
	if name == "" || structs.IsBuiltInNodePool(name) {
		return nil
	}
	raw, err := txn.first(TableNodePools, name)
	if err != nil || raw != nil {
		return err
	}
	return upsertNodePoolTxn(txn, index, &structs.NodePool{Name: name})
}

// DeleteNodePools deletes pools (see Batch.DeleteNodePools).
func (s *StateStore) DeleteNodePools(index uint64, names []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteNodePools(index, names); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteNodePools deletes pools by name. A built-in pool, one that does
// not exist (code not_found), or one a node or a job still names or that
// has an autoscaler (code conflict) is refused, and nothing is deleted.
func (b *Batch) DeleteNodePools(index uint64, names []string) error {
	b.txn.t.begin(index)
	want := map[string]bool{}
	for _, n := range names {
		if structs.IsBuiltInNodePool(n) {
			return structs.NewError(structs.ErrCodeInvalid, "node pool %q is built in and cannot be deleted", n)
		}
		raw, err := b.txn.first(TableNodePools, n)
		if err != nil {
			return err
		}
		if raw == nil {
			return structs.NewError(structs.ErrCodeNotFound, "node pool %q not found", n)
		}
		want[n] = true
		asg, err := b.txn.first(TablePoolAutoscalers, n)
		if err != nil {
			return err
		}
		if asg != nil {
			return structs.NewError(structs.ErrCodeConflict, "node pool %q has an autoscaler (delete it first)", n)
		}
	}
	nodes, err := listWrite[structs.Node](b.txn, TableNodes, IndexID)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if want[n.NodePool] {
			return structs.NewError(structs.ErrCodeConflict, "node pool %q has nodes (node %s)", n.NodePool, n.ID)
		}
	}
	jobs, err := listWrite[structs.Job](b.txn, TableJobs, IndexID)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if want[j.NodePool] {
			return structs.NewError(structs.ErrCodeConflict, "node pool %q has jobs (job %q in namespace %q)", j.NodePool, j.ID, j.Namespace)
		}
	}
	for _, n := range names {
		if err := deleteByIDTxn(b.txn, TableNodePools, n); err != nil {
			return err
		}
	}
	b.txn.t.add(TableNodePools)
	return nil
}

// NodePoolRestore loads a snapshot row.
func (r *StateRestore) NodePoolRestore(p *structs.NodePool) error {
	return r.insert(TableNodePools, p)
}

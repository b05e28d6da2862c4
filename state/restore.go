package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/ptree"
	"github.com/drover-project/drover/structs"
)

// StateRestore loads rows into a store as they are, in one write
// transaction, for an FSM restore. Nothing is visible until Commit; Abort
// (safe after Commit) discards everything.
type StateRestore struct {
	txn   *memdb.Txn
	nodes nodeAllocsRestore // per-node rows derived from the loaded nodes and allocations
	// The allocations' trees (alloc_tables.go).
	byID  *ptree.Txn[*structs.Allocation]
	byJob *ptree.Txn[struct{}]
}

// Restore opens a bulk load. Use it only on a fresh store that nobody reads
// yet.
func (s *StateStore) Restore() *StateRestore {
	return &StateRestore{txn: s.db.Txn(true), nodes: nodeAllocsRestore{},
		byID: emptyAllocTables.byID.Txn(), byJob: emptyAllocTables.byJob.Txn()}
}

// Commit writes the allocations and the per-node rows (usage, allocation
// index) derived from the loaded nodes and allocations, and makes
// everything visible.
func (r *StateRestore) Commit() {
	byNode := emptyAllocTables.byNode.Txn()
	r.nodes.insert(byNode)
	if err := r.txn.Insert(TableAllocs, &allocTables{byID: r.byID.Commit(), byJob: r.byJob.Commit(), byNode: byNode.Commit()}); err != nil {
		panic(err) // unreachable: the row's key is a constant
	}
	r.txn.Commit()
}

// Abort discards the loaded rows.
func (r *StateRestore) Abort() { r.txn.Abort() }

func (r *StateRestore) insert(table string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: restoring %s row: %w", table, err)
	}
	return nil
}

// IndexRestore loads an index table row.
func (r *StateRestore) IndexRestore(e *IndexEntry) error { return r.insert(TableIndex, e) }

// JobRestore loads a job, and records it as the job's current version.
func (r *StateRestore) JobRestore(j *structs.Job) error {
	if err := r.insert(TableJobs, j); err != nil {
		return err
	}
	return r.insert(TableJobVersions, j)
}

// JobSummaryRestore loads a job summary.
func (r *StateRestore) JobSummaryRestore(js *structs.JobSummary) error {
	return r.insert(TableJobSummary, js)
}

// NodeRestore loads a node.
func (r *StateRestore) NodeRestore(n *structs.Node) error {
	if err := r.insert(TableNodes, n); err != nil {
		return err
	}
	r.nodes.addNode(n)
	return nil
}

// EvalRestore loads an evaluation.
func (r *StateRestore) EvalRestore(e *structs.Evaluation) error { return r.insert(TableEvals, e) }

// AllocRestore loads an allocation (its Job already set by the caller).
// A second allocation with the same ID is an error.
func (r *StateRestore) AllocRestore(a *structs.Allocation) error {
	if a.ID == "" {
		return fmt.Errorf("state: restoring an allocation without an ID")
	}
	if _, dup := r.byID.Set(a.ID, a); dup {
		return fmt.Errorf("state: restoring allocation %q twice", a.ID)
	}
	r.byJob.Set(jobKey(a.Namespace, a.JobID, a.ID), struct{}{})
	r.nodes.add(a)
	return nil
}

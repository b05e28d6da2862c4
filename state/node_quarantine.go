package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Node quarantine: the node_quarantine table holds one row per node with
// recent node faults or a quarantine (structs.NodeQuarantine). The leader's
// quarantine watcher (server/quarantine) writes it; an operator's own
// eligibility or drain change of a node, and the node's deregistration,
// delete the node's row in the same transaction, so a quarantine never
// overrides what an operator set.

// UpdateNodeQuarantine writes a node's quarantine row, and the node's
// eligibility when req sets one and its event when it has one (see
// structs.NodeQuarantineUpdateRequest).
func (s *StateStore) UpdateNodeQuarantine(index uint64, req *structs.NodeQuarantineUpdateRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateNodeQuarantine(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateNodeQuarantine is StateStore.UpdateNodeQuarantine within the
// batch. The node must exist (else not_found, nothing written); a row with
// no faults and not quarantined is deleted instead of stored.
func (b *Batch) UpdateNodeQuarantine(index uint64, req *structs.NodeQuarantineUpdateRequest) error {
	b.txn.t.begin(index)
	q := req.Quarantine
	if q == nil || q.NodeID == "" {
		return structs.NewError(structs.ErrCodeInvalid, "node quarantine update without a node")
	}
	if _, err := lookup[structs.Node](b.txn, TableNodes, "node", q.NodeID, q.NodeID); err != nil {
		return err
	}
	if req.Eligibility != "" || req.NodeEvent != nil {
		err := modifyNodeTxn(b.txn, index, q.NodeID, func(n *structs.Node) error {
			switch req.Eligibility {
			case "":
			case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
				n.SchedulingEligibility = req.Eligibility
			default:
				return structs.NewError(structs.ErrCodeInvalid, "unknown scheduling eligibility %q", req.Eligibility)
			}
			if req.UpdatedAt != 0 {
				n.StatusUpdatedAt = req.UpdatedAt
			}
			n.Events = appendEvents(n.Events, []*structs.NodeEvent{req.NodeEvent}, index)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(q.Faults) == 0 && !q.Quarantined {
		if err := deleteByIDTxn(b.txn, TableNodeQuarantine, q.NodeID); err != nil {
			return err
		}
	} else {
		row := q.Copy()
		row.CreateIndex, row.ModifyIndex = index, index
		raw, err := b.txn.first(TableNodeQuarantine, q.NodeID)
		if err != nil {
			return err
		}
		if prev, ok := raw.(*structs.NodeQuarantine); ok && prev != nil {
			row.CreateIndex = prev.CreateIndex
		}
		if err := b.txn.insert(TableNodeQuarantine, row); err != nil {
			return fmt.Errorf("state: inserting node quarantine %q: %w", q.NodeID, err)
		}
		b.txn.t.add(TableNodeQuarantine)
	}
	return upsertEvalsTxn(b.txn, index, req.CreateEvals)
}

// deleteNodeQuarantineTxn removes a node's quarantine row, if any.
func deleteNodeQuarantineTxn(txn *writeTxn, nodeID string) error {
	return deleteByIDTxn(txn, TableNodeQuarantine, nodeID)
}

// NodeQuarantineByID returns a node's quarantine row, or an error
// satisfying errors.Is(err, structs.ErrNotFound) when it has none.
func (s *StateStore) NodeQuarantineByID(ws memdb.WatchSet, nodeID string) (*structs.NodeQuarantine, error) {
	return firstTxn[structs.NodeQuarantine](s.db.Txn(false), ws, TableNodeQuarantine, "node quarantine", nodeID, nodeID)
}

// NodeQuarantines returns every quarantine row, sorted by node ID.
func (s *StateStore) NodeQuarantines(ws memdb.WatchSet) ([]*structs.NodeQuarantine, error) {
	return listTxn[structs.NodeQuarantine](s.db.Txn(false), ws, TableNodeQuarantine, IndexID)
}

// NodeQuarantineRestore loads a quarantine row.
func (r *StateRestore) NodeQuarantineRestore(q *structs.NodeQuarantine) error {
	return r.insert(TableNodeQuarantine, q)
}

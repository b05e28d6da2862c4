package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// MaxNodeEvents is how many events a node keeps; older ones are dropped.
const MaxNodeEvents = 10

// UpsertNode registers a node or re-registers it, writing evals in the same
// transaction. On re-registration the stored CreateIndex, events and the
// server-owned fields (SchedulingEligibility, Drain, DrainStrategy) are
// kept; the client owns everything else.
func (s *StateStore) UpsertNode(index uint64, node *structs.Node, evals []*structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpsertNode(index, node, evals); err != nil {
		return err
	}
	return b.Commit()
}

// UpsertNode is StateStore.UpsertNode within the batch.
func (b *Batch) UpsertNode(index uint64, node *structs.Node, evals []*structs.Evaluation) error {
	b.txn.t.begin(index)
	raw, err := b.txn.first(TableNodes, node.ID)
	if err != nil {
		return fmt.Errorf("state: node lookup: %w", err)
	}
	if raw != nil {
		prev := raw.(*structs.Node)
		node.CreateIndex = prev.CreateIndex
		node.SchedulingEligibility = prev.SchedulingEligibility
		node.Drain = prev.Drain
		node.DrainStrategy = prev.DrainStrategy
		node.Events = appendEvents(prev.Events, node.Events, index)
	} else {
		node.CreateIndex = index
		node.Events = appendEvents(nil, node.Events, index)
	}
	node.ModifyIndex = index
	if err := ensureNodePoolTxn(b.txn, index, node.NodePool); err != nil {
		return err
	}
	if err := upsertNodeTxn(b.txn, node); err != nil {
		return err
	}
	return upsertEvalsTxn(b.txn, index, evals)
}

func upsertNodeTxn(txn *writeTxn, node *structs.Node) error {
	if err := txn.insert(TableNodes, node); err != nil {
		return fmt.Errorf("state: inserting node %q: %w", node.ID, err)
	}
	txn.t.add(TableNodes)
	txn.nodeAllocsNodeWritten(node)
	return nil
}

// appendEvents returns prev followed by events (each stamped with index
// where unset), keeping the newest MaxNodeEvents. prev is not modified.
func appendEvents(prev, events []*structs.NodeEvent, index uint64) []*structs.NodeEvent {
	out := make([]*structs.NodeEvent, 0, len(prev)+len(events))
	out = append(out, prev...)
	for _, e := range events {
		if e == nil {
			continue
		}
		if e.CreateIndex == 0 {
			e.CreateIndex = index
		}
		out = append(out, e)
	}
	if len(out) > MaxNodeEvents {
		out = out[len(out)-MaxNodeEvents:]
	}
	return out
}

// modifyNodeTxn writes a copy of the stored node changed by change.
func modifyNodeTxn(txn *writeTxn, index uint64, nodeID string, change func(n *structs.Node) error) error {
	prev, err := lookup[structs.Node](txn, TableNodes, "node", nodeID, nodeID)
	if err != nil {
		return err
	}
	n := prev.Copy()
	if err := change(n); err != nil {
		return err
	}
	n.ModifyIndex = index
	return upsertNodeTxn(txn, n)
}

// DeleteNodes removes nodes. Every ID must exist, or nothing is deleted.
func (s *StateStore) DeleteNodes(index uint64, nodeIDs []string) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.DeleteNodes(index, nodeIDs); err != nil {
		return err
	}
	return b.Commit()
}

// DeleteNodes is StateStore.DeleteNodes within the batch.
func (b *Batch) DeleteNodes(index uint64, nodeIDs []string) error {
	b.txn.t.begin(index)
	for _, id := range nodeIDs {
		n, err := lookup[structs.Node](b.txn, TableNodes, "node", id, id)
		if err != nil {
			return err
		}
		if err := b.txn.delete(TableNodes, n); err != nil {
			return fmt.Errorf("state: deleting node %q: %w", id, err)
		}
		b.txn.nodeAllocsNodeDeleted(id)
		b.txn.t.add(TableNodes)
		if err := deleteNodeQuarantineTxn(b.txn, id); err != nil {
			return err
		}
		if err := b.txn.deleteNodeServices(id); err != nil {
			return err
		}
	}
	return nil
}

// UpdateNodeStatus sets a node's status and StatusUpdatedAt, appends event
// (may be nil), and writes evals in the same transaction. Allocations on a
// node that goes down are left to the scheduler, which stops them as lost;
// the node's service registrations are removed at once.
func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent, evals []*structs.Evaluation) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateNodeStatus(index, nodeID, status, updatedAt, event, evals); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateNodeStatus is StateStore.UpdateNodeStatus within the batch.
func (b *Batch) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent, evals []*structs.Evaluation) error {
	b.txn.t.begin(index)
	err := modifyNodeTxn(b.txn, index, nodeID, func(n *structs.Node) error {
		n.Status = status
		n.StatusUpdatedAt = updatedAt
		n.Events = appendEvents(n.Events, []*structs.NodeEvent{event}, index)
		return nil
	})
	if err != nil {
		return err
	}
	if status == structs.NodeStatusDown {
		// A lost node's services are gone with it, as in Nomad.
		if err := b.txn.deleteNodeServices(nodeID); err != nil {
			return err
		}
	}
	return upsertEvalsTxn(b.txn, index, evals)
}

// UpdateNodeEligibility sets a node's scheduling eligibility. A draining
// node cannot be made eligible (an invalid error; nothing is written).
// The node's quarantine row, if any, is deleted: an operator's choice
// ends a quarantine (node_quarantine.go).
func (s *StateStore) UpdateNodeEligibility(index uint64, req *structs.NodeUpdateEligibilityRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateNodeEligibility(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateNodeEligibility is StateStore.UpdateNodeEligibility within the
// batch.
func (b *Batch) UpdateNodeEligibility(index uint64, req *structs.NodeUpdateEligibilityRequest) error {
	b.txn.t.begin(index)
	err := modifyNodeTxn(b.txn, index, req.NodeID, func(n *structs.Node) error {
		switch req.Eligibility {
		case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
		default:
			return structs.NewError(structs.ErrCodeInvalid, "unknown scheduling eligibility %q", req.Eligibility)
		}
		if n.DrainStrategy != nil && req.Eligibility == structs.NodeSchedulingEligible {
			return structs.NewError(structs.ErrCodeInvalid, "node %q is draining and cannot be marked eligible", n.ID)
		}
		n.SchedulingEligibility = req.Eligibility
		if req.UpdatedAt != 0 {
			n.StatusUpdatedAt = req.UpdatedAt
		}
		n.Events = appendEvents(n.Events, []*structs.NodeEvent{req.NodeEvent}, index)
		return nil
	})
	if err != nil {
		return err
	}
	// The operator decides now: any quarantine ends, its faults with it.
	if err := deleteNodeQuarantineTxn(b.txn, req.NodeID); err != nil {
		return err
	}
	return upsertEvalsTxn(b.txn, index, req.CreateEvals)
}

// UpdateNodeDrain starts a drain (DrainStrategy set: the node becomes
// draining and ineligible) or ends one (nil: not draining, and eligible
// again if MarkEligible). Like an eligibility change, it deletes the
// node's quarantine row.
func (s *StateStore) UpdateNodeDrain(index uint64, req *structs.NodeUpdateDrainRequest) error {
	b := s.Batch()
	defer b.Abort()
	if err := b.UpdateNodeDrain(index, req); err != nil {
		return err
	}
	return b.Commit()
}

// UpdateNodeDrain is StateStore.UpdateNodeDrain within the batch.
func (b *Batch) UpdateNodeDrain(index uint64, req *structs.NodeUpdateDrainRequest) error {
	b.txn.t.begin(index)
	err := modifyNodeTxn(b.txn, index, req.NodeID, func(n *structs.Node) error {
		n.DrainStrategy = req.DrainStrategy
		if req.DrainStrategy != nil {
			n.Drain = true
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		} else {
			n.Drain = false
			if req.MarkEligible {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
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
	// The operator decides now: any quarantine ends, its faults with it.
	if err := deleteNodeQuarantineTxn(b.txn, req.NodeID); err != nil {
		return err
	}
	return upsertEvalsTxn(b.txn, index, req.CreateEvals)
}

// NodeByID returns the node, or an error satisfying errors.Is(err,
// structs.ErrNotFound).
func (s *StateStore) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	return firstTxn[structs.Node](s.db.Txn(false), ws, TableNodes, "node", id, id)
}

// Nodes returns every node, sorted by ID.
func (s *StateStore) Nodes(ws memdb.WatchSet) ([]*structs.Node, error) {
	return listTxn[structs.Node](s.db.Txn(false), ws, TableNodes, IndexID)
}

// NodesByIDPrefix returns the nodes whose ID starts with prefix, sorted.
func (s *StateStore) NodesByIDPrefix(ws memdb.WatchSet, prefix string) ([]*structs.Node, error) {
	return listTxn[structs.Node](s.db.Txn(false), ws, TableNodes, IndexID+prefixSuffix, prefix)
}

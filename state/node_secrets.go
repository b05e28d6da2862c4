package state

import "github.com/drover-project/drover/structs"

// CheckNodeSecrets reports whether a client may make updates (a
// Node.UpdateAlloc): every node in secrets must exist and have that
// SecretID, and every update of a known allocation must be for an
// allocation on one of those nodes. Updates of unknown allocations pass
// (the write skips them). A refusal is a permission_denied error naming
// the node or the allocation. It opens one read transaction for the
// allocations row, then makes per node one lookup of its row and per
// update one lookup of the allocation and one of its node in secrets,
// allocating nothing per node or update unless it refuses.
func (s *StateStore) CheckNodeSecrets(updates []*structs.Allocation, secrets map[string]string) error {
	t, _, err := s.tables(nil)
	if err != nil {
		return err
	}
	for nodeID, secret := range secrets {
		row, ok := t.byNode.Get(nodeID)
		if !ok || row.Node == nil || row.Node.SecretID != secret || secret == "" {
			return structs.NewError(structs.ErrCodePermissionDenied, "node %q: missing or wrong node secret", nodeID)
		}
	}
	for _, u := range updates {
		a, ok := t.byID.Get(u.ID)
		if !ok {
			continue
		}
		if _, ok := secrets[a.NodeID]; !ok {
			return structs.NewError(structs.ErrCodePermissionDenied, "allocation %q is on node %q, whose secret the request does not carry", u.ID, a.NodeID)
		}
	}
	return nil
}

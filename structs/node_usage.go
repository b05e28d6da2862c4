package structs

// NodeUsage is what a node's non-terminal allocations use, as the state
// store keeps it: the sum of their AllocatedResources.Comparable() and
// their number. The state store updates it in the same transaction as
// every allocation write and derives it again on a snapshot restore; it is
// never sent over RPC or written to a snapshot.
type NodeUsage struct {
	NodeID string
	// Used is the sum of the resources of the live allocations.
	Used ComparableResources
	// Allocs is the number of live (non-terminal) allocations.
	Allocs int
	// ModifyIndex is the Raft index of the last write that changed Used
	// or Allocs (0 for a node with no live allocations).
	ModifyIndex uint64
}

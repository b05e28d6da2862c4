package structs

// AllocUpdateDesiredTransitionRequest sets the desired transition of
// allocations (the node drainer's migrations, Alloc.Stop) and writes
// evaluations in the same Raft entry. Each transition is merged onto the
// stored allocation at apply time, so a concurrent write to the
// allocation (a plan stopping it, a client update) is never undone by a
// stale copy. Unknown allocation IDs are skipped.
//
// Its Raft message type is AllocUpdateDesiredTransitionRequestType.
type AllocUpdateDesiredTransitionRequest struct {
	// Allocs maps allocation IDs to the transition to set. Only the
	// non-nil fields of each transition are applied.
	Allocs map[string]*DesiredTransition
	// Evals are written with the transitions (one per affected job).
	Evals []*Evaluation
	// UpdatedAt is the leader's time of the write (unix nanoseconds); it
	// becomes the allocations' ModifyTime.
	UpdatedAt int64
	WriteRequest
}

// Merge sets the non-nil fields of o on d.
func (d *DesiredTransition) Merge(o *DesiredTransition) {
	if o == nil {
		return
	}
	if o.Migrate != nil {
		d.Migrate = o.Migrate
	}
	if o.Reschedule != nil {
		d.Reschedule = o.Reschedule
	}
	if o.ForceReschedule != nil {
		d.ForceReschedule = o.ForceReschedule
	}
}

package structs

// Plan is what a scheduler proposes for one evaluation: allocations to stop
// (NodeUpdate) and to place or update (NodeAllocation), keyed by node ID.
// The leader's plan applier commits the parts that still fit.
type Plan struct {
	EvalID    string
	EvalToken string
	Priority  int
	AllAtOnce bool
	// Job is the job the placements run; allocations in NodeAllocation may
	// leave their Job nil and the applier fills it from here.
	Job            *Job
	NodeUpdate     map[string][]*Allocation
	NodeAllocation map[string][]*Allocation
	// NodePreemptions are the allocations of lower-priority jobs the
	// plan evicts to make room for its placements, by node (DesiredStatus
	// evict, PreemptedByAllocation set). The applier evicts those still
	// live and credits their resources on their node.
	NodePreemptions map[string][]*Allocation
	Annotations     *PlanAnnotations
	// SnapshotIndex is the state index the scheduler planned against.
	SnapshotIndex uint64
	// Deployment is the deployment the plan creates or updates (nil:
	// none); DeploymentUpdates change other deployments' status (an
	// older version's, cancelled). Only jobs with update blocks have them.
	Deployment        *Deployment `codec:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate
}

// PlanAnnotations explain a dry-run plan to users.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
	// PreemptedAllocs are the allocations the plan would evict.
	PreemptedAllocs []*AllocListStub
}

// DesiredUpdates counts what a plan would do for one group.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}

// AppendStoppedAlloc adds a stop for alloc with the given description and
// optional client status (for example lost).
func (p *Plan) AppendStoppedAlloc(alloc *Allocation, desc, clientStatus string) *Allocation {
	n := alloc.CopySkipJob()
	n.DesiredStatus = AllocDesiredStatusStop
	n.DesiredDescription = desc
	if clientStatus != "" {
		n.ClientStatus = clientStatus
	}
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[alloc.NodeID] = append(p.NodeUpdate[alloc.NodeID], n)
	return n
}

// AppendPreemptedAlloc records the eviction of alloc (as read from the
// state) to make room for the allocation preemptingID.
func (p *Plan) AppendPreemptedAlloc(alloc *Allocation, preemptingID string) {
	n := alloc.CopySkipJob()
	n.DesiredStatus = AllocDesiredStatusEvict
	n.DesiredDescription = "Preempted by alloc ID " + preemptingID
	n.PreemptedByAllocation = preemptingID
	if p.NodePreemptions == nil {
		p.NodePreemptions = map[string][]*Allocation{}
	}
	p.NodePreemptions[alloc.NodeID] = append(p.NodePreemptions[alloc.NodeID], n)
}

// AppendAlloc adds a placement or update.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && len(p.NodePreemptions) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// PlanResult says what the applier committed. When part of the plan was
// rejected, RefreshIndex is the index the scheduler must wait for before it
// retries the rest.
type PlanResult struct {
	NodeUpdate     map[string][]*Allocation
	NodeAllocation map[string][]*Allocation
	// NodePreemptions are the evictions committed: the plan's, less those
	// already terminal or gone when it was applied.
	NodePreemptions map[string][]*Allocation
	RefreshIndex    uint64
	AllocIndex      uint64
	// RejectedNodes lists the nodes whose part of the plan was refused.
	RejectedNodes []string
	// Deployment and DeploymentUpdates are the plan's, committed with
	// whatever part of it was.
	Deployment        *Deployment `codec:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate
}

// IsNoOp reports whether nothing was committed.
func (r *PlanResult) IsNoOp() bool {
	return len(r.NodeUpdate) == 0 && len(r.NodeAllocation) == 0 && r.Deployment == nil && len(r.DeploymentUpdates) == 0
}

// FullCommit reports whether everything in plan was committed, and the
// counts expected and committed.
func (r *PlanResult) FullCommit(plan *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for name, allocs := range plan.NodeAllocation {
		expected += len(allocs)
		actual += len(r.NodeAllocation[name])
	}
	return expected == actual, expected, actual
}

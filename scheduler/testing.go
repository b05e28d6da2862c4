package scheduler

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Harness is a Planner for tests and benchmarks. It records everything a
// scheduler asks for and applies each plan to a real *state.StateStore
// (UpsertPlanResults at increasing indexes), so a test can run a scheduler
// and then read the cluster it produced.
//
// Set Reject to refuse part or all of a plan, as the leader's plan applier
// does when nodes filled up meanwhile: the refused nodes' changes are
// dropped, the rest is applied, and the result carries a RefreshIndex with
// a new snapshot, which exercises the scheduler's retry path.
type Harness struct {
	State *state.StateStore
	// Now is the clock given to schedulers built by the harness.
	Now func() time.Time
	// Logger is given to schedulers built by the harness.
	Logger hclog.Logger
	// Reject, when set, returns the IDs of the nodes whose part of plan is
	// refused; attempt is the number of plans the harness received before.
	Reject func(plan *structs.Plan, attempt int) []string

	mu           sync.Mutex
	index        uint64                // last index used; guarded by mu
	Plans        []*structs.Plan       // every submitted plan; guarded by mu
	Results      []*structs.PlanResult // the result of each plan; guarded by mu
	Evals        []*structs.Evaluation // UpdateEval calls; guarded by mu
	CreateEvals  []*structs.Evaluation // CreateEval calls; guarded by mu
	ReblockEvals []*structs.Evaluation // ReblockEval calls; guarded by mu
}

// HarnessEpoch is the harness's default fixed time.
var HarnessEpoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// NewHarness returns a harness over an empty state store, at index 1000,
// with a clock fixed at HarnessEpoch.
func NewHarness() (*Harness, error) {
	s, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	return &Harness{State: s, index: 1000, Now: func() time.Time { return HarnessEpoch }, Logger: hclog.NewNullLogger()}, nil
}

// NextIndex returns a fresh Raft index for a write.
func (h *Harness) NextIndex() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.index++
	return h.index
}

// Snapshot returns a read-only view of the current state.
func (h *Harness) Snapshot() (State, error) {
	snap, err := h.State.Snapshot()
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// Process builds the scheduler for eval's type on a fresh snapshot and
// runs it.
func (h *Harness) Process(eval *structs.Evaluation) error {
	snap, err := h.Snapshot()
	if err != nil {
		return err
	}
	sched, err := NewScheduler(eval.Type, h.Logger, snap, h, h.Now)
	if err != nil {
		return err
	}
	return sched.Process(eval)
}

// SubmitPlan applies plan (less any nodes Reject refuses) to the store.
func (h *Harness) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	h.mu.Lock()
	attempt := len(h.Plans)
	h.Plans = append(h.Plans, plan)
	h.mu.Unlock()

	rejected := map[string]bool{}
	if h.Reject != nil {
		for _, id := range h.Reject(plan, attempt) {
			rejected[id] = true
		}
	}
	result := &structs.PlanResult{NodeUpdate: map[string][]*structs.Allocation{}, NodeAllocation: map[string][]*structs.Allocation{},
		Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}
	req := &structs.ApplyPlanResultsRequest{Job: plan.Job, EvalID: plan.EvalID, UpdatedAt: h.Now().UnixNano(),
		Deployment: plan.Deployment.Copy(), DeploymentUpdates: plan.DeploymentUpdates}
	for _, node := range sortedKeys(plan.NodeUpdate) {
		if !rejected[node] {
			result.NodeUpdate[node] = plan.NodeUpdate[node]
			req.AllocsStopped = append(req.AllocsStopped, copyAllocs(plan.NodeUpdate[node])...)
		}
	}
	for _, node := range sortedKeys(plan.NodePreemptions) {
		if !rejected[node] {
			if result.NodePreemptions == nil {
				result.NodePreemptions = map[string][]*structs.Allocation{}
			}
			result.NodePreemptions[node] = plan.NodePreemptions[node]
			req.AllocsStopped = append(req.AllocsStopped, copyAllocs(plan.NodePreemptions[node])...)
		}
	}
	for _, node := range sortedKeys(plan.NodeAllocation) {
		if !rejected[node] {
			result.NodeAllocation[node] = plan.NodeAllocation[node]
			req.AllocsUpdated = append(req.AllocsUpdated, copyAllocs(plan.NodeAllocation[node])...)
		}
	}
	index := h.NextIndex()
	if err := h.State.UpsertPlanResults(index, req); err != nil {
		return nil, nil, fmt.Errorf("harness: applying plan: %w", err)
	}
	result.AllocIndex = index
	h.mu.Lock()
	h.Results = append(h.Results, result)
	h.mu.Unlock()
	if len(rejected) == 0 {
		return result, nil, nil
	}
	result.RefreshIndex = index
	snap, err := h.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return result, snap, nil
}

// copyAllocs copies allocations before the store takes ownership, so the
// recorded plan stays as the scheduler submitted it.
func copyAllocs(in []*structs.Allocation) []*structs.Allocation {
	out := make([]*structs.Allocation, len(in))
	for i, a := range in {
		out[i] = a.Copy()
	}
	return out
}

// UpdateEval records the evaluation and writes it to the store.
func (h *Harness) UpdateEval(e *structs.Evaluation) error {
	h.mu.Lock()
	h.Evals = append(h.Evals, e)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// CreateEval records the evaluation and writes it to the store.
func (h *Harness) CreateEval(e *structs.Evaluation) error {
	h.mu.Lock()
	h.CreateEvals = append(h.CreateEvals, e)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// ReblockEval records the evaluation and writes it to the store.
func (h *Harness) ReblockEval(e *structs.Evaluation) error {
	h.mu.Lock()
	h.ReblockEvals = append(h.ReblockEvals, e)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// LastEval returns the last evaluation recorded by UpdateEval, or nil.
func (h *Harness) LastEval() *structs.Evaluation {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.Evals) == 0 {
		return nil
	}
	return h.Evals[len(h.Evals)-1]
}

// PlanAllocs flattens a plan's placements and updates, sorted by name.
func PlanAllocs(plan *structs.Plan) []*structs.Allocation {
	var out []*structs.Allocation
	for _, as := range plan.NodeAllocation {
		out = append(out, as...)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].ID < out[j].ID
	})
	return out
}

// PlanStops flattens a plan's stops, sorted by name.
func PlanStops(plan *structs.Plan) []*structs.Allocation {
	var out []*structs.Allocation
	for _, as := range plan.NodeUpdate {
		out = append(out, as...)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].ID < out[j].ID
	})
	return out
}

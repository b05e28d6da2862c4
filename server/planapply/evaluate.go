package planapply

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// parallelThreshold is the number of nodes in a plan above which nodes are
// checked on several goroutines.
const parallelThreshold = 32

// EvaluatePlan checks every node's part of plan against snap and returns
// the part that fits, listing refused nodes in RejectedNodes. It does not
// set RefreshIndex or AllocIndex. With plan.AllAtOnce, one refused node
// refuses the whole plan.
func EvaluatePlan(snap *state.StateSnapshot, plan *structs.Plan) (*structs.PlanResult, error) {
	return evaluatePlan(snap, nil, plan)
}

// inflight is what the commits still in flight add to each node: their
// placements, by node ID. A plan is checked as if they were all already
// applied (their stops are not credited: see Applier).
type inflight []map[string][]*structs.Allocation

// onNode returns the in-flight placements on nodeID that existing does not
// hold already (an in-place update, or a commit that was applied after the
// snapshot was taken, must not count twice).
func (f inflight) onNode(nodeID string, existing []*structs.Allocation) []*structs.Allocation {
	var extra []*structs.Allocation
	var seen map[string]struct{}
	for _, m := range f {
		for _, a := range m[nodeID] {
			if seen == nil {
				seen = make(map[string]struct{}, len(existing))
				for _, e := range existing {
					seen[e.ID] = struct{}{}
				}
			}
			if _, dup := seen[a.ID]; dup {
				continue
			}
			seen[a.ID] = struct{}{}
			extra = append(extra, a)
		}
	}
	return extra
}

// evaluatePlan is EvaluatePlan with the in-flight placements counted.
func evaluatePlan(snap *state.StateSnapshot, pending inflight, plan *structs.Plan) (*structs.PlanResult, error) {
	nodeIDs := planNodes(plan)
	fits := make([]bool, len(nodeIDs))
	errs := make([]error, len(nodeIDs))
	check := func(i int) { fits[i], _, errs[i] = evaluateNode(snap, pending, plan, nodeIDs[i]) }

	if len(nodeIDs) < parallelThreshold {
		for i := range nodeIDs {
			check(i)
		}
	} else {
		parallelFor(len(nodeIDs), runtime.GOMAXPROCS(0), check)
	}

	result := &structs.PlanResult{
		NodeUpdate:     map[string][]*structs.Allocation{},
		NodeAllocation: map[string][]*structs.Allocation{},
	}
	for i, id := range nodeIDs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if !fits[i] {
			result.RejectedNodes = append(result.RejectedNodes, id)
			continue
		}
		if u := plan.NodeUpdate[id]; len(u) > 0 {
			result.NodeUpdate[id] = u
		}
		if a := plan.NodeAllocation[id]; len(a) > 0 {
			result.NodeAllocation[id] = a
		}
	}
	if plan.AllAtOnce && len(result.RejectedNodes) > 0 {
		return &structs.PlanResult{RejectedNodes: result.RejectedNodes}, nil
	}
	return result, nil
}

// planNodes lists every node the plan touches, once.
func planNodes(plan *structs.Plan) []string {
	seen := make(map[string]struct{}, len(plan.NodeUpdate)+len(plan.NodeAllocation))
	out := make([]string, 0, len(seen))
	for _, m := range []map[string][]*structs.Allocation{plan.NodeUpdate, plan.NodeAllocation} {
		for id := range m {
			if _, ok := seen[id]; !ok {
				seen[id] = struct{}{}
				out = append(out, id)
			}
		}
	}
	return out
}

// parallelFor runs f(0..n-1) on up to workers goroutines.
func parallelFor(n, workers int, f func(int)) {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// evaluateNode reports whether the plan's part for one node fits, and if
// not, why.
func evaluateNode(snap *state.StateSnapshot, pending inflight, plan *structs.Plan, nodeID string) (bool, string, error) {
	placements := plan.NodeAllocation[nodeID]
	if len(placements) == 0 {
		return true, "", nil // stops always fit
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		if structs.CodeOf(err) == structs.ErrCodeNotFound {
			return false, "node does not exist", nil
		}
		return false, "", err
	}
	if node.Status != structs.NodeStatusReady {
		return false, "node is not ready for placements", nil
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	if extra := pending.onNode(nodeID, existing); len(extra) > 0 {
		existing = append(existing[:len(existing):len(existing)], extra...)
	}
	if node.Drain || node.SchedulingEligibility == structs.NodeSchedulingIneligible {
		if reason := newPlacement(existing, placements); reason != "" {
			return false, reason, nil
		}
	}
	return fitsNode(node, existing, plan.NodeUpdate[nodeID], placements)
}

// newPlacement returns a reason if any placement is not an update of an
// allocation already on the node.
func newPlacement(existing, placements []*structs.Allocation) string {
	onNode := make(map[string]struct{}, len(existing))
	for _, a := range existing {
		onNode[a.ID] = struct{}{}
	}
	for _, p := range placements {
		if _, ok := onNode[p.ID]; !ok {
			return "node is draining or ineligible"
		}
	}
	return ""
}

// fitsNode sums what would run on the node after the plan and compares it
// with the node's capacity less its reserved share.
func fitsNode(node *structs.Node, existing, stops, placements []*structs.Allocation) (bool, string, error) {
	removed := make(map[string]struct{}, len(stops)+len(placements))
	for _, a := range stops {
		removed[a.ID] = struct{}{}
	}
	for _, a := range placements {
		removed[a.ID] = struct{}{}
	}
	var used structs.ComparableResources
	for _, a := range existing {
		if _, gone := removed[a.ID]; gone || a.TerminalStatus() {
			continue
		}
		used.Add(a.AllocatedResources.Comparable())
	}
	for _, a := range placements {
		used.Add(a.AllocatedResources.Comparable())
	}
	avail := available(node)
	if avail.DiskMB == 0 {
		used.DiskMB = 0 // a node that reports no disk is not checked for it
	}
	if ok, dim := avail.Superset(used); !ok {
		return false, fmt.Sprintf("resources exhausted: %s", dim), nil
	}
	return true, "", nil
}

// available is the node's capacity less its reserved share.
func available(node *structs.Node) structs.ComparableResources {
	var c structs.ComparableResources
	if r := node.NodeResources; r != nil {
		c.CPU, c.MemoryMB, c.DiskMB = r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB
	}
	if r := node.ReservedResources; r != nil {
		c.Subtract(structs.ComparableResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB})
	}
	return c
}

package planapply

import (
	"fmt"
	"runtime"
	"slices"
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

// count is the number of in-flight placements on nodeID.
func (f inflight) count(nodeID string) int {
	n := 0
	for _, m := range f {
		n += len(m[nodeID])
	}
	return n
}

// onNode returns the in-flight placements on the node by ID, the first
// commit's version of each. An allocation the snapshot already holds on
// the node (an in-place update, or a commit applied after the snapshot was
// taken) maps to nil: it is counted once, as the snapshot has it.
func (f inflight) onNode(held *heldOn) (map[string]*structs.Allocation, error) {
	var out map[string]*structs.Allocation
	for _, m := range f {
		for _, a := range m[held.nodeID] {
			if _, dup := out[a.ID]; dup {
				continue
			}
			_, found, err := held.find(a.ID)
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = map[string]*structs.Allocation{}
			}
			if found {
				out[a.ID] = nil
			} else {
				out[a.ID] = a
			}
		}
	}
	return out, nil
}

// heldOn finds, by ID, the allocations a snapshot holds on one node
// (terminal ones too): by one lookup per ID, or from one read of the
// node's allocations when the plan probes for more IDs than that read
// would cost.
type heldOn struct {
	snap   *state.StateSnapshot
	nodeID string
	scan   bool
	byID   map[string]*structs.Allocation // the node's allocations, with scan
}

// lookupCost is how many of a node's allocations can be read and indexed
// by ID in the time of one lookup by ID: a node is read whole when its
// probes times lookupCost exceed its live allocations. The state reads a
// node's allocations from its row's list, one lookup by ID each, which is
// what state.LookupAlloc costs too, so reading the node pays only when the
// plan probes for more IDs than it holds (a large placement on an empty
// node, say). Terminal allocations make the read dearer than estimated.
const lookupCost = 1

func newHeldOn(snap *state.StateSnapshot, nodeID string, scan bool) (*heldOn, error) {
	h := &heldOn{snap: snap, nodeID: nodeID, scan: scan}
	if scan {
		allocs, err := snap.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, err
		}
		h.byID = make(map[string]*structs.Allocation, len(allocs))
		for _, a := range allocs {
			h.byID[a.ID] = a
		}
	}
	return h, nil
}

// find returns the allocation with the given ID if the snapshot holds it
// on the node.
func (h *heldOn) find(id string) (*structs.Allocation, bool, error) {
	if h.scan {
		a, found := h.byID[id]
		return a, found, nil
	}
	a, found, err := h.snap.LookupAlloc(nil, id)
	if err != nil || !found || a.NodeID != h.nodeID {
		return nil, false, err
	}
	return a, true, nil
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
		NodeUpdate:        map[string][]*structs.Allocation{},
		NodeAllocation:    map[string][]*structs.Allocation{},
		Deployment:        plan.Deployment,
		DeploymentUpdates: plan.DeploymentUpdates,
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
		if v := plan.NodePreemptions[id]; len(v) > 0 {
			live, err := livePreemptions(snap, id, v)
			if err != nil {
				return nil, err
			}
			if len(live) > 0 {
				if result.NodePreemptions == nil {
					result.NodePreemptions = map[string][]*structs.Allocation{}
				}
				result.NodePreemptions[id] = live
			}
		}
	}
	if plan.AllAtOnce && len(result.RejectedNodes) > 0 {
		return &structs.PlanResult{RejectedNodes: result.RejectedNodes, Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}, nil
	}
	return result, nil
}

// livePreemptions returns the evictions of preempted whose allocations
// the snapshot still holds live on the node: one already stopped or gone
// needs no eviction (its resources are free either way).
func livePreemptions(snap *state.StateSnapshot, nodeID string, preempted []*structs.Allocation) ([]*structs.Allocation, error) {
	out := make([]*structs.Allocation, 0, len(preempted))
	for _, p := range preempted {
		a, found, err := snap.LookupAlloc(nil, p.ID)
		if err != nil {
			return nil, err
		}
		if found && a.NodeID == nodeID && !a.TerminalStatus() {
			out = append(out, p)
		}
	}
	return out, nil
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
		// A node that is down takes no placement, but its allocations may
		// still be updated (marked unknown, given a follow-up): they add
		// nothing to it.
		if ok, err := onlyExisting(snap, nodeID, placements); err != nil || !ok {
			return false, "node is not ready for placements", err
		}
		return true, "", nil
	}
	usage, err := snap.NodeUsage(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	stops := plan.NodeUpdate[nodeID]
	if evicted := plan.NodePreemptions[nodeID]; len(evicted) > 0 {
		// Evictions free what they hold as stops do.
		stops = append(slices.Clip(stops), evicted...)
	}
	probes := len(stops) + len(placements) + pending.count(nodeID)
	held, err := newHeldOn(snap, nodeID, probes*lookupCost > usage.Allocs)
	if err != nil {
		return false, "", err
	}
	onlyUpdates := node.Drain || node.SchedulingEligibility == structs.NodeSchedulingIneligible
	used, reason, err := usedAfter(usage.Used, held, pending, stops, placements, onlyUpdates)
	if err != nil || reason != "" {
		return false, reason, err
	}
	if reason, err := portsFit(snap, node, pending, held, stops, placements); err != nil || reason != "" {
		return false, reason, err
	}
	return fitsNode(node, used)
}

// onlyExisting reports whether every allocation in placements is one the
// node already holds (an update, not a placement).
func onlyExisting(snap *state.StateSnapshot, nodeID string, placements []*structs.Allocation) (bool, error) {
	for _, a := range placements {
		stored, found, err := snap.LookupAlloc(nil, a.ID)
		if err != nil || !found || stored.NodeID != nodeID || stored.TerminalStatus() {
			return false, err
		}
	}
	return true, nil
}

// portsFit checks the plan's ports on node under the same optimistic
// rule as CPU and memory: the node's live allocations in the snapshot, less
// those the plan stops or replaces, plus the in-flight placements, plus
// the plan's placements one by one; no port may be taken twice on one
// address, nor a reserved one. It returns the first collision, as Nomad
// words it, or "". A plan whose placements on the node have no ports costs
// one pass over them.
func portsFit(snap *state.StateSnapshot, node *structs.Node, pending inflight, held *heldOn, stops, placements []*structs.Allocation) (string, error) {
	asks := false
	for _, a := range placements {
		if a.HasPorts() {
			asks = true
			break
		}
	}
	if !asks {
		return "", nil
	}
	replaced := make(map[string]struct{}, len(stops)+len(placements))
	for _, a := range stops {
		replaced[a.ID] = struct{}{}
	}
	for _, a := range placements {
		replaced[a.ID] = struct{}{}
	}
	taken, err := snap.NodePorts(nil, node.ID)
	if err != nil {
		return "", err
	}
	u := structs.NewPortUsageOn(node, taken)
	if taken != nil {
		for _, h := range taken.Holders {
			if _, gone := replaced[h.AllocID]; gone {
				u.RemoveKeys(h.Ports)
			}
		}
	}
	extra, err := pending.onNode(held)
	if err != nil {
		return "", err
	}
	for id, a := range extra {
		if _, gone := replaced[id]; !gone && a != nil && !a.TerminalStatus() {
			u.Add(a)
		}
	}
	for _, a := range placements {
		if a.TerminalStatus() {
			continue
		}
		if reason := u.Collision(a); reason != "" {
			return "network: " + reason, nil
		}
		u.Add(a)
	}
	return "", nil
}

// usedAfter is what would run on held's node once the plan and the
// commits in flight are applied:
//
//	usage: the node's live allocations in the snapshot
//	- the live allocations on the node the plan stops or replaces (once each)
//	+ the in-flight placements the snapshot does not hold on the node and
//	  the plan does not stop or replace, when live
//	+ every placement of the plan.
//
// With onlyUpdates (a draining or ineligible node), a placement that is
// not already on the node (in the snapshot or in flight) is refused with a
// reason.
func usedAfter(usage structs.ComparableResources, held *heldOn, pending inflight, stops, placements []*structs.Allocation, onlyUpdates bool) (structs.ComparableResources, string, error) {
	used := usage
	extra, err := pending.onNode(held)
	if err != nil {
		return used, "", err
	}
	var freed map[string]struct{} // live allocations already subtracted
	replace := func(a *structs.Allocation, placement bool) (string, error) {
		stored, onNode, err := held.find(a.ID)
		if err != nil {
			return "", err
		}
		queued, inFlight := extra[a.ID]
		if placement && onlyUpdates && !onNode && !inFlight {
			return "node is draining or ineligible", nil
		}
		if queued != nil {
			extra[a.ID] = nil // replaced: not counted
		}
		if !onNode || stored.TerminalStatus() {
			return "", nil
		}
		if _, dup := freed[a.ID]; dup {
			return "", nil
		}
		if freed == nil {
			freed = map[string]struct{}{}
		}
		freed[a.ID] = struct{}{}
		used.Subtract(stored.AllocatedResources.Comparable())
		return "", nil
	}
	for _, a := range stops {
		if _, err := replace(a, false); err != nil {
			return used, "", err
		}
	}
	for _, a := range placements {
		if reason, err := replace(a, true); err != nil || reason != "" {
			return used, reason, err
		}
		used.Add(a.AllocatedResources.Comparable())
	}
	for _, a := range extra {
		if a != nil && !a.TerminalStatus() {
			used.Add(a.AllocatedResources.Comparable())
		}
	}
	return used, "", nil
}

// fitsNode compares what would run on the node with its capacity less its
// reserved share.
func fitsNode(node *structs.Node, used structs.ComparableResources) (bool, string, error) {
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

package scheduler

import (
	"cmp"
	"slices"

	"github.com/drover-project/drover/structs"
)

// Preemption: when a placement fits on no node and the scheduler
// configuration enables preemption for the job's type, the scheduler looks
// for a node where evicting allocations of jobs at least
// preemptionPriorityDelta priority levels lower makes room (CPU, memory,
// disk, and the group's ports). It runs only after the stack found no
// node, so placements that fit never pay for it.
//
// On each candidate node that passes the group's static checks, the
// victims are chosen from the eligible allocations, lowest priority
// first: within a priority, one that alone covers what is still missing
// (the smallest such), else the one that covers most of it; then any
// victim the others make unnecessary is given back, highest priority
// first. Among the nodes where that frees enough, the one with the fewest
// victims wins, then the lowest highest victim priority, then the lowest
// sum of priorities, then the evaluation's order.

// preemptionPriorityDelta is how much lower a job's priority must be for
// its allocations to be evicted (Nomad's rule).
const preemptionPriorityDelta = 10

// victim is an allocation that may be evicted, with its job's priority.
type victim struct {
	alloc    *structs.Allocation
	priority int
	res      structs.ComparableResources
}

// preemption is the eviction plan for one node.
type preemption struct {
	node    *nodeInfo
	victims []victim
	maxPrio int
	sumPrio int
}

// better reports whether p is a better choice than q (nil q: any p is).
func (p *preemption) better(q *preemption) bool {
	if q == nil {
		return true
	}
	if c := cmp.Compare(len(p.victims), len(q.victims)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(p.maxPrio, q.maxPrio); c != 0 {
		return c < 0
	}
	return p.sumPrio < q.sumPrio
}

// SelectPreempting is Select for a group no node has room for: it picks a
// node where evicting lower-priority allocations makes room, evicts them
// in the context (not yet in the plan: see appendPreemptions) and returns
// the ranked node, with ports picked, and the victims. It looks at every
// candidate and its allocations: it is the slow path.
func (s *stack) SelectPreempting(tg *structs.TaskGroup, g int) (rankedNode, []*structs.Allocation, bool) {
	var best *preemption
	for i := 0; i < s.cands.Len(); i++ {
		if p := s.preemptionOn(tg, g, s.cands.At(i)); p != nil && p.better(best) {
			best = p
		}
	}
	return s.evict(tg, g, best)
}

// SelectOnPreempting is SelectPreempting over node n alone (the system
// scheduler).
func (s *stack) SelectOnPreempting(tg *structs.TaskGroup, g int, n *nodeInfo) (rankedNode, []*structs.Allocation, bool) {
	return s.evict(tg, g, s.preemptionOn(tg, g, n))
}

// evict applies p in the context and ranks its node for the group.
func (s *stack) evict(tg *structs.TaskGroup, g int, p *preemption) (rankedNode, []*structs.Allocation, bool) {
	if p == nil || s.ctx.err != nil {
		return rankedNode{}, nil, false
	}
	out := make([]*structs.Allocation, len(p.victims))
	for i, v := range p.victims {
		s.ctx.evict(v.alloc, v.res)
		out[i] = v.alloc
	}
	ch := s.chain(tg, g)
	r := rankedNode{node: p.node, ask: newGroupAsk(tg).on(p.node.node)}
	if ch.ports != nil {
		offer, dim := ch.ports.assign(s.ctx.loadPorts(p.node), s.ctx.rng)
		if dim != "" { // cannot happen: preemptionOn checked the ports
			return rankedNode{}, nil, false
		}
		r.ports = offer
	}
	return r, out, true
}

// preemptionOn returns the victims that make room for one allocation of
// tg on n, or nil when the node does not pass the group's checks or no
// set of eligible allocations frees enough.
func (s *stack) preemptionOn(tg *structs.TaskGroup, g int, n *nodeInfo) *preemption {
	ctx := s.ctx
	ch := s.chain(tg, g)
	if !s.feasibleOn(tg, g, n) || (ch.hostsScope != noDistinctHosts && ctx.groupCount(n, ch.hostsScope) > 0) || ch.properties {
		return nil
	}
	ctx.load(n)
	need := newGroupAsk(tg).on(n.node)
	cands := ctx.preemptible(n)
	if len(cands) == 0 {
		return nil
	}
	var ports *structs.PortUsage
	if ch.ports != nil {
		ports = ctx.loadPorts(n)
	}
	// fits reports whether the group fits once the chosen victims are
	// gone; their ports are taken out of ports while it checks.
	fits := func(chosen []victim) bool {
		free := n.capacity
		free.Subtract(n.used)
		for _, v := range chosen {
			free.Add(v.res)
		}
		if ok, _ := free.Superset(need); !ok {
			return false
		}
		if ports == nil {
			return true
		}
		for _, v := range chosen {
			ports.Remove(v.alloc)
		}
		ok := ch.ports.fits(ports) == ""
		for _, v := range chosen {
			ports.Add(v.alloc)
		}
		return ok
	}
	var chosen []victim
	for len(cands) > 0 && !fits(chosen) {
		i := pickVictim(cands, missing(n, need, chosen), ports != nil)
		chosen = append(chosen, cands[i])
		cands = slices.Delete(cands, i, i+1)
	}
	if !fits(chosen) {
		return nil
	}
	// Give back what the others make unnecessary, highest priority (then
	// smallest) first.
	order := slices.Clone(chosen)
	slices.SortStableFunc(order, func(a, b victim) int {
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		return cmp.Compare(size(a.res), size(b.res))
	})
	for _, v := range order {
		rest := slices.DeleteFunc(slices.Clone(chosen), func(x victim) bool { return x.alloc == v.alloc })
		if fits(rest) {
			chosen = rest
		}
	}
	p := &preemption{node: n, victims: chosen}
	for _, v := range chosen {
		p.maxPrio = max(p.maxPrio, v.priority)
		p.sumPrio += v.priority
	}
	return p
}

// preemptible lists n's live allocations of other jobs that the
// evaluation's job may evict (its priority at least
// preemptionPriorityDelta higher than theirs), not already stopped or
// evicted by the plan, lowest priority first.
func (c *evalContext) preemptible(n *nodeInfo) []victim {
	allocs, err := c.state.AllocsByNode(nil, n.node.ID)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return nil
	}
	var out []victim
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		if _, stopped := c.stopped[a.ID]; stopped {
			continue
		}
		if a.JobID == c.job.ID && a.Namespace == c.job.Namespace {
			continue // the job's own allocations are the reconciler's
		}
		prio, ok := c.allocPriority(a)
		if !ok || c.job.Priority-prio < preemptionPriorityDelta {
			continue
		}
		out = append(out, victim{alloc: a, priority: prio, res: a.AllocatedResources.Comparable()})
	}
	slices.SortStableFunc(out, func(a, b victim) int { return cmp.Compare(a.priority, b.priority) })
	return out
}

// allocPriority is the priority of a's job: the version it runs, or the
// stored job when the allocation does not carry it.
func (c *evalContext) allocPriority(a *structs.Allocation) (int, bool) {
	if a.Job != nil {
		return a.Job.Priority, true
	}
	j, err := c.state.JobByID(nil, a.Namespace, a.JobID)
	if err != nil {
		return 0, false
	}
	return j.Priority, true
}

// missing is what the group still lacks on n once chosen are evicted
// (zero in every dimension that has room).
func missing(n *nodeInfo, need structs.ComparableResources, chosen []victim) structs.ComparableResources {
	free := n.capacity
	free.Subtract(n.used)
	for _, v := range chosen {
		free.Add(v.res)
	}
	m := need
	m.Subtract(free)
	m.CPU, m.MemoryMB, m.DiskMB = max(m.CPU, 0), max(m.MemoryMB, 0), max(m.DiskMB, 0)
	return m
}

// pickVictim returns the index in cands (sorted by priority) of the next
// allocation to evict, from the lowest priority present: one that alone
// covers miss, the smallest such; else the one covering most of it. When
// nothing is missing but ports (withPorts), the first that holds ports.
func pickVictim(cands []victim, miss structs.ComparableResources, withPorts bool) int {
	lowest := cands[0].priority
	best, bestCover, covers := -1, -1.0, false
	for i, v := range cands {
		if v.priority != lowest {
			break
		}
		if miss == (structs.ComparableResources{}) {
			if !withPorts || v.alloc.HasPorts() {
				return i
			}
			continue
		}
		all, c := cover(v.res, miss)
		switch {
		case all && (!covers || size(v.res) < size(cands[best].res)):
			best, covers = i, true
		case !all && !covers && c > bestCover:
			best, bestCover = i, c
		}
	}
	if best < 0 {
		return 0
	}
	return best
}

// cover reports whether have covers miss in every dimension, and how much
// of miss it covers (the sum over missing dimensions of the share
// covered, each at most 1).
func cover(have, miss structs.ComparableResources) (bool, float64) {
	all, c := true, 0.0
	for _, d := range [...][2]int64{{have.CPU, miss.CPU}, {have.MemoryMB, miss.MemoryMB}, {have.DiskMB, miss.DiskMB}} {
		if d[1] <= 0 {
			continue
		}
		if d[0] < d[1] {
			all = false
			c += float64(d[0]) / float64(d[1])
		} else {
			c++
		}
	}
	return all, c
}

// size orders allocations by what they hold (memory first, then CPU).
func size(r structs.ComparableResources) int64 { return r.MemoryMB<<20 + r.CPU + r.DiskMB>>10 }

// evict frees what a live allocation a holds on its node for the rest of
// the evaluation, as a stop does; appendPreemptions records it in the
// plan once the preempting allocation exists.
func (c *evalContext) evict(a *structs.Allocation, res structs.ComparableResources) {
	c.stopped[a.ID] = struct{}{}
	n := c.node(a.NodeID)
	if n == nil {
		return
	}
	n.used.Subtract(res)
	if n.ports != nil {
		n.ports.Remove(a)
	}
}

// appendPreemptions records the evictions made for the placement a.
func (c *evalContext) appendPreemptions(a *structs.Allocation, victims []*structs.Allocation) {
	a.PreemptedAllocations = make([]string, len(victims))
	for i, v := range victims {
		c.plan.AppendPreemptedAlloc(v, a.ID)
		a.PreemptedAllocations[i] = v.ID
	}
}

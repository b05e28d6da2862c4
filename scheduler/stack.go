package scheduler

import (
	"math"
	"slices"

	"github.com/drover-project/drover/structs"
)

// Limits of the limit stage.
const (
	// batchLimit: batch jobs sample two feasible nodes and take the better
	// ("power of two choices").
	batchLimit = 2
	// skipThreshold and maxSkip: nodes scoring below the threshold (only
	// penalties make a score negative) are passed over, up to maxSkip per
	// placement, while better nodes remain.
	skipThreshold = 0.0
	maxSkip       = 3
	// affinityLimit: a group with affinities ranks at least this many
	// nodes per placement (Nomad's default for such groups, without its
	// "or the group's count", which makes placement quadratic in the
	// count), so that the nodes it prefers, which may be few, are likely
	// among those ranked. A spread alone keeps the usual limit: its
	// values divide all the nodes, so a small sample sees the under-used
	// ones, and nodes of over-used values score below zero and are
	// passed over.
	affinityLimit = 100
)

// stack selects a node for one allocation of a task group. Each group gets
// its own chain of iterators, built on first use and kept for the whole
// evaluation with its per-node caches and its own source ring over the
// shuffled candidates.
type stack struct {
	ctx    *evalContext
	limit  int
	drop   dropMode // what sources unlink (see sourceIterator)
	chains map[string]*groupChain
	sticky map[string]*groupChain // SelectSticky's chains, over one node
	cands  *shuffledNodes         // the candidates, in the evaluation's random order

	nodesAvailable map[string]int // candidate nodes per datacenter
	nodesInPool    int
}

// groupChain is one group's wired iterator chain.
type groupChain struct {
	source  *sourceIterator
	checks  []*checkIterator // static checks, in order, for class eligibility
	penalty *penaltyIterator
	top     rankIterator
	escaped bool      // some check depends on more than the computed class
	one     nodeSlice // SelectOn's source: one node
	oneList nodeList  // one, boxed once
	ports   *portAsk  // the group's ports; nil when it asks for none
	// rec records the ranked nodes' scores for the allocation metrics;
	// nil unless the group has affinities or spreads.
	rec *scoreRecorder
	// hostsScope is the distinct_hosts scope (a group index, -1 for the
	// job) or noDistinctHosts; properties is set when the group has
	// distinct_property sets. Preemption reads them.
	hostsScope int
	properties bool
}

// noDistinctHosts: the group has no distinct_hosts constraint.
const noDistinctHosts = -2

// newStack returns a stack over the candidates: ready, eligible, not
// draining nodes in the job's datacenters. batch selects the two-choice
// limit; a service job looks at max(2, ceil(log2(candidates))) nodes.
// drop says which rejected nodes the group sources unlink for good. It
// costs O(datacenters): the view keeps the ready nodes per datacenter,
// and the candidates are shuffled as they are drawn.
func newStack(ctx *evalContext, batch bool, drop dropMode) *stack {
	s := &stack{ctx: ctx, drop: drop, chains: map[string]*groupChain{}, nodesAvailable: map[string]int{}}
	var cands []int32 // view positions; shared with the view while one datacenter matches
	matched := 0
	for _, dc := range ctx.view.ReadyDatacenters() {
		if ctx.job == nil || !inDatacenters(dc, ctx.job.Datacenters) {
			continue
		}
		ready := ctx.view.Ready(dc)
		s.nodesAvailable[dc] = len(ready)
		if matched++; matched == 1 {
			cands = ready
			continue
		}
		if matched == 2 {
			cands = slices.Clone(cands) // never append to the view's slice
		}
		cands = append(cands, ready...)
	}
	s.nodesInPool = len(cands)
	s.cands = &shuffledNodes{ctx: ctx, base: cands}
	s.limit = batchLimit
	if !batch {
		if l := int(math.Ceil(math.Log2(float64(len(cands))))); l > s.limit {
			s.limit = l
		}
	}
	return s
}

// shuffledNodes is the stack's candidates in a random order fixed by the
// evaluation's seed, drawn on demand: a forward Fisher-Yates shuffle that
// fixes entry i when it is first read, so a placement that looks at k
// candidates costs O(k), whatever the cluster's size. The draws consume
// the context's random source in entry order, so the order depends only on
// the seed and the candidates.
type shuffledNodes struct {
	ctx   *evalContext
	base  []int32         // view positions, unshuffled; read-only (may be the view's)
	moved map[int32]int32 // base index -> the position an earlier draw swapped there
	drawn []*nodeInfo     // the entries fixed so far
}

func (s *shuffledNodes) Len() int { return len(s.base) }

func (s *shuffledNodes) At(i int) *nodeInfo {
	for len(s.drawn) <= i {
		s.draw()
	}
	return s.drawn[i]
}

// draw fixes the next entry: it swaps a random one of the entries not yet
// drawn into place, recording the swap in moved instead of in base.
func (s *shuffledNodes) draw() {
	k := int32(len(s.drawn))
	j := k + s.ctx.rng.Int32N(int32(len(s.base))-k)
	pick := s.entry(j)
	if j != k {
		if s.moved == nil {
			s.moved = map[int32]int32{}
		}
		s.moved[j] = s.entry(k)
	}
	delete(s.moved, k)
	s.drawn = append(s.drawn, s.ctx.info(pick))
}

// entry is base[i] after the swaps so far.
func (s *shuffledNodes) entry(i int32) int32 {
	if p, ok := s.moved[i]; ok {
		return p
	}
	return s.base[i]
}

// chain returns group g's chain, wiring it on first use. One stage per
// line, in the order a node meets them.
func (s *stack) chain(tg *structs.TaskGroup, g int) *groupChain {
	if ch, ok := s.chains[tg.Name]; ok {
		return ch
	}
	ch := s.build(tg, g, s.cands)
	s.chains[tg.Name] = ch
	return ch
}

// stickyChain returns group g's chain over one node at a time (see
// SelectSticky), wiring it on first use.
func (s *stack) stickyChain(tg *structs.TaskGroup, g int) *groupChain {
	if ch, ok := s.sticky[tg.Name]; ok {
		return ch
	}
	if s.sticky == nil {
		s.sticky = map[string]*groupChain{}
	}
	one := make(nodeSlice, 1)
	ch := s.build(tg, g, one)
	ch.one, ch.oneList = one, one
	s.sticky[tg.Name] = ch
	return ch
}

// build wires group g's chain over the candidates cands.
func (s *stack) build(tg *structs.TaskGroup, g int, cands nodeList) *groupChain {
	ctx := s.ctx
	ch := &groupChain{one: make(nodeSlice, 1), hostsScope: noDistinctHosts}
	ch.oneList = ch.one
	// 1. source: candidate nodes, shuffled by the eval seed (newStack);
	//    every later stage reports its rejections to it.
	ch.source = newSourceIterator(&ctx.metrics, cands, s.drop)
	var it feasibleIterator = ch.source
	rej := ch.source
	var check *checkIterator
	// 2. node pool: the job's pool (none for "all", nor when every node
	//    is in the job's pool).
	if only := ctx.view.OnlyPool(); ctx.job != nil && ctx.job.NodePool != structs.NodePoolAll &&
		(only == "" || !structs.InNodePool(ctx.job.NodePool, only)) {
		check = newCheckIterator(it, nodePoolCheck{pool: ctx.job.NodePool}, rej)
		ch.checks = append(ch.checks, check)
		it = check
	}
	// 3. drivers: every task's driver detected and healthy.
	check = newCheckIterator(it, newDriverCheck(tg), rej)
	ch.checks = append(ch.checks, check)
	it = check
	// 4. constraints: job, group and task, each compiled once, each node's
	//    verdict cached for the evaluation.
	var hostsJob, hostsGroup bool
	for _, c := range allConstraints(ctx.job, tg) {
		switch c.Operand {
		case structs.ConstraintDistinctHosts:
			hostsJob = hostsJob || containsConstraint(ctx.job.Constraints, c)
			hostsGroup = true
			continue
		case structs.ConstraintDistinctProperty:
			continue
		}
		k := newConstraintChecker(c, ctx.compiled)
		check = newCheckIterator(it, k, rej)
		ch.checks = append(ch.checks, check)
		ch.escaped = ch.escaped || k.escapes
		it = check
	}
	// 4b. host volumes: every host volume the group's volume blocks name,
	//     writable unless each of them is read-only.
	for _, hv := range newHostVolumeChecks(tg) {
		check = newCheckIterator(it, hv, rej)
		ch.checks = append(ch.checks, check)
		ch.escaped = true
		it = check
	}
	// 5. distinct_hosts: no other allocation of the job (or group) on the node.
	if hostsGroup {
		scope := g
		if hostsJob {
			scope = -1
		}
		it = &distinctHostsIterator{src: it, ctx: ctx, rej: rej, group: scope}
		ch.escaped = true
		ch.hostsScope = scope
	}
	// 6. distinct_property: at most limit allocations per property value.
	if sets := ctx.propertySetsFor(g); len(sets) > 0 {
		it = &distinctPropertyIterator{src: it, sets: sets, rej: rej}
		ch.escaped = true
		ch.properties = true
	}
	// 7. resource fit and bin-pack score, from the context's usage.
	//    A group asking for ports first needs every host network they
	//    name, and after bin packing gets its ports picked on the node
	//    (ports.go); a group without ports has neither stage.
	ports := newPortAsk(tg)
	ch.ports = ports
	if ports != nil {
		for _, a := range ports.aliases {
			check = newCheckIterator(it, hostNetworkCheck{alias: a[0], label: a[1]}, rej)
			ch.checks = append(ch.checks, check)
			ch.escaped = true
			it = check
		}
	}
	//    The scheduler configuration's algorithm picks the score: best
	//    fit (binpack) or worst fit (spread).
	if ctx.job != nil && ctx.job.HasPreferences(tg) {
		ch.rec = &scoreRecorder{kinds: []int{scoreKindBinPack, scoreKindAntiAffinity, scoreKindPenalty}}
	}
	var rank rankIterator = &binPackIterator{src: it, ctx: ctx, rej: rej, ask: newGroupAsk(tg), rec: ch.rec, score: ctx.fitScore}
	if ports != nil {
		rank = &portIterator{src: rank, ctx: ctx, rej: rej, ask: ports}
	}
	// 8. job anti-affinity: penalty per allocation of the group on the node.
	rank = &antiAffinityIterator{src: rank, ctx: ctx, group: g, count: tg.Count, rec: ch.rec}
	// 9. reschedule penalty: avoid the node a replaced allocation failed on.
	ch.penalty = &penaltyIterator{src: rank, rec: ch.rec}
	rank = ch.penalty
	limitN := s.limit
	// 10. node affinity (groups with affinities only): the matching
	//     weights, each node's computed once per evaluation.
	if aff := newNodeAffinityIterator(rank, ctx, tg, ch.rec); aff != nil {
		ch.rec.kinds = append(ch.rec.kinds, scoreKindAffinity)
		rank = aff
		limitN = max(limitN, affinityLimit)
	}
	// 11. spread (groups with spreads only): toward the spread's targets,
	//     from counts kept current with the plan (spread.go).
	if s.ctx.spreads != nil && len(s.ctx.spreads[g]) > 0 {
		ch.rec.kinds = append(ch.rec.kinds, scoreKindSpread)
		rank = &spreadIterator{src: rank, rec: ch.rec, sets: s.ctx.spreads[g]}
	}
	if ch.rec != nil {
		rank = &scoreCommitIterator{src: rank, rec: ch.rec}
	}
	// 12. limit: look at only a few ranked nodes per placement (at least
	//     affinityLimit for a group with affinities).
	limit := &limitIterator{src: rank, limit: limitN, threshold: skipThreshold, maxSkip: maxSkip}
	// 13. max score: the best of those.
	ch.top = &maxScoreIterator{src: limit}
	return ch
}

// Select picks a node for one allocation of tg (group index g), avoiding
// penaltyNode when it can. It returns false when no node is feasible; the
// context's metrics then say why.
func (s *stack) Select(tg *structs.TaskGroup, g int, penaltyNode string) (rankedNode, bool) {
	return s.selectFrom(s.chain(tg, g), penaltyNode)
}

// SelectSticky is Select for a replacement of an allocation whose group
// has a sticky ephemeral disk: it tries the previous allocation's node
// prev alone first (when it is still a candidate), so that the data
// stays, and every candidate after that, as Nomad prefers the previous
// node.
func (s *stack) SelectSticky(tg *structs.TaskGroup, g int, prev *nodeInfo, penaltyNode string) (rankedNode, bool) {
	if prev != nil && s.candidate(prev.node) {
		ch := s.stickyChain(tg, g)
		ch.one[0] = prev
		ch.source.setNodes(ch.oneList)
		if r, ok := s.selectFrom(ch, penaltyNode); ok {
			return r, true
		}
	}
	return s.Select(tg, g, penaltyNode)
}

// candidate reports whether n is one of the stack's candidates: ready,
// eligible, not draining, in the job's datacenters.
func (s *stack) candidate(n *structs.Node) bool {
	return n.Status == structs.NodeStatusReady && n.SchedulingEligibility == structs.NodeSchedulingEligible &&
		!n.Drain && s.ctx.job != nil && inDatacenters(n.Datacenter, s.ctx.job.Datacenters)
}

// selectFrom picks a node from chain ch.
func (s *stack) selectFrom(ch *groupChain, penaltyNode string) (rankedNode, bool) {
	s.ctx.metrics.reset()
	ch.penalty.nodeID = penaltyNode
	ch.rec.reset()
	ch.top.Reset()
	r, ok := ch.top.Next()
	if ok && ch.ports != nil {
		// The port stage checked that the ports fit; pick them on the
		// chosen node only.
		offer, dim := ch.ports.assign(s.ctx.loadPorts(r.node), s.ctx.rng)
		if dim != "" { // cannot happen: fits is exact
			s.ctx.metrics.exhaust(r.node, dim)
			return rankedNode{}, false
		}
		r.ports = offer
	}
	return r, ok
}

// scoreMeta returns the scores of the best nodes group tg's last Select
// ranked, for its allocation's metrics; nil unless the group has
// affinities or spreads.
func (s *stack) scoreMeta(tg *structs.TaskGroup) []*structs.NodeScoreMeta {
	if ch := s.chains[tg.Name]; ch != nil {
		return ch.rec.meta()
	}
	return nil
}

// setDrop changes what every source unlinks from now on. dropAll is only
// valid once no more stops will be added to the plan.
func (s *stack) setDrop(d dropMode) {
	if s.drop == d {
		return
	}
	s.drop = d
	for _, ch := range s.chains {
		ch.source.drop = d
	}
}

// SelectOn is Select over node n alone (the system scheduler).
func (s *stack) SelectOn(tg *structs.TaskGroup, g int, n *nodeInfo) (rankedNode, bool) {
	ch := s.chain(tg, g)
	ch.one[0] = n
	ch.source.setNodes(ch.oneList)
	return s.Select(tg, g, "")
}

// failureMetric renders the metrics of group tg's failed Select, adding
// the nodes its source dropped in earlier Selects.
func (s *stack) failureMetric(tg *structs.TaskGroup, g int) *structs.AllocMetric {
	var all placementMetrics
	all.init()
	all.merge(&s.ctx.metrics)
	all.merge(&s.chain(tg, g).source.dropped)
	return all.allocMetric(s.nodesAvailable, s.nodesInPool)
}

// classEligibility reports, per computed class of the candidate nodes,
// whether any node of that class passes the group's static checks that
// depend only on the class, and whether the group has checks that do not.
// Blocked evaluations carry it so that only useful node changes unblock
// them. It is called only when a placement failed, and looks at every
// candidate (in view order: the answer does not depend on the order).
func (s *stack) classEligibility(tg *structs.TaskGroup, g int, into map[string]bool) (escaped bool) {
	ch := s.chain(tg, g)
	for _, pos := range s.cands.base {
		n := s.ctx.info(pos)
		class := n.node.Class()
		ok := true
		for _, c := range ch.checks {
			if !c.check.escapesClass() && !c.feasible(n) {
				ok = false
				break
			}
		}
		into[class] = into[class] || ok
	}
	return ch.escaped
}

// feasibleOn reports whether n passes tg's drivers and constraints (not
// distinct_hosts or distinct_property, nor resources).
func (s *stack) feasibleOn(tg *structs.TaskGroup, g int, n *nodeInfo) bool {
	for _, c := range s.chain(tg, g).checks {
		if !c.feasible(n) {
			return false
		}
	}
	return true
}

// allConstraints returns the job's, the group's and its tasks' constraints.
func allConstraints(job *structs.Job, tg *structs.TaskGroup) []*structs.Constraint {
	var out []*structs.Constraint
	if job != nil {
		out = append(out, job.Constraints...)
	}
	return append(out, groupConstraints(tg)...)
}

func containsConstraint(list []*structs.Constraint, c *structs.Constraint) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// inDatacenters matches dc against the job's datacenter patterns, where
// '*' matches any run of characters.
func inDatacenters(dc string, patterns []string) bool {
	for _, p := range patterns {
		if globMatch(p, dc) {
			return true
		}
	}
	return false
}

// globMatch matches s against pattern with '*' wildcards.
func globMatch(pattern, s string) bool {
	star, next := -1, 0 // last '*' in pattern, and where in s it resumes
	pi, si := 0, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, next = pi, si
			pi++
		case pi < len(pattern) && pattern[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			next++
			pi, si = star+1, next
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

package scheduler

import (
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// feasibleIterator yields nodes that passed every stage so far.
type feasibleIterator interface {
	// Next returns the next node, or nil when there are no more this round.
	Next() *nodeInfo
	// Reset starts a new round (a new Select).
	Reset()
}

// rejecter is told about every node a stage turns away, and why. The
// group's source implements it.
type rejecter interface {
	// filter: n failed a check; fixed means the answer cannot change
	// during the evaluation (drivers, constraints), else it depends on
	// the plan (distinct_hosts, distinct_property).
	filter(n *nodeInfo, reason string, fixed bool)
	// exhaust: n lacks room in dimension dim.
	exhaust(n *nodeInfo, dim string)
}

// dropMode says which rejected nodes a source unlinks for the rest of the
// evaluation.
type dropMode uint8

const (
	dropNone  dropMode = iota // keep every node (the system scheduler)
	dropFixed                 // nodes that failed a fixed check
	dropAll                   // any rejected node: valid only while usage and allocation counts can only grow
)

// nodeList is an ordered list of nodes whose entries may be produced on
// demand (the stack's shuffled candidates draw each one when first read).
type nodeList interface {
	Len() int
	// At returns entry i (0 <= i < Len()); entries are read in order from
	// 0, and the same i always returns the same node.
	At(i int) *nodeInfo
}

// nodeSlice is a nodeList over a slice.
type nodeSlice []*nodeInfo

func (s nodeSlice) Len() int           { return len(s) }
func (s nodeSlice) At(i int) *nodeInfo { return s[i] }

// sourceIterator yields one group's candidate nodes in the evaluation's
// shuffled order. A round (one Select) visits each node at most once; the
// next round starts where the previous one stopped, so successive
// placements spread over the cluster.
//
// Depending on drop, a rejected node is unlinked from the ring for the
// rest of the evaluation: one that failed a fixed check always can be;
// one without room or failing distinct_* only once the plan's usage and
// counts can only grow (no more stops). Each node is then rejected at most
// once per group, which keeps placement linear even when few nodes are
// feasible or the cluster is nearly full. The dropped nodes' reasons are
// kept, so a failed placement still reports every node.
//
// The ring costs O(entries visited), not O(candidates): entries are
// visited in order from 0, so only those before the furthest one visited
// can have been unlinked; their links are kept in next, and every later
// entry implicitly links to the one after it.
type sourceIterator struct {
	metrics  *placementMetrics // the current Select's
	nodes    nodeList
	n        int32   // nodes.Len()
	next     []int32 // links of entries 0..len(next)-1 (see succ)
	wrap     int32   // link of the last entry while len(next) < n
	pos      int32   // entry the next call returns
	before   int32   // live entry before pos
	last     int32   // entry last returned, -1 if none
	lastNode *nodeInfo
	lastPre  int32 // live entry before last
	alive    int
	seen     int // entries returned this round
	round    int // live entries when the round began

	drop    dropMode
	pending placementMetrics // rejections dropped this round
	dropped placementMetrics // rejections dropped in earlier rounds
}

func newSourceIterator(m *placementMetrics, nodes nodeList, drop dropMode) *sourceIterator {
	it := &sourceIterator{metrics: m, drop: drop}
	it.pending.init()
	it.dropped.init()
	it.setNodes(nodes)
	return it
}

// setNodes replaces the candidates (the system scheduler sets one node).
func (it *sourceIterator) setNodes(nodes nodeList) {
	n := nodes.Len()
	it.nodes, it.n, it.alive, it.seen, it.round, it.last = nodes, int32(n), n, 0, n, -1
	it.next, it.wrap = it.next[:0], 0
	it.pos, it.before = 0, int32(n-1)
}

// succ is the live entry after entry i.
func (it *sourceIterator) succ(i int32) int32 {
	switch {
	case int(i) < len(it.next):
		return it.next[i]
	case i == it.n-1:
		return it.wrap
	default:
		return i + 1
	}
}

// link makes to the entry after i.
func (it *sourceIterator) link(i, to int32) {
	if int(i) >= len(it.next) && i == it.n-1 {
		it.wrap = to
		return
	}
	for j := int32(len(it.next)); j <= i; j++ {
		it.next = append(it.next, it.succ(j))
	}
	it.next[i] = to
}

func (it *sourceIterator) Next() *nodeInfo {
	if it.seen >= it.round || it.alive == 0 {
		return nil
	}
	it.last, it.lastPre = it.pos, it.before
	it.before, it.pos = it.pos, it.succ(it.pos)
	it.seen++
	it.metrics.evaluated++
	it.lastNode = it.nodes.At(int(it.last))
	return it.lastNode
}

// Reset starts a round over the nodes still linked.
func (it *sourceIterator) Reset() {
	it.seen, it.round, it.last = 0, it.alive, -1
	it.dropped.merge(&it.pending)
	it.pending.reset()
}

func (it *sourceIterator) filter(n *nodeInfo, reason string, fixed bool) {
	it.metrics.filter(n, reason)
	if (fixed && it.drop >= dropFixed || it.drop == dropAll) && it.unlink(n) {
		it.pending.filter(n, reason)
	}
}

func (it *sourceIterator) exhaust(n *nodeInfo, dim string) {
	it.metrics.exhaust(n, dim)
	if it.drop == dropAll && it.unlink(n) {
		it.pending.exhaust(n, dim)
	}
}

// unlink removes n if it is the entry last returned.
func (it *sourceIterator) unlink(n *nodeInfo) bool {
	if it.last < 0 || it.lastNode != n {
		return false
	}
	it.link(it.lastPre, it.succ(it.last))
	if it.before == it.last {
		it.before = it.lastPre
	}
	it.last = -1
	it.alive--
	it.pending.evaluated++
	return true
}

// nodeCheck is a test of a node alone, whose answer cannot change during
// an evaluation, so checkIterator remembers it per node.
type nodeCheck interface {
	feasible(n *structs.Node) bool
	// reason names the check in AllocMetric.ConstraintFiltered.
	reasonText() string
	// escapes reports whether the answer depends on more than the node's
	// computed class.
	escapesClass() bool
}

// checkIterator passes the nodes that satisfy one nodeCheck. Each node is
// checked at most once per evaluation; later rounds read the verdict.
type checkIterator struct {
	src     feasibleIterator
	check   nodeCheck
	rej     rejecter
	verdict []int8 // by nodeInfo.idx, grown on demand: 0 unknown, 1 feasible, -1 not
}

func newCheckIterator(src feasibleIterator, check nodeCheck, rej rejecter) *checkIterator {
	return &checkIterator{src: src, check: check, rej: rej}
}

func (it *checkIterator) Next() *nodeInfo {
	for n := it.src.Next(); n != nil; n = it.src.Next() {
		if it.feasible(n) {
			return n
		}
		it.rej.filter(n, it.check.reasonText(), true)
	}
	return nil
}

// feasible answers from the cache, checking the node on first sight.
func (it *checkIterator) feasible(n *nodeInfo) bool {
	if grow := n.idx + 1 - len(it.verdict); grow > 0 {
		it.verdict = append(it.verdict, make([]int8, grow)...)
	}
	v := it.verdict[n.idx]
	if v == 0 {
		v = -1
		if it.check.feasible(n.node) {
			v = 1
		}
		it.verdict[n.idx] = v
	}
	return v == 1
}

func (it *checkIterator) Reset() { it.src.Reset() }

// driverCheck requires every driver the group's tasks use to be detected
// and healthy (or, for nodes that report drivers only as attributes,
// "driver.<name>" to be true).
type driverCheck struct{ drivers []string }

func newDriverCheck(tg *structs.TaskGroup) *driverCheck {
	var ds []string
	for _, t := range tg.Tasks {
		if !containsString(ds, t.Driver) {
			ds = append(ds, t.Driver)
		}
	}
	return &driverCheck{drivers: ds}
}

func (d *driverCheck) feasible(n *structs.Node) bool {
	for _, name := range d.drivers {
		if info, ok := n.Drivers[name]; ok && info != nil {
			if !info.Detected || !info.Healthy {
				return false
			}
			continue
		}
		ok, err := strconv.ParseBool(n.Attributes["driver."+name])
		if err != nil || !ok {
			return false
		}
	}
	return true
}

func (d *driverCheck) reasonText() string { return reasonMissingDrivers }
func (d *driverCheck) escapesClass() bool { return false }

// nodeCheck for compiled constraints.
func (k *constraintChecker) reasonText() string { return k.reason }
func (k *constraintChecker) escapesClass() bool { return k.escapes }

// distinctHostsIterator filters nodes that already run an allocation of
// the job (job-level constraint, group < 0) or of the group.
type distinctHostsIterator struct {
	src   feasibleIterator
	ctx   *evalContext
	rej   rejecter
	group int
}

func (it *distinctHostsIterator) Next() *nodeInfo {
	for n := it.src.Next(); n != nil; n = it.src.Next() {
		if it.ctx.groupCount(n, it.group) == 0 {
			return n
		}
		it.rej.filter(n, structs.ConstraintDistinctHosts, false)
	}
	return nil
}

func (it *distinctHostsIterator) Reset() { it.src.Reset() }

// propertySet counts the job's live allocations (plan included) per value
// of one node property, for one distinct_property constraint.
type propertySet struct {
	c      *structs.Constraint
	target target
	group  int // -1: the constraint is on the job and counts every group
	limit  int
	counts map[string]int
}

func newPropertySet(c *structs.Constraint, group int) *propertySet {
	limit := 1
	if n, err := strconv.Atoi(strings.TrimSpace(c.RTarget)); err == nil && n > 0 {
		limit = n
	}
	return &propertySet{c: c, target: parseTarget(c.LTarget), group: group, limit: limit, counts: map[string]int{}}
}

func (ps *propertySet) applies(g int) bool { return ps.group < 0 || ps.group == g }

func (ps *propertySet) add(n *nodeInfo, g int) {
	if v, ok := ps.target.resolve(n.node); ok && ps.applies(g) {
		ps.counts[v]++
	}
}

func (ps *propertySet) remove(n *nodeInfo, g int) {
	if v, ok := ps.target.resolve(n.node); ok && ps.applies(g) {
		ps.counts[v]--
	}
}

// allows reports whether one more allocation fits on n under the limit.
// A node without the property is not feasible (as Nomad).
func (ps *propertySet) allows(n *nodeInfo) bool {
	v, ok := ps.target.resolve(n.node)
	return ok && ps.counts[v] < ps.limit
}

// distinctPropertyIterator filters nodes whose property value is already
// used limit times.
type distinctPropertyIterator struct {
	src  feasibleIterator
	sets []*propertySet
	rej  rejecter
}

func (it *distinctPropertyIterator) Next() *nodeInfo {
next:
	for n := it.src.Next(); n != nil; n = it.src.Next() {
		for _, ps := range it.sets {
			if !ps.allows(n) {
				it.rej.filter(n, ps.c.String(), false)
				continue next
			}
		}
		return n
	}
	return nil
}

func (it *distinctPropertyIterator) Reset() { it.src.Reset() }

// initProperties builds a property set for every distinct_property
// constraint of the job and its groups from the job's live allocations
// (initJobAllocs calls it).
func (c *evalContext) initProperties(allocs []*structs.Allocation) {
	if c.job == nil {
		return
	}
	for _, con := range c.job.Constraints {
		if con.Operand == structs.ConstraintDistinctProperty {
			c.properties = append(c.properties, newPropertySet(con, -1))
		}
	}
	for g, tg := range c.job.TaskGroups {
		for _, con := range groupConstraints(tg) {
			if con.Operand == structs.ConstraintDistinctProperty {
				c.properties = append(c.properties, newPropertySet(con, g))
			}
		}
	}
	if len(c.properties) == 0 {
		return
	}
	for _, a := range allocs {
		g, own := c.ownGroup(a)
		if !own || a.TerminalStatus() {
			continue
		}
		n := c.node(a.NodeID)
		if n == nil {
			continue
		}
		for _, ps := range c.properties {
			ps.add(n, g)
		}
	}
}

// propertySetsFor returns the sets that constrain group g.
func (c *evalContext) propertySetsFor(g int) []*propertySet {
	var out []*propertySet
	for _, ps := range c.properties {
		if ps.applies(g) {
			out = append(out, ps)
		}
	}
	return out
}

// groupConstraints returns the group's constraints followed by its tasks'.
func groupConstraints(tg *structs.TaskGroup) []*structs.Constraint {
	out := append([]*structs.Constraint(nil), tg.Constraints...)
	for _, t := range tg.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// reasonNodePool is the failure reason of a node in another pool.
const reasonNodePool = "node pool"

// nodePoolCheck passes the nodes of the job's node pool. The pool is part
// of a node's computed class.
type nodePoolCheck struct{ pool string }

func (c nodePoolCheck) feasible(n *structs.Node) bool { return structs.InNodePool(c.pool, n.NodePool) }
func (c nodePoolCheck) reasonText() string            { return reasonNodePool }
func (c nodePoolCheck) escapesClass() bool            { return false }

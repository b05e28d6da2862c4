package scheduler

import (
	"github.com/drover-project/drover/structs"
)

// spreadSet counts one group's live allocations (plan included) per value
// of one spread's attribute, and scores a node by how placing one more
// allocation there moves the group toward the spread's goal. The scoring
// follows Nomad's SpreadIterator:
//
//   - with targets, the count wanted for a value is its percentage of the
//     group's count (values no target names share what the targets leave,
//     if anything); a node scores (wanted - (used+1)) / wanted times the
//     spread's share of the group's spread weights, and -1 when its value
//     is wanted nowhere or it lacks the attribute;
//   - without targets, the goal is an even spread over the values in use:
//     a node whose value is below the least-used value's count scores
//     (min - used) / min, one at the minimum scores (max - min) / min
//     while the counts differ and -1 once they are even.
//
// The counts are kept current by the evaluation context as the plan
// changes (appendPlace, appendStop, revertStop), and the even spread's
// minimum and maximum through a histogram of the counts, so scoring a
// node is O(1): nothing is recounted per node or per placement.
type spreadSet struct {
	target  target
	weight  float64            // this spread's weight over the sum of the group's spread weights
	desired map[string]float64 // targets: allocations wanted per value; nil: even spread
	rest    float64            // wanted over the values no target names
	hasRest bool

	// Values are numbered as nodes show them (ids); a node's value is
	// resolved once per evaluation (valueOf), so scoring is array reads.
	ids     map[string]int32
	valueOf []int32   // by nodeInfo.idx: 0 not yet resolved, -1 attribute missing, else id+1
	counts  []int32   // by id: allocations on nodes with that value
	wants   []float64 // by id, targets only: allocations wanted (-1: wanted nowhere)
	inUse   int       // values counted at least once
	// Even spread only: hist[c] is the number of values used c times;
	// lo and hi are the least and most uses of a value in use (0: none).
	hist   []int32
	lo, hi int32
}

// newSpreadSets returns the spread sets of group tg: its own spreads, then
// the job's (as Nomad combines them).
func newSpreadSets(job *structs.Job, tg *structs.TaskGroup) []*spreadSet {
	spreads := append(append([]*structs.Spread(nil), tg.Spreads...), job.Spreads...)
	sum := 0.0
	for _, s := range spreads {
		sum += float64(s.Weight)
	}
	var out []*spreadSet
	for _, s := range spreads {
		ss := &spreadSet{target: parseTarget(s.Attribute), ids: map[string]int32{}}
		if sum > 0 {
			ss.weight = float64(s.Weight) / sum
		}
		if len(s.SpreadTarget) > 0 {
			ss.desired = map[string]float64{}
			total := 0.0
			for _, t := range s.SpreadTarget {
				d := float64(t.Percent) / 100 * float64(tg.Count)
				ss.desired[t.Value] = d
				total += d
			}
			if total > 0 && total < float64(tg.Count) {
				ss.rest, ss.hasRest = float64(tg.Count)-total, true
			}
		}
		out = append(out, ss)
	}
	return out
}

// id returns the number of n's value, or -1 when n lacks the attribute.
// It resolves the value on n's first sight.
func (ss *spreadSet) id(n *nodeInfo) int32 {
	if grow := n.idx + 1 - len(ss.valueOf); grow > 0 {
		ss.valueOf = append(ss.valueOf, make([]int32, grow)...)
	}
	if v := ss.valueOf[n.idx]; v != 0 {
		return v - 1
	}
	id := int32(-1)
	if v, ok := ss.target.resolve(n.node); ok {
		var known bool
		if id, known = ss.ids[v]; !known {
			id = int32(len(ss.counts))
			ss.ids[v] = id
			ss.counts = append(ss.counts, 0)
			ss.wants = append(ss.wants, ss.wanted(v))
		}
	}
	ss.valueOf[n.idx] = id + 1
	return id
}

// wanted is how many allocations the targets want on value v (-1: none
// wanted, no target names it and none are left over).
func (ss *spreadSet) wanted(v string) float64 {
	if ss.desired == nil {
		return 0
	}
	if d, ok := ss.desired[v]; ok {
		return d
	}
	if ss.hasRest {
		return ss.rest
	}
	return -1
}

// add counts one more allocation (delta 1) or one fewer (delta -1) on n.
func (ss *spreadSet) add(n *nodeInfo, delta int32) {
	id := ss.id(n)
	if id < 0 {
		return
	}
	c := ss.counts[id]
	if delta < 0 && c == 0 {
		return // not counted (cannot happen: the counts come from the same allocations)
	}
	next := c + delta
	ss.counts[id] = next
	switch {
	case c == 0:
		ss.inUse++
	case next == 0:
		ss.inUse--
	}
	if ss.desired == nil {
		ss.moveHist(c, next)
	}
}

// moveHist moves one value from count c to count next (c±1) in the
// histogram and keeps lo and hi.
func (ss *spreadSet) moveHist(c, next int32) {
	if int(max(c, next)) >= len(ss.hist) {
		ss.hist = append(ss.hist, make([]int32, int(max(c, next))+1-len(ss.hist))...)
	}
	if c > 0 {
		ss.hist[c]--
	}
	if next > 0 {
		ss.hist[next]++
	}
	switch {
	case next > c: // one more
		ss.hi = max(ss.hi, next)
		if c == 0 {
			ss.lo = 1
		} else if c == ss.lo && ss.hist[c] == 0 {
			ss.lo = next
		}
	default: // one fewer
		if c == ss.hi && ss.hist[c] == 0 {
			ss.hi = next
		}
		switch {
		case next > 0 && next < ss.lo:
			ss.lo = next
		case next == 0 && c == ss.lo && ss.hist[c] == 0:
			ss.lo = 0
			for k := c + 1; k <= ss.hi; k++ {
				if ss.hist[k] > 0 {
					ss.lo = k
					break
				}
			}
		}
	}
}

// score is the spread's score for one more allocation on n.
func (ss *spreadSet) score(n *nodeInfo) float64 {
	id := ss.id(n)
	if ss.desired == nil {
		return ss.evenScore(id)
	}
	if id < 0 {
		return -1
	}
	want := ss.wants[id]
	if want <= 0 { // wanted nowhere, or a 0% target
		return -1
	}
	return (want - float64(ss.counts[id]+1)) / want * ss.weight
}

func (ss *spreadSet) evenScore(id int32) float64 {
	switch {
	case ss.inUse == 0:
		return 0 // nothing placed yet
	case id < 0:
		return -1
	}
	cur, lo, hi := ss.counts[id], ss.lo, ss.hi
	switch {
	case cur != lo:
		return float64(lo-cur) / float64(lo)
	case lo == hi:
		return -1
	}
	return float64(hi-lo) / float64(lo)
}

// spreadIterator adds the sum of the group's spread scores to each node
// (when it is not zero, as Nomad).
type spreadIterator struct {
	src  rankIterator
	rec  *scoreRecorder
	sets []*spreadSet
}

func (it *spreadIterator) Next() (rankedNode, bool) {
	r, ok := it.src.Next()
	if !ok {
		return r, false
	}
	total := 0.0
	for _, ss := range it.sets {
		total += ss.score(r.node)
	}
	if total != 0 {
		r.addScore(total)
	}
	it.rec.set(scoreKindSpread, total)
	return r, true
}

func (it *spreadIterator) Reset() { it.src.Reset() }

// initSpreads builds the spread sets of every group that has spreads (its
// own or the job's) from the job's live allocations (initJobAllocs calls
// it). Jobs without spreads build nothing.
func (c *evalContext) initSpreads(allocs []*structs.Allocation) {
	if c.job == nil {
		return
	}
	for g, tg := range c.job.TaskGroups {
		if len(tg.Spreads) == 0 && len(c.job.Spreads) == 0 {
			continue
		}
		if c.spreads == nil {
			c.spreads = make([][]*spreadSet, len(c.job.TaskGroups))
		}
		c.spreads[g] = newSpreadSets(c.job, tg)
	}
	if c.spreads == nil {
		return
	}
	for _, a := range allocs {
		g, own := c.ownGroup(a)
		if !own || a.TerminalStatus() || len(c.spreads[g]) == 0 {
			continue
		}
		if n := c.node(a.NodeID); n != nil {
			c.countSpread(n, g, 1)
		}
	}
}

// countSpread counts one allocation of group g more (delta 1) or fewer
// (-1) on n in the group's spread sets.
func (c *evalContext) countSpread(n *nodeInfo, g int, delta int32) {
	if c.spreads == nil {
		return
	}
	for _, ss := range c.spreads[g] {
		ss.add(n, delta)
	}
}

package scheduler

import (
	"math"

	"github.com/drover-project/drover/structs"
)

// rankedNode is a feasible node that has room, with its score so far. It
// is passed by value so ranking does not allocate.
type rankedNode struct {
	node *nodeInfo
	ask  structs.ComparableResources // what the group takes on this node
	sum  float64                     // sum of the score components
	n    int                         // number of score components
	// ports are the ports picked on the node (nil when the group asks
	// for none).
	ports *portOffer
}

// score is the mean of the components, in [-1, 1].
func (r rankedNode) score() float64 {
	if r.n == 0 {
		return 0
	}
	return r.sum / float64(r.n)
}

func (r *rankedNode) addScore(s float64) {
	r.sum += s
	r.n++
}

// rankIterator yields ranked nodes.
type rankIterator interface {
	Next() (rankedNode, bool)
	Reset()
}

// groupAsk is what one allocation of a group needs.
type groupAsk struct {
	cpu, memoryMB, diskMB int64
	cores                 int64
}

func newGroupAsk(tg *structs.TaskGroup) groupAsk {
	var a groupAsk
	for _, t := range tg.Tasks {
		if r := t.Resources; r != nil {
			a.cpu += int64(r.CPU)
			a.memoryMB += int64(r.MemoryMB)
			a.diskMB += int64(r.DiskMB)
			a.cores += int64(r.Cores)
		}
	}
	if ed := tg.EphemeralDisk; ed != nil {
		a.diskMB += int64(ed.SizeMB)
	}
	return a
}

// on converts the ask to n's units: reserved cores count as their share
// of the node's MHz.
func (a groupAsk) on(n *structs.Node) structs.ComparableResources {
	c := structs.ComparableResources{CPU: a.cpu, MemoryMB: a.memoryMB, DiskMB: a.diskMB}
	if a.cores > 0 && n.NodeResources != nil && n.NodeResources.Cpu.TotalCpuCores > 0 {
		c.CPU += a.cores * n.NodeResources.Cpu.CpuShares / int64(n.NodeResources.Cpu.TotalCpuCores)
	}
	return c
}

// binPackIterator drops nodes without room for the group and scores the
// rest by how full they would be (best fit: fuller scores higher). Usage
// comes from the context, computed once per node and kept current by the
// plan, so this stage is O(1) per node.
type binPackIterator struct {
	src   feasibleIterator
	ctx   *evalContext
	rej   rejecter
	ask   groupAsk
	rec   *scoreRecorder                                                // nil: scores are not recorded
	score func(capacity, used, ask structs.ComparableResources) float64 // fitScore or spreadScore
}

func (it *binPackIterator) Next() (rankedNode, bool) {
	for n := it.src.Next(); n != nil; n = it.src.Next() {
		it.ctx.load(n)
		ask := it.ask.on(n.node)
		free := n.capacity
		free.Subtract(n.used)
		if ok, dim := free.Superset(ask); !ok {
			it.rej.exhaust(n, dim)
			continue
		}
		r := rankedNode{node: n, ask: ask}
		fit := it.score(n.capacity, n.used, ask)
		r.addScore(fit)
		it.rec.begin(n)
		it.rec.set(scoreKindBinPack, fit)
		return r, true
	}
	return rankedNode{}, false
}

func (it *binPackIterator) Reset() { it.src.Reset() }

// fitScore rates placing ask on a node with capacity and used, in [0, 1].
// It follows Nomad's best-fit curve: with f the free fraction of CPU and
// of memory after placement, 20 - (10^fcpu + 10^fmem) runs from 0 (empty
// node) to 18 (full node), scaled here to [0, 1].
func fitScore(capacity, used, ask structs.ComparableResources) float64 {
	total := pow10(freeFraction(capacity.CPU, used.CPU+ask.CPU)) +
		pow10(freeFraction(capacity.MemoryMB, used.MemoryMB+ask.MemoryMB))
	return math.Min(1, math.Max(0, (20-total)/18))
}

// spreadScore is fitScore's opposite (Nomad's spread algorithm): an empty
// node scores 1, a full one 0.
func spreadScore(capacity, used, ask structs.ComparableResources) float64 {
	return 1 - fitScore(capacity, used, ask)
}

// pow10 is 10^x (cheaper than math.Pow for a fixed base).
func pow10(x float64) float64 { return math.Exp(x * math.Ln10) }

func freeFraction(capacity, used int64) float64 {
	if capacity <= 0 {
		return 0
	}
	return 1 - float64(used)/float64(capacity)
}

// antiAffinityIterator lowers the score of nodes that already run
// allocations of the same job and group, so a group spreads out: the
// penalty is the number of such allocations over the group's count.
type antiAffinityIterator struct {
	src   rankIterator
	ctx   *evalContext
	group int
	count int
	rec   *scoreRecorder
}

func (it *antiAffinityIterator) Next() (rankedNode, bool) {
	r, ok := it.src.Next()
	if !ok {
		return r, false
	}
	if c := it.ctx.groupCount(r.node, it.group); c > 0 {
		p := -math.Min(1, float64(c)/float64(max(it.count, 1)))
		r.addScore(p)
		it.rec.set(scoreKindAntiAffinity, p)
	}
	return r, true
}

func (it *antiAffinityIterator) Reset() { it.src.Reset() }

// penaltyIterator scores -1 on the node a rescheduled allocation failed
// on, so the replacement prefers another node.
type penaltyIterator struct {
	src    rankIterator
	nodeID string // "" for none; set before each Select
	rec    *scoreRecorder
}

func (it *penaltyIterator) Next() (rankedNode, bool) {
	r, ok := it.src.Next()
	if ok && it.nodeID != "" && r.node.node.ID == it.nodeID {
		r.addScore(-1)
		it.rec.set(scoreKindPenalty, -1)
	}
	return r, ok
}

func (it *penaltyIterator) Reset() { it.src.Reset() }

// limitIterator passes at most limit nodes per round. Nodes scoring below
// threshold are held back (at most maxSkip of them) and passed only if the
// round runs out of better ones.
type limitIterator struct {
	src       rankIterator
	limit     int
	threshold float64
	maxSkip   int
	seen      int
	skipped   []rankedNode
}

func (it *limitIterator) Next() (rankedNode, bool) {
	if it.seen >= it.limit {
		return rankedNode{}, false
	}
	for {
		r, ok := it.src.Next()
		if !ok {
			break
		}
		if r.score() < it.threshold && len(it.skipped) < it.maxSkip {
			it.skipped = append(it.skipped, r)
			continue
		}
		it.seen++
		return r, true
	}
	if len(it.skipped) > 0 {
		r := it.skipped[0]
		it.skipped = append(it.skipped[:0], it.skipped[1:]...)
		it.seen++
		return r, true
	}
	return rankedNode{}, false
}

func (it *limitIterator) Reset() {
	it.src.Reset()
	it.seen = 0
	it.skipped = it.skipped[:0]
}

// maxScoreIterator drains its source and returns the best node once.
type maxScoreIterator struct {
	src rankIterator
}

func (it *maxScoreIterator) Next() (rankedNode, bool) {
	best, found := rankedNode{}, false
	for r, ok := it.src.Next(); ok; r, ok = it.src.Next() {
		if !found || r.score() > best.score() {
			best, found = r, true
		}
	}
	return best, found
}

func (it *maxScoreIterator) Reset() { it.src.Reset() }

package scheduler

import (
	"slices"

	"github.com/drover-project/drover/structs"
)

// Score kinds a scoreRecorder keeps per node, with Nomad's names.
const (
	scoreKindBinPack = iota
	scoreKindAntiAffinity
	scoreKindPenalty
	scoreKindAffinity
	scoreKindSpread
	numScoreKinds
)

var scoreNames = [numScoreKinds]string{
	structs.ScoreBinPack, structs.ScoreJobAntiAffinity, structs.ScoreReschedPenalty,
	structs.ScoreNodeAffinity, structs.ScoreSpread,
}

// maxScoreMeta is how many of the best nodes a placement's metrics list,
// as Nomad's AllocMetric keeps.
const maxScoreMeta = 5

// nodeScores is one ranked node's scores in one Select.
type nodeScores struct {
	node  *nodeInfo
	vals  [numScoreKinds]float64
	final float64
}

// scoreRecorder keeps, for one group's Select, the component scores of
// the best few ranked nodes, for AllocMetric.ScoreMetaData ("alloc status
// -verbose" shows them). Only groups with affinities or spreads record
// (the stack wires a recorder into their chains alone), so other jobs pay
// one nil check per stage and node. The scoring stages write into the
// node being ranked (the chain ranks one node at a time), and the stage
// before the limit commits it. A nil *scoreRecorder records nothing.
type scoreRecorder struct {
	kinds []int // the kinds the chain scores, in column order
	cur   nodeScores
	top   []nodeScores // best first, at most maxScoreMeta
}

// begin starts the scores of n (the bin-pack stage, first to rank it).
func (r *scoreRecorder) begin(n *nodeInfo) {
	if r != nil {
		r.cur = nodeScores{node: n}
	}
}

func (r *scoreRecorder) set(kind int, v float64) {
	if r != nil {
		r.cur.vals[kind] = v
	}
}

// commit keeps the current node if it is among the best so far.
func (r *scoreRecorder) commit(final float64) {
	if r == nil {
		return
	}
	r.cur.final = final
	i := len(r.top)
	for i > 0 && r.top[i-1].final < final {
		i--
	}
	if i >= maxScoreMeta {
		return
	}
	r.top = slices.Insert(r.top, i, r.cur)
	if len(r.top) > maxScoreMeta {
		r.top = r.top[:maxScoreMeta]
	}
}

func (r *scoreRecorder) reset() {
	if r != nil {
		r.top = r.top[:0]
	}
}

// meta renders the kept nodes as Nomad's NodeScoreMeta list.
func (r *scoreRecorder) meta() []*structs.NodeScoreMeta {
	if r == nil || len(r.top) == 0 {
		return nil
	}
	out := make([]*structs.NodeScoreMeta, len(r.top))
	metas := make([]structs.NodeScoreMeta, len(r.top)) // one allocation for all
	for i, ns := range r.top {
		m := &metas[i]
		m.NodeID, m.NormScore = ns.node.node.ID, ns.final
		m.Scores = make(map[string]float64, len(r.kinds))
		for _, k := range r.kinds {
			m.Scores[scoreNames[k]] = ns.vals[k]
		}
		out[i] = m
	}
	return out
}

// scoreCommitIterator commits each ranked node's scores to the recorder.
type scoreCommitIterator struct {
	src rankIterator
	rec *scoreRecorder
}

func (it *scoreCommitIterator) Next() (rankedNode, bool) {
	r, ok := it.src.Next()
	if ok {
		it.rec.commit(r.score())
	}
	return r, ok
}

func (it *scoreCommitIterator) Reset() { it.src.Reset() }

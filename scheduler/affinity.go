package scheduler

import (
	"github.com/drover-project/drover/structs"
)

// nodeAffinityIterator scores each node by the affinities of the job, the
// group and its tasks that it matches: the sum of the matching weights
// over the sum of all weights' magnitudes, in [-1, 1] (Nomad's
// NodeAffinityIterator's rule). A node that matches none is not scored
// (its mean is not diluted), as in Nomad. The score depends on the node
// alone, so it is computed once per node and evaluation; Next is O(1)
// after that.
type nodeAffinityIterator struct {
	src    rankIterator
	rec    *scoreRecorder // nil: scores are not recorded
	checks []*constraintChecker
	weight []float64 // weight of checks[i]
	sum    float64   // sum of |weight|
	scores []float64 // by nodeInfo.idx; valid where known is set
	known  []bool
}

// newNodeAffinityIterator returns nil when no affinity applies to tg.
func newNodeAffinityIterator(src rankIterator, ctx *evalContext, tg *structs.TaskGroup, rec *scoreRecorder) *nodeAffinityIterator {
	if ctx.job == nil {
		return nil
	}
	affs := groupAffinityList(ctx.job, tg)
	if len(affs) == 0 {
		return nil
	}
	it := &nodeAffinityIterator{src: src, rec: rec}
	for _, a := range affs {
		c := &structs.Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}
		it.checks = append(it.checks, newConstraintChecker(c, ctx.compiled))
		it.weight = append(it.weight, float64(a.Weight))
		it.sum += max(float64(a.Weight), -float64(a.Weight))
	}
	return it
}

// groupAffinityList is the job's, the group's and its tasks' affinities.
func groupAffinityList(j *structs.Job, tg *structs.TaskGroup) []*structs.Affinity {
	out := append(append([]*structs.Affinity(nil), j.Affinities...), tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

func (it *nodeAffinityIterator) Next() (rankedNode, bool) {
	r, ok := it.src.Next()
	if !ok {
		return r, false
	}
	s := it.score(r.node)
	if s != 0 {
		r.addScore(s)
	}
	it.rec.set(scoreKindAffinity, s)
	return r, true
}

// score is n's affinity score, computed on first sight.
func (it *nodeAffinityIterator) score(n *nodeInfo) float64 {
	if grow := n.idx + 1 - len(it.known); grow > 0 {
		it.known = append(it.known, make([]bool, grow)...)
		it.scores = append(it.scores, make([]float64, grow)...)
	}
	if !it.known[n.idx] {
		total := 0.0
		for i, c := range it.checks {
			if c.feasible(n.node) {
				total += it.weight[i]
			}
		}
		if it.sum > 0 {
			it.scores[n.idx] = total / it.sum
		}
		it.known[n.idx] = true
	}
	return it.scores[n.idx]
}

func (it *nodeAffinityIterator) Reset() { it.src.Reset() }

package evalbroker

import (
	"cmp"
	"slices"

	"github.com/drover-project/drover/structs"
)

// gate hands out one EnqueueAll batch one priority level at a time: the
// next lower level is enqueued only once every evaluation of the level
// before it has left the broker (acked, or superseded). Blocked
// evaluations released by one capacity change arrive as one batch; without
// the gate, idle workers would schedule them all at once on the same
// snapshot and the plan applier would commit whichever plan reached it
// first, whatever its priority. With it, a lower-priority evaluation is
// scheduled only after the higher ones' plans were committed (a worker acks
// after its plan), so the applier refuses it the capacity they took.
type gate struct {
	open map[string]struct{} // IDs of the level handed out, still held
	rest []gated             // later levels, highest priority first
}

// gated is one evaluation of a batch with its delivery token.
type gated struct {
	eval  *structs.Evaluation
	token string
}

// enqueueBatchLocked admits a batch. A batch of one priority is enqueued
// at once; otherwise through a gate.
func (b *Broker) enqueueBatchLocked(evals map[*structs.Evaluation]string) {
	list := make([]gated, 0, len(evals))
	for e, token := range evals {
		list = append(list, gated{eval: e, token: token})
	}
	slices.SortFunc(list, func(x, y gated) int {
		if c := cmp.Compare(y.eval.Priority, x.eval.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(x.eval.CreateIndex, y.eval.CreateIndex); c != 0 {
			return c
		}
		return cmp.Compare(x.eval.ID, y.eval.ID)
	})
	if len(list) == 0 || list[0].eval.Priority == list[len(list)-1].eval.Priority {
		for _, g := range list {
			b.enqueueNewLocked(g.eval, g.token)
		}
		return
	}
	g := &gate{open: map[string]struct{}{}, rest: list}
	b.openNextLocked(g)
}

// openNextLocked enqueues g's next level, and the one after it while a
// level leaves nothing held (every evaluation in it was ignored).
func (b *Broker) openNextLocked(g *gate) {
	for len(g.open) == 0 && len(g.rest) > 0 {
		top := g.rest[0].eval.Priority
		n := 1
		for n < len(g.rest) && g.rest[n].eval.Priority == top {
			n++
		}
		level := g.rest[:n]
		g.rest = g.rest[n:]
		for _, it := range level {
			b.enqueueNewLocked(it.eval, it.token)
			if _, held := b.evals[it.eval.ID]; held {
				g.open[it.eval.ID] = struct{}{}
				b.gates[it.eval.ID] = append(b.gates[it.eval.ID], g)
			}
		}
	}
}

// leftLocked is called when evalID may have left the broker (acked or
// superseded): the gates waiting on it open their next level once their
// current one is done.
func (b *Broker) leftLocked(evalID string) {
	gates, ok := b.gates[evalID]
	if !ok {
		return
	}
	if _, held := b.evals[evalID]; held {
		return // enqueued again (a requeue on ack): still outstanding
	}
	delete(b.gates, evalID)
	for _, g := range gates {
		delete(g.open, evalID)
		b.openNextLocked(g)
	}
}

// gatedCountLocked is how many evaluations wait in gates for their level.
func (b *Broker) gatedCountLocked() int {
	seen := map[*gate]bool{}
	n := 0
	for _, gates := range b.gates {
		for _, g := range gates {
			if !seen[g] {
				seen[g] = true
				n += len(g.rest)
			}
		}
	}
	return n
}

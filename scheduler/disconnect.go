package scheduler

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Disconnected clients with a window (max_client_disconnect, or
// disconnect { lost_after }). When a node misses its heartbeats, the
// allocations it runs of such a group become unknown, not lost: they are
// marked so, with a follow-up evaluation at the end of the window, and a
// replacement is placed unless the group says replace = false (then the
// unknown allocation keeps its place). Past the window, an allocation
// still unknown is lost: stopped, and replaced if it was not already.
// When the client comes back within the window it reports the allocation
// running again; with a replacement also live, the reconcile policy keeps
// one and the other is stopped (reconnected).

// disconnected handles the group's allocations on down nodes or unknown.
func (r *reconciler) disconnected(tg *structs.TaskGroup, gs *groupState, du *structs.DesiredUpdates) {
	window, replace, _, _ := tg.DisconnectWindow()
	replaced := map[string]bool{} // IDs of allocations a live replacement replaces
	for _, s := range gs.slots {
		if p := s.alloc.PreviousAllocation; p != "" {
			replaced[p] = true
		}
	}
	for _, a := range gs.disconnected {
		since := r.now
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			since = time.Unix(0, a.ModifyTime)
		}
		lostAt := since.Add(window)
		if !r.now.Before(lostAt) {
			// Past the window: lost. A replacement placed meanwhile
			// stays; otherwise the group is short and places one.
			r.stop(a, descLost, structs.AllocClientStatusLost, du)
			continue
		}
		if a.ClientStatus != structs.AllocClientStatusUnknown {
			r.result.unknown = append(r.result.unknown, delayedReschedule{alloc: a, at: lostAt.Add(fenceApplySlack)})
		}
		switch {
		case !replace:
			gs.slots = append(gs.slots, slot{alloc: a, kind: slotDisconnected, index: allocIndex(a.Name)})
		case !replaced[a.ID]:
			gs.slots = append(gs.slots, slot{alloc: a, kind: slotReplaceUnknown, index: allocIndex(a.Name)})
		}
	}
}

// markUnknown marks the allocations of down nodes unknown, each with the
// follow-up evaluation that comes back at the end of its window (one per
// distinct time).
func (s *genericScheduler) markUnknown(ctx *evalContext, res *reconcileResult) error {
	ids := map[time.Time]string{}
	for _, d := range res.unknown {
		id, ok := ids[d.at]
		if !ok {
			e := s.eval.CreateFollowUpEval(structs.EvalTriggerMaxDisconnect, d.at.Sub(ctx.now), ctx.now)
			e.WaitUntil = d.at
			if err := s.planner.CreateEval(e); err != nil {
				return err
			}
			id = e.ID
			ids[d.at] = id
		}
		upd := d.alloc.Copy() // keeps its job version
		upd.ClientStatus = structs.AllocClientStatusUnknown
		upd.ClientDescription = "node is disconnected; allocation is unknown"
		upd.FollowupEvalID = id
		upd.ModifyTime = ctx.now.UnixNano()
		ctx.appendUpdate(upd)
	}
	return nil
}

// reconnected resolves the group's reconnected allocations: a live one
// whose live replacement (PreviousAllocation) also runs, the client having
// come back within the window. The group's reconcile policy keeps one; the
// other is stopped and leaves the slots.
func (r *reconciler) reconnected(tg *structs.TaskGroup, slots []slot, du *structs.DesiredUpdates) []slot {
	_, _, policy, ok := tg.DisconnectWindow()
	if !ok {
		return slots
	}
	live := map[string]*structs.Allocation{}
	for _, s := range slots {
		if s.kind == slotKeep {
			live[s.alloc.ID] = s.alloc
		}
	}
	drop := map[string]bool{}
	for _, s := range slots {
		if s.kind != slotKeep || s.alloc.PreviousAllocation == "" {
			continue
		}
		orig := live[s.alloc.PreviousAllocation]
		if orig == nil || orig.ClientStatus != structs.AllocClientStatusRunning || drop[orig.ID] {
			continue
		}
		loser := s.alloc
		if !keepOriginal(policy, orig, s.alloc) {
			loser = orig
		}
		drop[loser.ID] = true
		r.stop(loser, descReconnect, "", du)
	}
	if len(drop) == 0 {
		return slots
	}
	out := slots[:0:0]
	for _, s := range slots {
		if !drop[s.alloc.ID] {
			out = append(out, s)
		}
	}
	return out
}

// keepOriginal applies a reconcile policy to a reconnected allocation and
// its replacement; ties keep the original.
func keepOriginal(policy string, orig, repl *structs.Allocation) bool {
	switch policy {
	case structs.ReconcileOptionKeepOriginal:
		return true
	case structs.ReconcileOptionKeepReplacement:
		return false
	case structs.ReconcileOptionLongestRunning:
		o, ok := runningSince(orig)
		if !ok {
			return false
		}
		p, ok := runningSince(repl)
		return !ok || !p.Before(o)
	}
	// best_score: the allocation whose node scored higher when placed.
	return nodeScore(orig) >= nodeScore(repl)
}

// runningSince is when the allocation's tasks last (re)started: the
// latest start among its running tasks; ok is false when none runs.
func runningSince(a *structs.Allocation) (time.Time, bool) {
	states, err := a.TaskStates.Map()
	if err != nil {
		return time.Time{}, false
	}
	var since time.Time
	ok := false
	for _, ts := range states {
		if ts == nil || ts.State != structs.TaskStateRunning {
			continue
		}
		if !ok || ts.StartedAt.After(since) {
			since, ok = ts.StartedAt, true
		}
	}
	return since, ok
}

// nodeScore is the normalized score of the allocation's node when it was
// placed (0 when not recorded).
func nodeScore(a *structs.Allocation) float64 {
	if a.Metrics == nil {
		return 0
	}
	for _, m := range a.Metrics.ScoreMetaData {
		if m != nil && m.NodeID == a.NodeID {
			return m.NormScore
		}
	}
	return 0
}

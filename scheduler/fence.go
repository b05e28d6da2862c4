package scheduler

import (
	"slices"
	"time"

	"github.com/drover-project/drover/structs"
)

// Fenced replacement of lost allocations. A group with a client-side stop
// (stop_after_client_disconnect, disconnect.stop_on_client_after) has its
// allocations stopped by their own client once it has gone that long
// without a successful heartbeat. When such a client's node goes down,
// its allocations are marked lost at once, as any, but their replacement
// is placed only when the client's stop has certainly happened: at the
// fence, TaskGroup.StopAfterFence after they were marked lost (the stop
// records the time as the allocation's ModifyTime and names the follow-up
// evaluation that comes back then). Until then the lost allocation still
// counts toward the group's count, so a group never runs more copies than
// its count. A client that reports the allocation finished ends the wait
// early; one that comes back and reports it still running has been told
// to stop it, and is waited for.

// fenceApplySlack delays the first follow-up of a fence past the plan's
// apply: the fence counts from the stop's ModifyTime, which the plan
// applier sets a little after the scheduler's now.
const fenceApplySlack = 500 * time.Millisecond

// fenceHold reports whether a, an allocation the servers have stopped,
// still holds its place in group tg because it was lost and its client's
// own stop is not yet certain; until is when the hold ends by itself
// (zero: only when the client reports the allocation finished).
func (r *reconciler) fenceHold(tg *structs.TaskGroup, a *structs.Allocation) (until time.Time, ok bool) {
	if a.FollowupEvalID == "" || a.NextAllocation != "" || a.DesiredDescription != descLost {
		return time.Time{}, false
	}
	fence, ok := tg.StopAfterFence()
	if !ok {
		return time.Time{}, false
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed:
		return time.Time{}, false // the client says it has ended
	}
	if until = time.Unix(0, a.ModifyTime).Add(fence); r.now.Before(until) {
		return until, true
	}
	if a.ClientStatus != structs.AllocClientStatusLost && !r.lost(a) {
		// Its client came back and reported it running after the fence:
		// it has been told to stop, and says when it has.
		return time.Time{}, true
	}
	return time.Time{}, false
}

// stopFenced stops a lost allocation of a fenced group without replacing
// it now: a follow-up evaluation at fenceAt places the replacement.
func (r *reconciler) stopFenced(a *structs.Allocation, fenceAt time.Time, du *structs.DesiredUpdates) {
	r.result.stops = append(r.result.stops, stopRequest{alloc: a, desc: descLost,
		clientStatus: structs.AllocClientStatusLost, fenceAt: fenceAt})
	du.Stop++
}

// fenceFollowups creates the follow-up evaluations fences need (one per
// distinct time) and returns them by time.
func (s *genericScheduler) fenceFollowups(ctx *evalContext, res *reconcileResult) (map[time.Time]string, error) {
	var at []time.Time
	for _, st := range res.stops {
		if !st.fenceAt.IsZero() {
			at = append(at, st.fenceAt)
		}
	}
	at = append(at, res.fenceWaits...)
	if len(at) == 0 {
		return nil, nil
	}
	slices.SortFunc(at, time.Time.Compare)
	at = slices.CompactFunc(at, time.Time.Equal)
	ids := make(map[time.Time]string, len(at))
	for _, t := range at {
		e := s.eval.CreateFollowUpEval(structs.EvalTriggerRetryFailedAlloc, t.Sub(ctx.now), ctx.now)
		e.WaitUntil = t
		if err := s.planner.CreateEval(e); err != nil {
			return nil, err
		}
		ids[t] = e.ID
	}
	return ids, nil
}

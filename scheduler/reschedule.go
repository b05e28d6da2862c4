package scheduler

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Reschedule timing.
const (
	// rescheduleWindow: a failed allocation due within this much of now is
	// rescheduled now rather than by a follow-up evaluation.
	rescheduleWindow = time.Second
	// followupBatchWindow: delayed reschedules due within this much of
	// each other share one follow-up evaluation.
	followupBatchWindow = 5 * time.Second
	// maxUnlimitedEvents bounds the tracker of an unlimited policy, which
	// needs only recent delays.
	maxUnlimitedEvents = 5
)

// rescheduleKind is what to do with a failed allocation.
type rescheduleKind uint8

const (
	rescheduleNever rescheduleKind = iota // attempts exhausted, no policy, or a follow-up is pending
	rescheduleNow                         // replace it in this evaluation
	rescheduleLater                       // create a follow-up evaluation for at
)

// rescheduleDecision decides for a failed allocation a of a group with
// policy p. delay is the delay this reschedule uses (recorded in the
// replacement's tracker); at is when it is due.
type rescheduleDecision struct {
	kind  rescheduleKind
	at    time.Time
	delay time.Duration
}

// decideReschedule applies the group's reschedule policy to a failed
// allocation. evalID is the evaluation being processed: an allocation whose
// follow-up evaluation this is gets rescheduled now.
func decideReschedule(a *structs.Allocation, p *structs.ReschedulePolicy, now time.Time, evalID string) rescheduleDecision {
	if a.DesiredTransition.ForceReschedule != nil && *a.DesiredTransition.ForceReschedule {
		return rescheduleDecision{kind: rescheduleNow}
	}
	failed := failTime(a, now)
	if !rescheduleEligible(a, p, failed) {
		return rescheduleDecision{kind: rescheduleNever}
	}
	delay := nextDelay(a, p, failed)
	at := failed.Add(delay)
	switch {
	case a.FollowupEvalID == evalID && evalID != "", !at.After(now.Add(rescheduleWindow)):
		return rescheduleDecision{kind: rescheduleNow, at: at, delay: delay}
	case a.FollowupEvalID == "":
		return rescheduleDecision{kind: rescheduleLater, at: at, delay: delay}
	}
	return rescheduleDecision{kind: rescheduleNever} // its follow-up evaluation will handle it
}

// failTime is when the allocation failed: its last task's finish, else
// its last modification, else now. (Stored task states were validated
// when they arrived; ones that do not decode count as none.)
func failTime(a *structs.Allocation, now time.Time) time.Time {
	var t time.Time
	states, _ := a.TaskStates.Map()
	for _, ts := range states {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	if t.IsZero() && a.ModifyTime != 0 {
		t = time.Unix(0, a.ModifyTime)
	}
	if t.IsZero() {
		t = now
	}
	return t
}

// rescheduleEligible: unlimited policies always allow one more; limited
// ones allow Attempts reschedules within Interval before the failure.
func rescheduleEligible(a *structs.Allocation, p *structs.ReschedulePolicy, failed time.Time) bool {
	switch {
	case p == nil:
		return false
	case p.Unlimited:
		return true
	case p.Attempts <= 0:
		return false
	}
	return recentReschedules(a, p.Interval, failed) < p.Attempts
}

func recentReschedules(a *structs.Allocation, interval time.Duration, at time.Time) int {
	if a.RescheduleTracker == nil {
		return 0
	}
	n := 0
	for _, ev := range a.RescheduleTracker.Events {
		if at.Sub(time.Unix(0, ev.RescheduleTime)) <= interval {
			n++
		}
	}
	return n
}

// nextDelay is the wait before the next reschedule of a. constant waits
// Delay each time; exponential doubles the last delay; fibonacci adds the
// last two (Delay, Delay, 2xDelay, 3xDelay, 5xDelay, ...). The result is
// capped at MaxDelay, and once capped, starts over at Delay if the
// allocation ran longer than MaxDelay since its last reschedule.
func nextDelay(a *structs.Allocation, p *structs.ReschedulePolicy, failed time.Time) time.Duration {
	var events []*structs.RescheduleEvent
	if a.RescheduleTracker != nil {
		events = a.RescheduleTracker.Events
	}
	delay := p.Delay
	n := len(events)
	switch p.DelayFunction {
	case structs.DelayFunctionExponential:
		if n > 0 {
			delay = events[n-1].Delay * 2
		}
	case structs.DelayFunctionFibonacci:
		if n >= 2 {
			delay = events[n-1].Delay + events[n-2].Delay
		}
	}
	if p.MaxDelay > 0 && delay > p.MaxDelay {
		delay = p.MaxDelay
		if n > 0 && failed.Sub(time.Unix(0, events[n-1].RescheduleTime)) > p.MaxDelay {
			delay = p.Delay
		}
	}
	return delay
}

// nextTracker is the tracker for the replacement of prev: prev's events
// that still matter plus this reschedule.
func nextTracker(prev *structs.Allocation, p *structs.ReschedulePolicy, now time.Time, delay time.Duration) *structs.RescheduleTracker {
	var events []*structs.RescheduleEvent
	if prev.RescheduleTracker != nil {
		for _, ev := range prev.RescheduleTracker.Events {
			keep := p == nil || p.Unlimited || now.Sub(time.Unix(0, ev.RescheduleTime)) <= p.Interval
			if keep {
				c := *ev
				events = append(events, &c)
			}
		}
	}
	if p != nil && p.Unlimited && len(events) >= maxUnlimitedEvents {
		events = events[len(events)-maxUnlimitedEvents+1:]
	}
	events = append(events, &structs.RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID, Delay: delay,
	})
	return &structs.RescheduleTracker{Events: events}
}

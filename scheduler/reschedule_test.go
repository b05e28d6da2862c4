package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// trackerWith returns a tracker whose events have the given delays, the
// last one rescheduled at last.
func trackerWith(last time.Time, delays ...time.Duration) *structs.RescheduleTracker {
	tr := &structs.RescheduleTracker{}
	for i, d := range delays {
		at := last.Add(-time.Duration(len(delays)-1-i) * time.Minute)
		tr.Events = append(tr.Events, &structs.RescheduleEvent{RescheduleTime: at.UnixNano(), Delay: d})
	}
	return tr
}

func TestNextDelay(t *testing.T) {
	now := HarnessEpoch
	s := time.Second
	cases := []struct {
		name   string
		fn     string
		max    time.Duration
		prev   []time.Duration
		failed time.Time
		want   time.Duration
	}{
		{"constant first", structs.DelayFunctionConstant, 0, nil, now, 5 * s},
		{"constant later", structs.DelayFunctionConstant, 0, []time.Duration{5 * s, 5 * s}, now, 5 * s},
		{"exponential first", structs.DelayFunctionExponential, 0, nil, now, 5 * s},
		{"exponential second", structs.DelayFunctionExponential, 0, []time.Duration{5 * s}, now, 10 * s},
		{"exponential third", structs.DelayFunctionExponential, 0, []time.Duration{5 * s, 10 * s}, now, 20 * s},
		{"exponential capped", structs.DelayFunctionExponential, 30 * s, []time.Duration{5 * s, 10 * s, 20 * s}, now, 30 * s},
		{"exponential reset after a long run", structs.DelayFunctionExponential, 30 * s, []time.Duration{20 * s, 40 * s}, now.Add(time.Hour), 5 * s},
		{"fibonacci first", structs.DelayFunctionFibonacci, 0, nil, now, 5 * s},
		{"fibonacci second", structs.DelayFunctionFibonacci, 0, []time.Duration{5 * s}, now, 5 * s},
		{"fibonacci third", structs.DelayFunctionFibonacci, 0, []time.Duration{5 * s, 5 * s}, now, 10 * s},
		{"fibonacci fourth", structs.DelayFunctionFibonacci, 0, []time.Duration{5 * s, 5 * s, 10 * s}, now, 15 * s},
		{"fibonacci fifth", structs.DelayFunctionFibonacci, 0, []time.Duration{5 * s, 5 * s, 10 * s, 15 * s}, now, 25 * s},
		{"fibonacci capped", structs.DelayFunctionFibonacci, 20 * s, []time.Duration{5 * s, 10 * s, 15 * s}, now, 20 * s},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * s, DelayFunction: tc.fn, MaxDelay: tc.max}
			a := &structs.Allocation{RescheduleTracker: trackerWith(now, tc.prev...)}
			if got := nextDelay(a, p, tc.failed); got != tc.want {
				t.Fatalf("nextDelay = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecideReschedule(t *testing.T) {
	now := HarnessEpoch
	limited := &structs.ReschedulePolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	noDelay := &structs.ReschedulePolicy{Attempts: 2, Interval: 10 * time.Minute, DelayFunction: structs.DelayFunctionConstant}
	unlimited := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	yes := true
	cases := []struct {
		name   string
		policy *structs.ReschedulePolicy
		alloc  structs.Allocation
		want   rescheduleKind
		at     time.Time
	}{
		{"no policy", nil, structs.Allocation{}, rescheduleNever, time.Time{}},
		{"zero attempts", &structs.ReschedulePolicy{Interval: time.Hour}, structs.Allocation{}, rescheduleNever, time.Time{}},
		{"delay passed", limited, structs.Allocation{ModifyTime: now.Add(-time.Minute).UnixNano()}, rescheduleNow, now.Add(-55 * time.Second)},
		{"no delay", noDelay, structs.Allocation{ModifyTime: now.UnixNano()}, rescheduleNow, now},
		{"delay pending", limited, structs.Allocation{ModifyTime: now.UnixNano()}, rescheduleLater, now.Add(5 * time.Second)},
		{"follow-up already scheduled", limited, structs.Allocation{ModifyTime: now.UnixNano(), FollowupEvalID: "other"}, rescheduleNever, time.Time{}},
		{"this is its follow-up", limited, structs.Allocation{ModifyTime: now.UnixNano(), FollowupEvalID: "eval"}, rescheduleNow, now.Add(5 * time.Second)},
		{"task finish time wins", limited, structs.Allocation{ModifyTime: now.UnixNano(),
			TaskStates: structs.NewTaskStates(map[string]*structs.TaskState{"t": {FinishedAt: now.Add(-time.Hour)}})}, rescheduleNow, now.Add(-time.Hour + 5*time.Second)},
		{"attempts exhausted", limited, structs.Allocation{ModifyTime: now.Add(-time.Minute).UnixNano(),
			RescheduleTracker: trackerWith(now.Add(-2*time.Minute), 5*time.Second, 5*time.Second)}, rescheduleNever, time.Time{}},
		{"old attempts outside interval", limited, structs.Allocation{ModifyTime: now.Add(-time.Minute).UnixNano(),
			RescheduleTracker: trackerWith(now.Add(-time.Hour), 5*time.Second, 5*time.Second)}, rescheduleNow, now.Add(-55 * time.Second)},
		{"unlimited", unlimited, structs.Allocation{ModifyTime: now.Add(-time.Minute).UnixNano(),
			RescheduleTracker: trackerWith(now.Add(-2*time.Minute), 5*time.Second, 5*time.Second, 5*time.Second)}, rescheduleNow, now.Add(-55 * time.Second)},
		{"forced", nil, structs.Allocation{DesiredTransition: structs.DesiredTransition{ForceReschedule: &yes}}, rescheduleNow, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideReschedule(&tc.alloc, tc.policy, now, "eval")
			if d.kind != tc.want {
				t.Fatalf("kind = %d, want %d", d.kind, tc.want)
			}
			if !tc.at.IsZero() && !d.at.Equal(tc.at) {
				t.Fatalf("at = %s, want %s", d.at, tc.at)
			}
		})
	}
}

func TestNextTracker(t *testing.T) {
	now := HarnessEpoch
	prev := &structs.Allocation{ID: "prev", NodeID: "n1",
		RescheduleTracker: trackerWith(now.Add(-time.Hour), time.Second, 2*time.Second)}
	limited := &structs.ReschedulePolicy{Attempts: 3, Interval: 30 * time.Minute}
	tr := nextTracker(prev, limited, now, 4*time.Second)
	if len(tr.Events) != 1 {
		t.Fatalf("events outside the interval kept: %d", len(tr.Events))
	}
	ev := tr.Events[0]
	if ev.PrevAllocID != "prev" || ev.PrevNodeID != "n1" || ev.Delay != 4*time.Second || ev.RescheduleTime != now.UnixNano() {
		t.Fatalf("event = %+v", ev)
	}
	var delays []time.Duration
	for i := 0; i < 8; i++ {
		delays = append(delays, time.Second)
	}
	prev.RescheduleTracker = trackerWith(now, delays...)
	tr = nextTracker(prev, &structs.ReschedulePolicy{Unlimited: true}, now, time.Second)
	if len(tr.Events) != maxUnlimitedEvents {
		t.Fatalf("unlimited tracker has %d events, want %d", len(tr.Events), maxUnlimitedEvents)
	}
	if prev.RescheduleTracker.Events[0].PrevAllocID != "" || len(prev.RescheduleTracker.Events) != 8 {
		t.Fatalf("previous tracker modified")
	}
}

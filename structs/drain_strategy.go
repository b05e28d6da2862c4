package structs

import "time"

// DeadlineTime returns when a drain must move everything left at once:
// ForceDeadline when set, else StartedAt+Deadline. ok is false for a
// drain without deadline (Deadline 0, or no start time to count from). A
// negative Deadline (drover node drain -force) is due at once: it returns
// StartedAt.
func (d *DrainStrategy) DeadlineTime() (at time.Time, ok bool) {
	switch {
	case d == nil:
		return time.Time{}, false
	case d.Deadline < 0:
		return d.StartedAt, true
	case !d.ForceDeadline.IsZero():
		return d.ForceDeadline, true
	case d.Deadline > 0 && !d.StartedAt.IsZero():
		return d.StartedAt.Add(d.Deadline), true
	}
	return time.Time{}, false
}

// Forced reports whether the drain is past its deadline at now: what is
// left on the node moves at once, without pacing.
func (d *DrainStrategy) Forced(now time.Time) bool {
	at, ok := d.DeadlineTime()
	return ok && !now.Before(at)
}

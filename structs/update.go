package structs

import "time"

// Update strategies: a group's update block paces the replacement of its
// allocations when the job changes (a rolling update, with canaries),
// through a deployment (structs/deployment.go).

// Health check modes of an update block, as in Nomad.
const (
	UpdateHealthCheckChecks     = "checks"
	UpdateHealthCheckTaskStates = "task_states"
	UpdateHealthCheckManual     = "manual"
)

// UpdateStrategy is a job's or a group's update block. A group's strategy
// is the job's with the group's own arguments over it (Canonicalize).
// MaxParallel 0 disables rolling updates: the group's allocations are
// replaced at once, as without a block.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// DefaultUpdateStrategy returns Nomad's defaults for an update block's
// absent arguments.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger:          30 * time.Second,
		MaxParallel:      1,
		HealthCheck:      UpdateHealthCheckChecks,
		MinHealthyTime:   10 * time.Second,
		HealthyDeadline:  5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// Copy returns a copy of u (nil for nil).
func (u *UpdateStrategy) Copy() *UpdateStrategy {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

// Rolling reports whether u paces updates through deployments: it is set
// and has a positive MaxParallel. A nil or MaxParallel 0 strategy means
// the group is replaced at once, as Nomad does.
func (u *UpdateStrategy) Rolling() bool { return u != nil && u.MaxParallel > 0 }

// validate checks a group's update block; count is the group's count.
func (u *UpdateStrategy) validate(v *validator, p, jobType string, count int) {
	if jobType != JobTypeService {
		if IsBatchType(jobType) {
			v.add(p, "job type %q does not allow an update block", jobType)
		} else {
			v.add(p, unsupported+"the update block on %s jobs (only service jobs have deployments)", jobType)
		}
		return
	}
	switch u.HealthCheck {
	case UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual:
	default:
		v.add(join(p, "HealthCheck"), "must be %q, %q or %q; got %q",
			UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual, u.HealthCheck)
	}
	if u.MaxParallel < 0 {
		v.add(join(p, "MaxParallel"), "must not be negative; got %d", u.MaxParallel)
	}
	if u.Canary < 0 {
		v.add(join(p, "Canary"), "must not be negative; got %d", u.Canary)
	} else if u.Canary > count {
		v.add(join(p, "Canary"), "must not exceed the group's count (%d); got %d", count, u.Canary)
	}
	if u.AutoPromote && u.Canary == 0 {
		v.add(join(p, "AutoPromote"), "needs canaries: Canary must be greater than zero")
	}
	if u.MinHealthyTime < 0 {
		v.add(join(p, "MinHealthyTime"), "must not be negative; got %s", u.MinHealthyTime)
	}
	if u.HealthyDeadline <= 0 {
		v.add(join(p, "HealthyDeadline"), "must be positive; got %s", u.HealthyDeadline)
	}
	if u.ProgressDeadline < 0 {
		v.add(join(p, "ProgressDeadline"), "must not be negative; got %s", u.ProgressDeadline)
	}
	if u.Stagger <= 0 {
		v.add(join(p, "Stagger"), "must be positive; got %s", u.Stagger)
	}
	if u.HealthyDeadline > 0 && u.MinHealthyTime >= u.HealthyDeadline {
		v.add(join(p, "MinHealthyTime"), "must be less than HealthyDeadline (%s); got %s", u.HealthyDeadline, u.MinHealthyTime)
	}
	if u.ProgressDeadline > 0 && u.HealthyDeadline >= u.ProgressDeadline {
		v.add(join(p, "ProgressDeadline"), "must be 0 or greater than HealthyDeadline (%s); got %s", u.HealthyDeadline, u.ProgressDeadline)
	}
}

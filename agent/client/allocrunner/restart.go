package allocrunner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

// restartJitter is the largest fraction of the delay added at random, so
// that tasks failing together do not restart in lock step.
const restartJitter = 0.25

// decision is what a restart tracker decides after a task ended or failed
// to start.
type decision struct {
	restart bool
	delay   time.Duration
	// failed: the task is dead and counts as failed.
	failed bool
	reason string
}

// restartTracker applies a group's restart policy to one task, as Nomad
// does: within each Interval the task may restart Attempts times, each
// after Delay (plus jitter); beyond that, mode "fail" gives up and mode
// "delay" waits for the interval to end and starts counting again.
// It is not safe for concurrent use (one task runner owns it).
type restartTracker struct {
	policy  structs.RestartPolicy
	batch   bool // a successful exit ends the task (batch jobs, ephemeral lifecycle tasks)
	count   int
	window  time.Time // start of the current interval
	now     func() time.Time
	jitterF func() float64
}

func newRestartTracker(p *structs.RestartPolicy, jobType string) *restartTracker {
	if p == nil {
		p = structs.DefaultRestartPolicy(jobType)
	}
	return &restartTracker{policy: *p, batch: structs.IsBatchType(jobType), now: time.Now, jitterF: rand.Float64}
}

// setPolicy replaces the policy (an in-place update), keeping the count
// of restarts in the current interval; nil keeps the policy.
func (r *restartTracker) setPolicy(p *structs.RestartPolicy) {
	if p != nil {
		r.policy = *p
	}
}

// afterExit decides what follows an exit (res) or a failed start (startErr).
func (r *restartTracker) afterExit(res *driver.ExitResult, startErr error) decision {
	if startErr != nil && errors.Is(startErr, driver.ErrUnrecoverable) {
		return decision{failed: true, reason: "Error was unrecoverable"}
	}
	if startErr == nil && res.Successful() && r.batch {
		return decision{reason: "Task completed successfully"}
	}
	now := r.now()
	end := r.window.Add(r.policy.Interval)
	if r.window.IsZero() || now.After(end) {
		r.count = 0
		r.window = now
		end = now.Add(r.policy.Interval)
	}
	r.count++
	if r.count <= r.policy.Attempts {
		return decision{restart: true, delay: r.jitter(), reason: "Restart within policy"}
	}
	reason := fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q",
		r.policy.Attempts, r.policy.Interval, r.policy.Mode)
	if r.policy.Mode != structs.RestartPolicyModeDelay {
		return decision{failed: true, reason: reason}
	}
	// Mode delay: wait out the interval, then a fresh window begins.
	r.count = 0
	r.window = end
	wait := end.Sub(now)
	if wait < r.policy.Delay {
		wait = r.policy.Delay
	}
	return decision{restart: true, delay: wait, reason: reason}
}

func (r *restartTracker) jitter() time.Duration {
	d := r.policy.Delay
	return d + time.Duration(float64(d)*restartJitter*r.jitterF())
}

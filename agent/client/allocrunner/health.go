package allocrunner

import (
	"time"

	"github.com/drover-project/drover/structs"
)

// Deployment health. An allocation that belongs to a deployment, in a
// group whose update block judges health by task states or checks, is
// watched from when it joins the deployment: it turns healthy once every
// main task has run for min_healthy_time without a restart (and, with
// health_check = "checks", its health checks have passed for as long),
// and unhealthy when a task fails or healthy_deadline passes first. The
// verdict is set once per deployment as the allocation's
// DeploymentStatus (Healthy, Timestamp) and reaches the servers with the
// allocation's next update, as in Nomad. With health_check = "manual" the
// operator sets it through the deployment instead.
//
// An allocation of a service job outside any deployment (a replacement
// placed by a drain, a reschedule or a count change) is judged the same
// way by its group's migrate block (health_check, min_healthy_time,
// healthy_deadline), as Nomad's client does for every service
// allocation: the drainer counts it as migrated only once its health is
// set (server/drainer).

// healthPollInterval is how often a watched allocation is judged.
const healthPollInterval = 100 * time.Millisecond

// healthPolicy is what a tracker judges by: from the update block for
// a deployment, or the migrate block outside one.
type healthPolicy struct {
	healthCheck                     string
	minHealthyTime, healthyDeadline time.Duration
}

// healthTracker judges one allocation's health for one deployment (or
// for none). It does no I/O and reads no clock: verdict is given the
// time.
type healthTracker struct {
	policy healthPolicy
	// tasks says, per task, whether it must be running for the allocation
	// to be healthy (main tasks and sidecars; not ephemeral prestart,
	// poststart or poststop tasks).
	tasks map[string]bool
	// start is when watching began (healthy_deadline runs from it);
	// checksSince is when the checks were first seen passing (zero: not
	// passing now).
	start, checksSince time.Time
}

// newHealthTracker returns a tracker for tg's allocations, started at
// now, or nil when the group is not judged by the client. In a
// deployment (deploy true) the update block rules: none when it is not
// rolling or its health is manual. Outside one, the migrate block rules,
// for service jobs only (the drainer waits for no other kind).
func newHealthTracker(jobType string, tg *structs.TaskGroup, deploy bool, now time.Time) *healthTracker {
	if tg == nil {
		return nil
	}
	var pol healthPolicy
	switch {
	case deploy:
		if !tg.Update.Rolling() || tg.Update.HealthCheck == structs.UpdateHealthCheckManual {
			return nil
		}
		pol = healthPolicy{tg.Update.HealthCheck, tg.Update.MinHealthyTime, tg.Update.HealthyDeadline}
	case jobType != structs.JobTypeService || tg.Migrate == nil:
		return nil
	default:
		pol = healthPolicy{tg.Migrate.HealthCheck, tg.Migrate.MinHealthyTime, tg.Migrate.HealthyDeadline}
	}
	if pol.healthCheck != structs.UpdateHealthCheckChecks && pol.healthCheck != structs.UpdateHealthCheckTaskStates {
		return nil
	}
	h := &healthTracker{policy: pol, tasks: map[string]bool{}, start: now}
	for _, t := range tg.Tasks {
		h.tasks[t.Name] = t.Lifecycle == nil || t.Lifecycle.Hook == "" || t.Lifecycle.IsSidecar()
	}
	return h
}

// healthInput is what a verdict reads: the task states, and the checks'
// health (ok false: the allocation runs no health check).
type healthInput struct {
	states                 map[string]*structs.TaskState
	checksHealthy, checkOK bool
}

// verdict returns whether the allocation's health is decided at now, and
// the decision.
func (h *healthTracker) verdict(in healthInput, now time.Time) (decided, healthy bool) {
	var since time.Time
	running := true
	for name, must := range h.tasks {
		st := in.states[name]
		if st == nil {
			running = running && !must
			continue
		}
		if st.State == structs.TaskStateDead && st.Failed {
			return true, false // a failed task fails the allocation
		}
		if !must {
			continue
		}
		if st.State != structs.TaskStateRunning {
			running = false
			continue
		}
		since = latest(since, st.StartedAt, st.LastRestart)
	}
	if h.policy.healthCheck == structs.UpdateHealthCheckChecks && in.checkOK {
		switch {
		case !in.checksHealthy:
			h.checksSince = time.Time{}
			running = false
		case h.checksSince.IsZero():
			h.checksSince = now
		}
		since = latest(since, h.checksSince)
	}
	if running && !since.IsZero() && now.Sub(since) >= h.policy.minHealthyTime {
		return true, true
	}
	if now.Sub(h.start) >= h.policy.healthyDeadline {
		return true, false
	}
	return false, false
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// healthWatch is the runner's watch of its allocation's health for one
// deployment ("": for none, by the migrate block).
type healthWatch struct {
	deploymentID string
	tracker      *healthTracker
	stop         chan struct{}
}

// watchHealth starts judging the allocation's health for its deployment
// (or, outside one, by its migrate block) when the client sets it and
// there is no verdict for it yet.
// A watch of an earlier deployment (before an in-place update moved the
// allocation) ends. Must be called without mu held.
func (ar *AllocRunner) watchHealth() {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	a := ar.alloc
	if ar.health != nil && ar.health.deploymentID == a.DeploymentID {
		return
	}
	if ar.health != nil {
		close(ar.health.stop)
		ar.health = nil
	}
	if a.Job == nil || a.DeploymentStatus.HasHealth() || !ar.started ||
		(ar.healthVerdict != nil && ar.healthFor == a.DeploymentID) {
		return
	}
	tracker := newHealthTracker(a.Job.Type, a.Job.LookupTaskGroup(a.TaskGroup), a.DeploymentID != "", time.Now())
	if tracker == nil {
		return
	}
	w := &healthWatch{deploymentID: a.DeploymentID, tracker: tracker, stop: make(chan struct{})}
	ar.health = w
	go ar.runHealth(w)
}

// runHealth judges the allocation until its health is decided, the watch
// ends, or the runner is done.
func (ar *AllocRunner) runHealth(w *healthWatch) {
	t := time.NewTicker(healthPollInterval)
	defer t.Stop()
	for {
		final := false
		select {
		case <-w.stop:
			return
		case <-ar.doneCh:
			// Every task is dead: judge once more; an allocation
			// that runs nothing is not healthy.
			final = true
		case <-t.C:
		}
		ar.mu.Lock()
		killing, detached := ar.killing, ar.detached
		ar.mu.Unlock()
		if killing || detached {
			return // stopped by the servers, or the client is leaving
		}
		states := make(map[string]*structs.TaskState, len(ar.tasks))
		for name, tr := range ar.tasks {
			states[name] = tr.State()
		}
		in := healthInput{states: states}
		in.checksHealthy, in.checkOK = ar.ChecksHealthy()
		now := time.Now()
		decided, healthy := w.tracker.verdict(in, now)
		if !decided && !final {
			continue
		}
		ar.mu.Lock()
		if ar.health != w {
			ar.mu.Unlock()
			return
		}
		ar.health = nil
		ar.healthVerdict = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now.UTC()}
		ar.healthFor = w.deploymentID
		ar.mu.Unlock()
		ar.logger.Info("allocation health decided", "deployment_id", w.deploymentID, "healthy", healthy)
		ar.publish()
		return
	}
}

// withHealthLocked sets, on c (a copy of the allocation being published),
// the client's health verdict for c's deployment (or for none). Needs mu.
func (ar *AllocRunner) withHealthLocked(c *structs.Allocation) {
	if ar.healthVerdict == nil || ar.healthFor != c.DeploymentID {
		return
	}
	ds := c.DeploymentStatus.Copy()
	if ds == nil {
		ds = &structs.AllocDeploymentStatus{}
	}
	ds.Healthy = ar.healthVerdict.Copy().Healthy
	ds.Timestamp = ar.healthVerdict.Timestamp
	c.DeploymentStatus = ds
}

package allocrunner

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestHealthVerdict drives the health tracker with task states and check
// results at chosen times: no sleeping.
func TestHealthVerdict(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	group := func(check string) *structs.TaskGroup {
		u := structs.DefaultUpdateStrategy()
		u.HealthCheck, u.MinHealthyTime, u.HealthyDeadline = check, 2*time.Second, 10*time.Second
		return &structs.TaskGroup{Name: "g", Update: u, Tasks: []*structs.Task{{Name: "main"},
			{Name: "init", Lifecycle: &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}},
			{Name: "side", Lifecycle: &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart, Sidecar: true}}}}
	}
	running := func(started time.Time) *structs.TaskState {
		return &structs.TaskState{State: structs.TaskStateRunning, StartedAt: started}
	}
	done := &structs.TaskState{State: structs.TaskStateDead}
	type step struct {
		at                    time.Duration
		states                map[string]*structs.TaskState
		checksHealthy, checks bool
		decided, healthy      bool
	}
	cases := []struct {
		name  string
		check string
		steps []step
	}{
		{"healthy after min_healthy_time", structs.UpdateHealthCheckTaskStates, []step{
			{at: time.Second, states: map[string]*structs.TaskState{"main": running(t0), "init": done, "side": running(t0)}},
			{at: 2 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "init": done, "side": running(t0)}, decided: true, healthy: true},
		}},
		{"a restart starts the wait again", structs.UpdateHealthCheckTaskStates, []step{
			{at: 3 * time.Second, states: map[string]*structs.TaskState{"main": {State: structs.TaskStateRunning, StartedAt: t0, LastRestart: t0.Add(2 * time.Second)}, "side": running(t0)}},
			{at: 4 * time.Second, states: map[string]*structs.TaskState{"main": {State: structs.TaskStateRunning, StartedAt: t0, LastRestart: t0.Add(2 * time.Second)}, "side": running(t0)}, decided: true, healthy: true},
		}},
		{"a failed task is unhealthy at once", structs.UpdateHealthCheckTaskStates, []step{
			{at: time.Second, states: map[string]*structs.TaskState{"main": {State: structs.TaskStateDead, Failed: true}}, decided: true},
		}},
		{"a sidecar not running holds it", structs.UpdateHealthCheckTaskStates, []step{
			{at: 5 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": {State: structs.TaskStatePending}}},
			{at: 10 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": {State: structs.TaskStatePending}}, decided: true},
		}},
		{"checks must pass for min_healthy_time", structs.UpdateHealthCheckChecks, []step{
			{at: 3 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true},
			{at: 4 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true, checksHealthy: true},
			{at: 5 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true},
			{at: 6 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true, checksHealthy: true},
			{at: 7 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true, checksHealthy: true},
			{at: 8 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true, checksHealthy: true, decided: true, healthy: true},
		}},
		{"checks mode without checks reads task states", structs.UpdateHealthCheckChecks, []step{
			{at: 2 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, decided: true, healthy: true},
		}},
		{"healthy_deadline", structs.UpdateHealthCheckChecks, []step{
			{at: 9 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true},
			{at: 10 * time.Second, states: map[string]*structs.TaskState{"main": running(t0), "side": running(t0)}, checks: true, decided: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHealthTracker(structs.JobTypeService, group(c.check), true, t0)
			for i, s := range c.steps {
				decided, healthy := h.verdict(healthInput{states: s.states, checksHealthy: s.checksHealthy, checkOK: s.checks}, t0.Add(s.at))
				if decided != s.decided || healthy != s.healthy {
					t.Fatalf("step %d (at %s): decided %v healthy %v, want %v %v", i, s.at, decided, healthy, s.decided, s.healthy)
				}
			}
		})
	}
	manual := group(structs.UpdateHealthCheckManual)
	if newHealthTracker(structs.JobTypeService, manual, true, t0) != nil || newHealthTracker(structs.JobTypeService, &structs.TaskGroup{}, true, t0) != nil {
		t.Fatal("a manual or non-rolling group is watched")
	}
}

// TestHealthMigrateBlock: outside a deployment, a service allocation is
// judged by its group's migrate block, whatever its update block says;
// other job types and manual health are not watched.
func TestHealthMigrateBlock(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	tg := &structs.TaskGroup{Name: "g", Tasks: []*structs.Task{{Name: "main"}},
		Update:  &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates, MinHealthyTime: time.Second, HealthyDeadline: time.Minute},
		Migrate: &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates, MinHealthyTime: 3 * time.Second, HealthyDeadline: 10 * time.Second}}
	h := newHealthTracker(structs.JobTypeService, tg, false, t0)
	if h == nil {
		t.Fatal("a service allocation outside a deployment is not watched")
	}
	in := healthInput{states: map[string]*structs.TaskState{"main": {State: structs.TaskStateRunning, StartedAt: t0}}}
	if decided, _ := h.verdict(in, t0.Add(2*time.Second)); decided {
		t.Fatal("decided before the migrate block's min_healthy_time (the update block's was used)")
	}
	if decided, healthy := h.verdict(in, t0.Add(3*time.Second)); !decided || !healthy {
		t.Fatalf("at min_healthy_time: decided %v healthy %v", decided, healthy)
	}
	pending := healthInput{states: map[string]*structs.TaskState{"main": {State: structs.TaskStatePending}}}
	h = newHealthTracker(structs.JobTypeService, tg, false, t0)
	if decided, healthy := h.verdict(pending, t0.Add(10*time.Second)); !decided || healthy {
		t.Fatalf("at the migrate block's healthy_deadline: decided %v healthy %v", decided, healthy)
	}
	if newHealthTracker(structs.JobTypeBatch, tg, false, t0) != nil || newHealthTracker(structs.JobTypeService, &structs.TaskGroup{}, false, t0) != nil {
		t.Fatal("a batch allocation, or a group without a migrate block, is watched")
	}
	manual := *tg
	manual.Migrate = &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckManual}
	if newHealthTracker(structs.JobTypeService, &manual, false, t0) != nil {
		t.Fatal("manual migrate health is watched")
	}
}

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
			h := newHealthTracker(group(c.check), t0)
			for i, s := range c.steps {
				decided, healthy := h.verdict(healthInput{states: s.states, checksHealthy: s.checksHealthy, checkOK: s.checks}, t0.Add(s.at))
				if decided != s.decided || healthy != s.healthy {
					t.Fatalf("step %d (at %s): decided %v healthy %v, want %v %v", i, s.at, decided, healthy, s.decided, s.healthy)
				}
			}
		})
	}
	manual := group(structs.UpdateHealthCheckManual)
	if newHealthTracker(manual, t0) != nil || newHealthTracker(&structs.TaskGroup{}, t0) != nil {
		t.Fatal("a manual or non-rolling group is watched")
	}
}

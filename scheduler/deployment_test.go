package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// rollingJob is a service job of count with an update block.
func rollingJob(count int, set func(u *structs.UpdateStrategy)) *structs.Job {
	j := mock.Job()
	j.TaskGroups[0].Count = count
	u := structs.DefaultUpdateStrategy()
	u.MinHealthyTime = 2 * time.Second
	if set != nil {
		set(u)
	}
	j.TaskGroups[0].Update = u
	return j
}

// liveAllocs returns the job's live allocations.
func liveAllocs(t *testing.T, h *Harness, job *structs.Job) []*structs.Allocation {
	t.Helper()
	all, err := h.State.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Allocation
	for _, a := range all {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// reportHealth reports, as their clients would, the health of the job's
// live allocations of its current deployment that have none yet and pass
// pick (nil: all).
func reportHealth(t *testing.T, h *Harness, job *structs.Job, healthy bool, pick func(a *structs.Allocation) bool) int {
	t.Helper()
	var upd []*structs.Allocation
	for _, a := range liveAllocs(t, h, job) {
		if a.DeploymentID == "" || a.DeploymentStatus.HasHealth() || (pick != nil && !pick(a)) {
			continue
		}
		hl := healthy
		upd = append(upd, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &hl, Timestamp: HarnessEpoch}})
	}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), upd, nil); err != nil {
		t.Fatal(err)
	}
	return len(upd)
}

func latestDeployment(t *testing.T, h *Harness, job *structs.Job) *structs.Deployment {
	t.Helper()
	d, err := h.State.LatestDeploymentByJobID(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// versions counts the live allocations by job version, and those of the
// current version not yet healthy.
func versions(t *testing.T, h *Harness, job *structs.Job) (old, cur, unhealthyCur int) {
	t.Helper()
	for _, a := range liveAllocs(t, h, job) {
		if a.Job.Version == job.Version {
			cur++
			if !a.DeploymentStatus.IsHealthy() {
				unhealthyCur++
			}
		} else {
			old++
		}
	}
	return old, cur, unhealthyCur
}

// TestRollingUpdatePacedByMaxParallel: the first version's placements make
// a deployment that succeeds once they are healthy; a destructive change
// then replaces at most max_parallel allocations at a time, the next batch
// starting only as the last turns healthy, until the new deployment
// succeeds.
func TestRollingUpdatePacedByMaxParallel(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 4)
	job := addJob(t, h, rollingJob(6, func(u *structs.UpdateStrategy) { u.MaxParallel = 2 }))
	process(t, h, job, structs.EvalTriggerJobRegister)
	d0 := latestDeployment(t, h, job)
	if d0 == nil || d0.Status != structs.DeploymentStatusRunning || d0.TaskGroups["web"].DesiredTotal != 6 || d0.TaskGroups["web"].PlacedAllocs != 6 {
		t.Fatalf("first deployment = %+v", d0)
	}
	reportHealth(t, h, job, true, nil)
	process(t, h, job, structs.EvalTriggerDeploymentWatcher)
	if d := latestDeployment(t, h, job); d.ID != d0.ID || d.Status != structs.DeploymentStatusSuccessful || d.TaskGroups["web"].HealthyAllocs != 6 {
		t.Fatalf("first deployment after health = %+v", d)
	}

	v1 := updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["V"] = "1" })
	process(t, h, v1, structs.EvalTriggerJobRegister)
	d1 := latestDeployment(t, h, v1)
	if d1.ID == d0.ID || d1.JobVersion != v1.Version || d1.Status != structs.DeploymentStatusRunning {
		t.Fatalf("second deployment = %+v", d1)
	}
	for round := 0; ; round++ {
		old, cur, pending := versions(t, h, v1)
		if old+cur != 6 || pending > 2 {
			t.Fatalf("round %d: %d old, %d new (%d not healthy): more than max_parallel in flight", round, old, cur, pending)
		}
		if want := min(2*(round+1), 6); cur != want {
			t.Fatalf("round %d: %d new allocations, want %d", round, cur, want)
		}
		// A second evaluation before any health changes nothing.
		before := len(h.Plans)
		process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
		if len(h.Plans) != before {
			t.Fatalf("round %d: an evaluation without new health replaced more: %+v", round, h.Plans[len(h.Plans)-1])
		}
		reportHealth(t, h, v1, true, nil)
		process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
		if cur == 6 {
			break
		}
	}
	d := latestDeployment(t, h, v1)
	if d.ID != d1.ID || d.Status != structs.DeploymentStatusSuccessful || d.TaskGroups["web"].HealthyAllocs != 6 || d.TaskGroups["web"].PlacedAllocs != 6 {
		t.Fatalf("second deployment at the end = %+v %+v", d, d.TaskGroups["web"])
	}
}

// TestRollingUpdateStopsOnUnhealthyAndPause: an unhealthy allocation of
// the deployment, or a paused deployment, holds the remaining updates.
func TestRollingUpdateStopsOnUnhealthyAndPause(t *testing.T) {
	for _, tc := range []string{"unhealthy", "paused", "failed"} {
		t.Run(tc, func(t *testing.T) {
			h := testHarness(t)
			mockNodes(t, h, 4)
			job := addJob(t, h, rollingJob(4, func(u *structs.UpdateStrategy) { u.MaxParallel = 1 }))
			process(t, h, job, structs.EvalTriggerJobRegister)
			reportHealth(t, h, job, true, nil)
			process(t, h, job, structs.EvalTriggerDeploymentWatcher)
			v1 := updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["V"] = "1" })
			process(t, h, v1, structs.EvalTriggerJobRegister)
			d := latestDeployment(t, h, v1)
			switch tc {
			case "unhealthy":
				reportHealth(t, h, v1, false, nil)
			default:
				status := structs.DeploymentStatusPaused
				if tc == "failed" {
					status = structs.DeploymentStatusFailed
				}
				reportHealth(t, h, v1, true, nil)
				if err := h.State.UpdateDeploymentStatus(h.NextIndex(), &structs.DeploymentStatusUpdateRequest{
					DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: status}}); err != nil {
					t.Fatal(err)
				}
			}
			before := len(h.Plans)
			process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
			if old, cur, _ := versions(t, h, v1); old != 3 || cur != 1 || len(h.Plans) != before {
				t.Fatalf("%d old, %d new after %s: the update went on", old, cur, tc)
			}
		})
	}
}

// TestCanaryThenPromotion: with a canary, a destructive change first places
// the canary beside the old allocations and waits, healthy or not, for
// promotion; once promoted, the old allocation under the canary's name
// stops and the rest roll out.
func TestCanaryThenPromotion(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 4)
	job := addJob(t, h, rollingJob(3, func(u *structs.UpdateStrategy) { u.MaxParallel, u.Canary = 1, 1 }))
	process(t, h, job, structs.EvalTriggerJobRegister)
	reportHealth(t, h, job, true, nil)
	process(t, h, job, structs.EvalTriggerDeploymentWatcher)

	v1 := updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["V"] = "1" })
	process(t, h, v1, structs.EvalTriggerJobRegister)
	d := latestDeployment(t, h, v1)
	g := d.TaskGroups["web"]
	if g.DesiredCanaries != 1 || len(g.PlacedCanaries) != 1 || d.StatusDescription != structs.DeploymentStatusDescriptionRunningNeedsPromotion {
		t.Fatalf("canary deployment = %+v %+v", d, g)
	}
	if old, cur, _ := versions(t, h, v1); old != 3 || cur != 1 {
		t.Fatalf("%d old, %d new: the canary did not stand beside the old allocations", old, cur)
	}
	reportHealth(t, h, v1, true, nil)
	process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
	if old, cur, _ := versions(t, h, v1); old != 3 || cur != 1 {
		t.Fatalf("%d old, %d new: the update went on before promotion", old, cur)
	}
	if err := h.State.UpdateDeploymentPromotion(h.NextIndex(), &structs.ApplyDeploymentPromoteRequest{
		DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true}}); err != nil {
		t.Fatal(err)
	}
	process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
	names := map[string]int{}
	for _, a := range liveAllocs(t, h, v1) {
		names[a.Name]++
	}
	old, cur, _ := versions(t, h, v1)
	if old != 1 || cur != 2 || len(names) != 3 {
		t.Fatalf("after promotion: %d old, %d new, names %v", old, cur, names)
	}
	for i := 0; i < 3 && old > 0; i++ {
		reportHealth(t, h, v1, true, nil)
		process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
		old, _, _ = versions(t, h, v1)
	}
	reportHealth(t, h, v1, true, nil)
	process(t, h, v1, structs.EvalTriggerDeploymentWatcher)
	if d := latestDeployment(t, h, v1); d.Status != structs.DeploymentStatusSuccessful {
		t.Fatalf("deployment after the rollout = %+v", d)
	}
	if old, cur, _ := versions(t, h, v1); old != 0 || cur != 3 {
		t.Fatalf("at the end: %d old, %d new", old, cur)
	}
}

// TestDeploymentCancelledWhenJobStops: stopping the job cancels its
// running deployment; a job without an update block has none at all.
func TestDeploymentCancelledWhenJobStops(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 2)
	job := addJob(t, h, rollingJob(2, nil))
	process(t, h, job, structs.EvalTriggerJobRegister)
	stopped := updateJob(t, h, job, func(j *structs.Job) { j.Stop = true })
	process(t, h, stopped, structs.EvalTriggerJobDeregister)
	d := latestDeployment(t, h, stopped)
	if d.Status != structs.DeploymentStatusCancelled || d.StatusDescription != structs.DeploymentStatusDescriptionStoppedJob {
		t.Fatalf("deployment of the stopped job = %+v", d)
	}

	plain := addJob(t, h, mock.Job())
	process(t, h, plain, structs.EvalTriggerJobRegister)
	if d := latestDeployment(t, h, plain); d != nil {
		t.Fatalf("a job without an update block got a deployment: %+v", d)
	}
	for _, a := range liveAllocs(t, h, plain) {
		if a.DeploymentID != "" {
			t.Fatalf("allocation of a job without an update block joined deployment %s", a.DeploymentID)
		}
	}
}

package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// running stores count running allocations of job, spread round-robin
// over nodes, and returns them.
func running(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node, count int) []*structs.Allocation {
	t.Helper()
	out := make([]*structs.Allocation, count)
	for i := range out {
		out[i] = mock.Alloc(job, nodes[i%len(nodes)], i)
	}
	addAllocs(t, h, out...)
	return out
}

// updateJob stores a changed copy of the stored job and returns the new
// stored version.
func updateJob(t *testing.T, h *Harness, job *structs.Job, edit func(j *structs.Job)) *structs.Job {
	t.Helper()
	j := job.Copy()
	edit(j)
	return addJob(t, h, j)
}

// stopsIn returns every stop the harness's plans made, by alloc ID.
func stopsIn(h *Harness) map[string]*structs.Allocation {
	out := map[string]*structs.Allocation{}
	for _, p := range h.Plans {
		for _, a := range PlanStops(p) {
			out[a.ID] = a
		}
	}
	return out
}

// placedIn returns every new placement of the harness's plans (not
// updates of existing allocations).
func placedIn(h *Harness, existing []*structs.Allocation) []*structs.Allocation {
	old := map[string]bool{}
	for _, a := range existing {
		old[a.ID] = true
	}
	var out []*structs.Allocation
	for _, p := range h.Plans {
		for _, a := range PlanAllocs(p) {
			if !old[a.ID] {
				out = append(out, a)
			}
		}
	}
	return out
}

func TestServiceReconcile(t *testing.T) {
	type outcome struct {
		liveIdx    []int                              // indexes of live allocations after the eval
		stopped    map[int]string                     // index -> desired description of stopped allocs
		lost       []int                              // indexes stopped as lost
		replaced   []int                              // indexes placed again with PreviousAllocation
		newIdx     []int                              // indexes placed fresh
		liveOnNode func(nodes []*structs.Node) string // node that must hold no live alloc
	}
	cases := []struct {
		name  string
		count int
		setup func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node, allocs []*structs.Allocation) *structs.Job
		want  outcome
	}{
		{
			name:  "scale down stops the highest indexes",
			count: 6,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, _ []*structs.Allocation) *structs.Job {
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Count = 2 })
			},
			want: outcome{liveIdx: []int{0, 1}, stopped: map[int]string{2: descNotNeeded, 3: descNotNeeded, 4: descNotNeeded, 5: descNotNeeded}},
		},
		{
			name:  "scale up adds the next indexes",
			count: 3,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, _ []*structs.Allocation) *structs.Job {
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Count = 5 })
			},
			want: outcome{liveIdx: seq(0, 5), newIdx: []int{3, 4}},
		},
		{
			name:  "stopped job stops everything",
			count: 4,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, _ []*structs.Allocation) *structs.Job {
				if err := h.State.DeregisterJob(h.NextIndex(), job.Namespace, job.ID, false, 0, nil); err != nil {
					t.Fatal(err)
				}
				return job
			},
			want: outcome{stopped: map[int]string{0: descJobStopped, 1: descJobStopped, 2: descJobStopped, 3: descJobStopped}},
		},
		{
			name:  "purged job stops everything",
			count: 3,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, _ []*structs.Allocation) *structs.Job {
				if err := h.State.DeregisterJob(h.NextIndex(), job.Namespace, job.ID, true, 0, nil); err != nil {
					t.Fatal(err)
				}
				return job
			},
			want: outcome{stopped: map[int]string{0: descJobStopped, 1: descJobStopped, 2: descJobStopped}},
		},
		{
			name:  "removed group is stopped",
			count: 2,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, _ []*structs.Allocation) *structs.Job {
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Name = "api" })
			},
			// the new group "api" places 2 (indexes 0, 1 of api); web's are stopped
			want: outcome{stopped: map[int]string{0: descNotNeeded, 1: descNotNeeded}, liveIdx: []int{0, 1}, newIdx: []int{0, 1}},
		},
		{
			name:  "allocs on a down node are lost and replaced elsewhere",
			count: 6,
			setup: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node, _ []*structs.Allocation) *structs.Job {
				if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[0].ID, structs.NodeStatusDown, 0, nil, nil); err != nil {
					t.Fatal(err)
				}
				return job
			},
			want: outcome{liveIdx: seq(0, 6), lost: []int{0, 3}, replaced: []int{0, 3},
				liveOnNode: func(nodes []*structs.Node) string { return nodes[0].ID }},
		},
		{
			name:  "allocs on a deleted node are lost and replaced",
			count: 3,
			setup: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node, _ []*structs.Allocation) *structs.Job {
				if err := h.State.DeleteNodes(h.NextIndex(), []string{nodes[1].ID}); err != nil {
					t.Fatal(err)
				}
				return job
			},
			want: outcome{liveIdx: seq(0, 3), lost: []int{1}, replaced: []int{1}},
		},
		{
			name:  "scale down with a lost alloc drops the lost one first",
			count: 6,
			setup: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node, allocs []*structs.Allocation) *structs.Job {
				if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[1].ID, structs.NodeStatusDown, 0, nil, nil); err != nil {
					t.Fatal(err)
				}
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Count = 4 })
			},
			// lost: 1 and 4 (node 1 of 3); count 4 keeps 0, 2, 3, 5
			want: outcome{liveIdx: []int{0, 2, 3, 5}, lost: []int{1, 4}},
		},
		{
			name:  "scale down gives up a failed alloc before a healthy one",
			count: 3,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, allocs []*structs.Allocation) *structs.Job {
				failed := allocs[0].Copy()
				failed.ClientStatus = structs.AllocClientStatusFailed
				addAllocs(t, h, failed)
				return updateJob(t, h, job, func(j *structs.Job) {
					j.TaskGroups[0].Count = 2
					j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{}
				})
			},
			want: outcome{liveIdx: []int{1, 2}, stopped: map[int]string{0: descNotNeeded}},
		},
		{
			name:  "failed alloc that may not be rescheduled keeps its slot",
			count: 3,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, allocs []*structs.Allocation) *structs.Job {
				failed := allocs[2].Copy()
				failed.ClientStatus = structs.AllocClientStatusFailed
				addAllocs(t, h, failed)
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{} })
			},
			want: outcome{liveIdx: []int{0, 1}},
		},
		{
			name:  "complete service allocs are replaced",
			count: 2,
			setup: func(t *testing.T, h *Harness, job *structs.Job, _ []*structs.Node, allocs []*structs.Allocation) *structs.Job {
				done := allocs[1].Copy()
				done.ClientStatus = structs.AllocClientStatusComplete
				if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{done}, nil); err != nil {
					t.Fatal(err)
				}
				return job
			},
			want: outcome{liveIdx: []int{0, 1}, newIdx: []int{1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 3)
			j := mock.Job()
			j.TaskGroups[0].Count = tc.count
			job := addJob(t, h, j)
			allocs := running(t, h, job, nodes, tc.count)
			job = tc.setup(t, h, job, nodes, allocs)
			process(t, h, job, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, job)
			if got := indexesOf(live); !slices.Equal(got, tc.want.liveIdx) {
				t.Fatalf("live indexes %v, want %v", got, tc.want.liveIdx)
			}
			stops := stopsIn(h)
			var lost []int
			stopped := map[int]string{}
			for _, a := range stops {
				if a.ClientStatus == structs.AllocClientStatusLost {
					lost = append(lost, allocIndex(a.Name))
					if a.DesiredDescription != descLost {
						t.Fatalf("lost alloc described %q", a.DesiredDescription)
					}
				} else {
					stopped[allocIndex(a.Name)] = a.DesiredDescription
				}
				if a.DesiredStatus != structs.AllocDesiredStatusStop {
					t.Fatalf("stop with desired status %q", a.DesiredStatus)
				}
			}
			slices.Sort(lost)
			if !slices.Equal(lost, tc.want.lost) {
				t.Fatalf("lost %v, want %v", lost, tc.want.lost)
			}
			if len(stopped) != len(tc.want.stopped) {
				t.Fatalf("stopped %v, want %v", stopped, tc.want.stopped)
			}
			for i, d := range tc.want.stopped {
				if stopped[i] != d {
					t.Fatalf("stopped %v, want %v", stopped, tc.want.stopped)
				}
			}
			var replaced, fresh []int
			for _, a := range placedIn(h, allocs) {
				if a.PreviousAllocation != "" {
					replaced = append(replaced, allocIndex(a.Name))
				} else {
					fresh = append(fresh, allocIndex(a.Name))
				}
			}
			slices.Sort(replaced)
			slices.Sort(fresh)
			if !slices.Equal(replaced, tc.want.replaced) || !slices.Equal(fresh, tc.want.newIdx) {
				t.Fatalf("replaced %v fresh %v, want %v %v", replaced, fresh, tc.want.replaced, tc.want.newIdx)
			}
			if tc.want.liveOnNode != nil {
				bad := tc.want.liveOnNode(nodes)
				for _, a := range live {
					if a.NodeID == bad {
						t.Fatalf("%s still live on the down node", a.Name)
					}
				}
			}
			if e := lastEval(t, h); e.Status != structs.EvalStatusComplete {
				t.Fatalf("eval status %s: %s", e.Status, e.StatusDescription)
			}
		})
	}
}

func TestBatchCompleteNeverReplaced(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2)
	j := mock.BatchJob()
	j.TaskGroups[0].Count = 3
	job := addJob(t, h, j)
	allocs := running(t, h, job, nodes, 3)
	var upd []*structs.Allocation
	for _, a := range allocs[:2] {
		c := a.Copy()
		c.ClientStatus = structs.AllocClientStatusComplete
		upd = append(upd, c)
	}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), upd, nil); err != nil {
		t.Fatal(err)
	}
	// Also a batch alloc that completed and was then stopped still counts.
	stopped := allocs[2].Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	stopped.ClientStatus = structs.AllocClientStatusComplete
	addAllocs(t, h, stopped)

	process(t, h, job, structs.EvalTriggerJobRegister)
	if len(h.Plans) != 0 {
		t.Fatalf("batch job with complete allocs submitted %d plans: %v", len(h.Plans), PlanAllocs(h.Plans[0]))
	}
}

// TestBatchNewVersionRunsAgain: as in Nomad, the finished allocations of
// an older version of a batch job neither count nor are replaced, so a
// new version (even one that changes nothing the tasks see) runs the
// whole group again; allocations still running are updated as usual.
func TestBatchNewVersionRunsAgain(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2)
	j := mock.BatchJob()
	j.TaskGroups[0].Count = 3
	job := addJob(t, h, j)
	allocs := running(t, h, job, nodes, 3)
	var upd []*structs.Allocation
	for i, a := range allocs[:2] {
		c := a.Copy()
		c.ClientStatus = []string{structs.AllocClientStatusComplete, structs.AllocClientStatusFailed}[i]
		upd = append(upd, c)
	}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), upd, nil); err != nil {
		t.Fatal(err)
	}
	job = updateJob(t, h, job, func(j *structs.Job) { j.Priority = 60 })
	process(t, h, job, structs.EvalTriggerJobRegister)

	live, _ := jobAllocs(t, h, job)
	var fresh, inPlace []string
	for _, a := range live {
		switch {
		case a.ID == allocs[2].ID:
			inPlace = append(inPlace, a.Name)
		case a.PreviousAllocation != "":
			t.Fatalf("%s replaces %s; want a fresh run", a.Name, a.PreviousAllocation)
		default:
			fresh = append(fresh, a.Name)
		}
	}
	slices.Sort(fresh)
	if len(inPlace) != 1 || !slices.Equal(fresh, []string{allocs[0].Name, allocs[1].Name}) {
		t.Fatalf("fresh %v, in place %v", fresh, inPlace)
	}
	if stops := stopsIn(h); len(stops) != 0 {
		t.Fatalf("stopped %d allocations", len(stops))
	}
}

func TestMigrateDrainingNode(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 3)
	j := mock.Job()
	j.TaskGroups[0].Count = 5
	j.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 2, MinHealthyTime: 10 * time.Second}
	job := addJob(t, h, j)
	allocs := running(t, h, job, nodes[:1], 5) // all on node 0

	drain := func() {
		if err := h.State.UpdateNodeDrain(h.NextIndex(), &structs.NodeUpdateDrainRequest{
			NodeID: nodes[0].ID, DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}}); err != nil {
			t.Fatal(err)
		}
		live, _ := jobAllocs(t, h, job)
		var upd []*structs.Allocation
		yes := true
		for _, a := range live {
			if a.NodeID == nodes[0].ID && !a.DesiredTransition.ShouldMigrate() {
				c := a.Copy()
				c.DesiredTransition.Migrate = &yes
				upd = append(upd, c)
			}
		}
		addAllocs(t, h, upd...)
	}
	drain()

	migrated := func() (moved, onDrained int) {
		live, _ := jobAllocs(t, h, job)
		for _, a := range live {
			if a.NodeID == nodes[0].ID {
				onDrained++
			} else {
				moved++
			}
		}
		return moved, onDrained
	}

	process(t, h, job, structs.EvalTriggerNodeDrain)
	if moved, left := migrated(); moved != 2 || left != 3 {
		t.Fatalf("round 1 moved %d left %d, want 2 and 3 (max_parallel 2)", moved, left)
	}
	for _, a := range stopsIn(h) {
		if a.DesiredDescription != descMigrating {
			t.Fatalf("stop described %q", a.DesiredDescription)
		}
	}
	var followups int
	for _, e := range h.CreateEvals {
		if e.TriggeredBy == structs.EvalTriggerNodeDrain && e.Status == structs.EvalStatusPending {
			followups++
			if want := HarnessEpoch.Add(10 * time.Second); !e.WaitUntil.Equal(want) {
				t.Fatalf("follow-up waits until %s, want %s", e.WaitUntil, want)
			}
		}
	}
	if followups != 1 {
		t.Fatalf("%d drain follow-ups, want 1", followups)
	}

	// The replacements are still pending: nothing more moves.
	process(t, h, job, structs.EvalTriggerNodeDrain)
	if moved, left := migrated(); moved != 2 || left != 3 {
		t.Fatalf("with 2 migrations in flight moved %d left %d", moved, left)
	}

	// Once they run, the next two go.
	live, _ := jobAllocs(t, h, job)
	var upd []*structs.Allocation
	for _, a := range live {
		if a.NodeID != nodes[0].ID {
			c := a.Copy()
			c.ClientStatus = structs.AllocClientStatusRunning
			upd = append(upd, c)
		}
	}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), upd, nil); err != nil {
		t.Fatal(err)
	}
	process(t, h, job, structs.EvalTriggerNodeDrain)
	if moved, left := migrated(); moved != 4 || left != 1 {
		t.Fatalf("round 2 moved %d left %d, want 4 and 1", moved, left)
	}
	for _, a := range placedIn(h, allocs) {
		if a.PreviousAllocation == "" || a.NodeID == nodes[0].ID {
			t.Fatalf("migration %s on %s prev %q", a.Name, a.NodeID, a.PreviousAllocation)
		}
	}
}

// TestMigrateForcedDrainIsNotPaced: past the drain's deadline every
// marked allocation moves at once, whatever max_parallel.
func TestMigrateForcedDrainIsNotPaced(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 3)
	j := mock.Job()
	j.TaskGroups[0].Count = 5
	j.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second}
	job := addJob(t, h, j)
	running(t, h, job, nodes[:1], 5)
	if err := h.State.UpdateNodeDrain(h.NextIndex(), &structs.NodeUpdateDrainRequest{
		NodeID: nodes[0].ID, DrainStrategy: &structs.DrainStrategy{Deadline: -1, StartedAt: HarnessEpoch}}); err != nil {
		t.Fatal(err)
	}
	live, _ := jobAllocs(t, h, job)
	yes := true
	var upd []*structs.Allocation
	for _, a := range live {
		c := a.Copy()
		c.DesiredTransition.Migrate = &yes
		upd = append(upd, c)
	}
	addAllocs(t, h, upd...)

	process(t, h, job, structs.EvalTriggerNodeDrain)
	live, _ = jobAllocs(t, h, job)
	for _, a := range live {
		if a.NodeID == nodes[0].ID {
			t.Fatalf("allocation %s left on the drained node", a.Name)
		}
	}
	if len(live) != 5 {
		t.Fatalf("%d live allocations, want 5", len(live))
	}
	for _, e := range h.CreateEvals {
		if e.TriggeredBy == structs.EvalTriggerNodeDrain {
			t.Fatalf("follow-up evaluation %+v for a forced drain", e)
		}
	}
}

package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestJobUpdateInPlaceOrDestructive(t *testing.T) {
	cases := []struct {
		name        string
		edit        func(j *structs.Job)
		destructive bool
	}{
		{"env", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["NEW"] = "1" }, false},
		{"task meta", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Meta = map[string]string{"a": "b"} }, false},
		{"group meta", func(j *structs.Job) { j.TaskGroups[0].Meta = map[string]string{"a": "b"} }, false},
		{"job meta", func(j *structs.Job) { j.Meta = map[string]string{"a": "b"} }, false},
		{"task config", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["run_for"] = "20s" }, false},
		{"kill timeout", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, false},
		{"restart policy", func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 9 }, false},
		{"datacenters still include the node", func(j *structs.Job) { j.Datacenters = []string{"dc1", "dc2"} }, false},
		{"priority", func(j *structs.Job) { j.Priority = 70 }, false},
		{"driver", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "raw_exec" }, true},
		{"cpu", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 600 }, true},
		{"memory", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 300 }, true},
		{"job constraint", func(j *structs.Job) {
			j.Constraints = append(j.Constraints, &structs.Constraint{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="})
		}, true},
		{"group constraint", func(j *structs.Job) {
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="}}
		}, true},
		{"task constraint", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="}}
		}, true},
		{"task added", func(j *structs.Job) {
			t2 := j.TaskGroups[0].Tasks[0].Copy()
			t2.Name = "sidecar"
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, t2)
		}, true},
		{"task renamed", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "api" }, true},
		{"datacenters exclude the node", func(j *structs.Job) { j.Datacenters = []string{"dc1-new", "dc2"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 3)
			mockNodes(t, h, 3, func(_ int, n *structs.Node) { n.Datacenter = "dc1-new" })
			j := mock.Job()
			j.TaskGroups[0].Count = 3
			job := addJob(t, h, j)
			allocs := running(t, h, job, nodes, 3)
			newJob := updateJob(t, h, job, tc.edit)
			if newJob.JobModifyIndex == job.JobModifyIndex {
				t.Fatalf("update did not change JobModifyIndex")
			}
			process(t, h, newJob, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, newJob)
			if len(live) != 3 {
				t.Fatalf("%d live allocs, want 3", len(live))
			}
			old := map[string]*structs.Allocation{}
			for _, a := range allocs {
				old[a.ID] = a
			}
			stops := stopsIn(h)
			for _, a := range live {
				if a.Job.JobModifyIndex != newJob.JobModifyIndex {
					t.Fatalf("%s still runs job index %d", a.Name, a.Job.JobModifyIndex)
				}
				prev, kept := old[a.ID]
				switch {
				case tc.destructive && kept:
					t.Fatalf("%s updated in place; want destructive", a.Name)
				case tc.destructive:
					if a.PreviousAllocation == "" || stops[a.PreviousAllocation] == nil ||
						stops[a.PreviousAllocation].DesiredDescription != descUpdating {
						t.Fatalf("destructive update of %s did not stop its previous alloc", a.Name)
					}
				case !kept:
					t.Fatalf("%s replaced; want an in-place update", a.Name)
				default:
					if a.NodeID != prev.NodeID || a.Name != prev.Name {
						t.Fatalf("in-place update moved %s", a.Name)
					}
					if a.JobVersion != newJob.Version {
						t.Fatalf("in-place JobVersion %d, want %d", a.JobVersion, newJob.Version)
					}
				}
			}
			if !tc.destructive && len(stops) != 0 {
				t.Fatalf("in-place update stopped %d allocs", len(stops))
			}
		})
	}
}

func TestNeedsDestructiveUpdateMissingGroup(t *testing.T) {
	a, b := mock.Job(), mock.Job()
	b.TaskGroups[0].Name = "other"
	if !needsDestructiveUpdate(a, b, "web", mock.Node()) {
		t.Fatal("a group missing from the new job must be destructive")
	}
}

func TestDestructiveUpdateOnFullCluster(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(j *structs.Job)
		wantNew  int // allocs of the new version live after the eval
		wantOld  int // allocs of the old version still live
		wantFail bool
	}{
		{"each replacement fits in its predecessor's room", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
		}, 6, 0, false},
		{"replacements that do not fit leave the old version running", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Resources.CPU = 2500
		}, 0, 6, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			// Room for exactly two allocations of 1900 MHz per node.
			nodes := mockNodes(t, h, 3, func(_ int, n *structs.Node) { n.NodeResources.Cpu.CpuShares = 3900 })
			j := mock.Job()
			j.TaskGroups[0].Count = 6
			j.TaskGroups[0].Tasks[0].Resources.CPU = 1900
			job := addJob(t, h, j)
			running(t, h, job, nodes, 6)
			newJob := updateJob(t, h, job, tc.edit)
			process(t, h, newJob, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, newJob)
			var fresh, old int
			for _, a := range live {
				if a.Job.JobModifyIndex == newJob.JobModifyIndex {
					fresh++
				} else {
					old++
				}
			}
			if fresh != tc.wantNew || old != tc.wantOld {
				t.Fatalf("new %d old %d live, want %d and %d", fresh, old, tc.wantNew, tc.wantOld)
			}
			e := lastEval(t, h)
			if (e.FailedTGAllocs["web"] != nil) != tc.wantFail {
				t.Fatalf("failed allocs %v, want failure %v", e.FailedTGAllocs, tc.wantFail)
			}
			if tc.wantFail && (e.FailedTGAllocs["web"].DimensionExhausted["cpu"] == 0 || e.BlockedEval == "") {
				t.Fatalf("failure metric %+v blocked %q", e.FailedTGAllocs["web"], e.BlockedEval)
			}
		})
	}
}

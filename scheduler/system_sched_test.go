package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// liveNodes returns the IDs of nodes holding a live alloc of job, sorted.
func liveNodes(t *testing.T, h *Harness, job *structs.Job) []string {
	t.Helper()
	live, _ := jobAllocs(t, h, job)
	var out []string
	for _, a := range live {
		out = append(out, a.NodeID)
	}
	slices.Sort(out)
	return out
}

func ids(nodes ...*structs.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	slices.Sort(out)
	return out
}

func TestSystemScheduler(t *testing.T) {
	cases := []struct {
		name string
		// nodes 0..5 are ready linux dc1 nodes unless edited
		edit func(i int, n *structs.Node)
		job  func(j *structs.Job)
		// then: change the cluster and run a second eval
		then      func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string)
		wantNodes func(nodes []*structs.Node) []*structs.Node
		wantDesc  map[int]string // node index -> description of the stop on it
	}{
		{
			name: "one per matching ready node",
			edit: func(i int, n *structs.Node) {
				switch i {
				case 1:
					n.Attributes["kernel.name"] = "windows"
				case 2:
					n.SchedulingEligibility = structs.NodeSchedulingIneligible
				case 3:
					n.Datacenter = "dc9"
				case 4:
					delete(n.Drivers, "mock")
					delete(n.Attributes, "driver.mock")
				}
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return []*structs.Node{n[0], n[5]} },
		},
		{
			name: "an initializing node gets none",
			edit: func(i int, n *structs.Node) {
				if i == 2 {
					n.Status = structs.NodeStatusInit // its readiness gate has not passed
				}
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return []*structs.Node{n[0], n[1], n[3], n[4], n[5]} },
		},
		{
			name: "a node initializing again keeps its alloc",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[2].ID, structs.NodeStatusInit, 0, nil, nil); err != nil {
					t.Fatal(err)
				}
				return job, structs.EvalTriggerNodeUpdate
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return n },
		},
		{
			name: "a node that joins later gets one",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				added := mock.Node()
				added.ID = "zzzzzzzz-new-node"
				addNodes(t, h, added)
				return job, structs.EvalTriggerNodeUpdate
			},
			wantNodes: func(n []*structs.Node) []*structs.Node {
				return append(slices.Clone(n), &structs.Node{ID: "zzzzzzzz-new-node"})
			},
		},
		{
			name: "a node that goes down loses its alloc",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				if err := h.State.UpdateNodeStatus(h.NextIndex(), nodes[2].ID, structs.NodeStatusDown, 0, nil, nil); err != nil {
					t.Fatal(err)
				}
				return job, structs.EvalTriggerNodeUpdate
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return []*structs.Node{n[0], n[1], n[3], n[4], n[5]} },
			wantDesc:  map[int]string{2: descLost},
		},
		{
			name: "a node that no longer matches is stopped",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				n := nodes[4].Copy()
				n.Attributes["kernel.name"] = "freebsd"
				addNodes(t, h, n)
				return job, structs.EvalTriggerNodeUpdate
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return []*structs.Node{n[0], n[1], n[2], n[3], n[5]} },
			wantDesc:  map[int]string{4: descNodeTainted},
		},
		{
			name: "an ineligible node keeps its alloc",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				if err := h.State.UpdateNodeEligibility(h.NextIndex(), &structs.NodeUpdateEligibilityRequest{
					NodeID: nodes[1].ID, Eligibility: structs.NodeSchedulingIneligible}); err != nil {
					t.Fatal(err)
				}
				return job, structs.EvalTriggerNodeUpdate
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return n },
		},
		{
			name: "migrating alloc is stopped, not replaced on the draining node",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				if err := h.State.UpdateNodeDrain(h.NextIndex(), &structs.NodeUpdateDrainRequest{
					NodeID: nodes[3].ID, DrainStrategy: &structs.DrainStrategy{}}); err != nil {
					t.Fatal(err)
				}
				live, _ := jobAllocs(t, h, job)
				yes := true
				for _, a := range live {
					if a.NodeID == nodes[3].ID {
						c := a.Copy()
						c.DesiredTransition.Migrate = &yes
						addAllocs(t, h, c)
					}
				}
				return job, structs.EvalTriggerNodeDrain
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return []*structs.Node{n[0], n[1], n[2], n[4], n[5]} },
			wantDesc:  map[int]string{3: descMigrating},
		},
		{
			name: "stopped job stops all",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				if err := h.State.DeregisterJob(h.NextIndex(), job.Namespace, job.ID, false, 0, nil); err != nil {
					t.Fatal(err)
				}
				return job, structs.EvalTriggerJobDeregister
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return nil },
			wantDesc:  map[int]string{0: descJobStopped, 1: descJobStopped, 2: descJobStopped, 3: descJobStopped, 4: descJobStopped, 5: descJobStopped},
		},
		{
			name: "in-place update keeps allocs",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				return updateJob(t, h, job, func(j *structs.Job) {
					j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute
					j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="}}
				}), structs.EvalTriggerJobRegister
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return n },
		},
		{
			name: "env change replaces on the same node",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["V"] = "2" }), structs.EvalTriggerJobRegister
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return n },
			wantDesc:  map[int]string{0: descUpdating, 1: descUpdating, 2: descUpdating, 3: descUpdating, 4: descUpdating, 5: descUpdating},
		},
		{
			name: "destructive update replaces on the same node",
			then: func(t *testing.T, h *Harness, job *structs.Job, nodes []*structs.Node) (*structs.Job, string) {
				return updateJob(t, h, job, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 700 }), structs.EvalTriggerJobRegister
			},
			wantNodes: func(n []*structs.Node) []*structs.Node { return n },
			wantDesc:  map[int]string{0: descUpdating, 1: descUpdating, 2: descUpdating, 3: descUpdating, 4: descUpdating, 5: descUpdating},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			var fns []func(int, *structs.Node)
			if tc.edit != nil {
				fns = append(fns, tc.edit)
			}
			nodes := mockNodes(t, h, 6, fns...)
			j := mock.SystemJob()
			if tc.job != nil {
				tc.job(j)
			}
			job := addJob(t, h, j)
			process(t, h, job, structs.EvalTriggerJobRegister)
			before, _ := jobAllocs(t, h, job)
			if tc.then != nil {
				h.Plans = nil
				var trigger string
				job, trigger = tc.then(t, h, job, nodes)
				process(t, h, job, trigger)
			}
			if got, want := liveNodes(t, h, job), ids(tc.wantNodes(nodes)...); !slices.Equal(got, want) {
				t.Fatalf("live on %v, want %v", got, want)
			}
			live, _ := jobAllocs(t, h, job)
			for _, a := range live {
				if a.Job.JobModifyIndex != job.JobModifyIndex || allocIndex(a.Name) != 0 {
					t.Fatalf("%s runs job index %d, want %d", a.Name, a.Job.JobModifyIndex, job.JobModifyIndex)
				}
			}
			stops := stopsIn(h)
			if len(stops) != len(tc.wantDesc) {
				t.Fatalf("%d stops, want %d", len(stops), len(tc.wantDesc))
			}
			for i, desc := range tc.wantDesc {
				found := false
				for _, a := range stops {
					if a.NodeID == nodes[i].ID && a.DesiredDescription == desc {
						found = true
					}
				}
				if !found {
					t.Fatalf("no stop %q on node %d", desc, i)
				}
			}
			if tc.name == "in-place update keeps allocs" {
				for i := range live {
					if live[i].ID != before[i].ID {
						t.Fatalf("in-place update replaced %s", before[i].Name)
					}
				}
			}
			if e := lastEval(t, h); e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
				t.Fatalf("eval %s failed %v", e.Status, e.FailedTGAllocs)
			}
		})
	}
}

func TestSystemExhaustedNodeBlocks(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 4, func(i int, n *structs.Node) {
		switch i {
		case 0, 1:
			n.NodeResources.Memory.MemoryMB = 200 // no room
		case 2:
			n.Attributes["kernel.name"] = "windows" // not a match: not a failure
		}
	})
	job := addJob(t, h, mock.SystemJob())
	process(t, h, job, structs.EvalTriggerJobRegister)
	if got, want := liveNodes(t, h, job), ids(nodes[3]); !slices.Equal(got, want) {
		t.Fatalf("live on %v, want %v", got, want)
	}
	e := lastEval(t, h)
	m := e.FailedTGAllocs["web"]
	if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted["memory"] != 1 || m.CoalescedFailures != 1 {
		t.Fatalf("failed metric %+v", m)
	}
	if e.QueuedAllocations["web"] != 2 || e.BlockedEval == "" || len(h.CreateEvals) != 1 || h.CreateEvals[0].Status != structs.EvalStatusBlocked {
		t.Fatalf("queued %v blocked %q creates %d", e.QueuedAllocations, e.BlockedEval, len(h.CreateEvals))
	}
}

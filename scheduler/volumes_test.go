package scheduler

import (
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// TestHostVolumePlacement places a group that reads a host volume only on
// the nodes that have it, read-only ones included, and one that writes
// only on nodes whose volume is writable.
func TestHostVolumePlacement(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
		want     []int // node indexes allowed
	}{
		{"read-only request", true, []int{1, 2}},
		{"writable request", false, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 4, func(i int, n *structs.Node) {
				switch i {
				case 1:
					n.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/a", ReadOnly: true}}
				case 2:
					n.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/b"}}
				case 3:
					n.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"other": {Name: "other", Path: "/c"}}
				}
			})
			j := mock.Job()
			j.TaskGroups[0].Count = 4
			j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: "host", Source: "data", ReadOnly: tc.readOnly}}
			job := addJob(t, h, j)
			process(t, h, job, structs.EvalTriggerJobRegister)
			live, _ := jobAllocs(t, h, job)
			if len(live) != 4 {
				t.Fatalf("placed %d, want 4", len(live))
			}
			allowed := map[string]bool{}
			for _, i := range tc.want {
				allowed[nodes[i].ID] = true
			}
			for _, a := range live {
				if !allowed[a.NodeID] {
					t.Fatalf("%s placed on a node without a compatible volume", a.Name)
				}
			}
		})
	}
}

// TestStickyDiskPrefersPreviousNode: a destructive update of a group with
// a sticky ephemeral disk places each replacement on its predecessor's
// node, and the replacement names its predecessor (the client moves the
// data over); without sticky the replacements go anywhere.
func TestStickyDiskPrefersPreviousNode(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 8)
	j := mock.Job()
	j.TaskGroups[0].Count = 3
	j.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 100, Sticky: true}
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	before, _ := jobAllocs(t, h, job)
	if len(before) != 3 {
		t.Fatalf("placed %d, want 3", len(before))
	}
	prevNode := map[string]string{}
	for _, a := range before {
		prevNode[a.ID] = a.NodeID
	}
	for round := 0; round < 3; round++ {
		j2 := job.Copy()
		j2.TaskGroups[0].Tasks[0].Env["ROUND"] = string(rune('a' + round)) // destructive
		job = addJob(t, h, j2)
		process(t, h, job, structs.EvalTriggerJobRegister)
		live, _ := jobAllocs(t, h, job)
		if len(live) != 3 {
			t.Fatalf("round %d: %d live, want 3", round, len(live))
		}
		next := map[string]string{}
		for _, a := range live {
			want, ok := prevNode[a.PreviousAllocation]
			if !ok {
				t.Fatalf("round %d: %s replaces %q, not one of the previous allocations", round, a.Name, a.PreviousAllocation)
			}
			if a.NodeID != want {
				t.Fatalf("round %d: %s moved from node %s to %s; a sticky disk keeps it", round, a.Name, want, a.NodeID)
			}
			next[a.ID] = a.NodeID
		}
		prevNode = next
	}
}

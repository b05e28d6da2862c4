package client

import (
	"testing"

	"github.com/drover-project/drover/structs"
)

// The node gauges count allocations by state and charge only the live ones
// against the node's resources (less what the node reserves).
func TestGaugesOf(t *testing.T) {
	node := &structs.Node{
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
		ReservedResources: &structs.NodeReservedResources{Cpu: structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 200}, Disk: structs.NodeReservedDiskResources{DiskMB: 300}},
	}
	alloc := func(desired, client string) *structs.Allocation {
		return &structs.Allocation{DesiredStatus: desired, ClientStatus: client,
			AllocatedResources: &structs.AllocatedResources{
				Tasks: map[string]*structs.AllocatedTaskResources{
					"a": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
					"b": {Cpu: structs.AllocatedCpuResources{CpuShares: 50}, Memory: structs.AllocatedMemoryResources{MemoryMB: 32}},
				},
				Shared: structs.AllocatedSharedResources{DiskMB: 150}}}
	}
	run, stop := structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
	cases := []struct {
		name                       string
		allocs                     []*structs.Allocation
		running, pending, terminal int
		allocated                  structs.ComparableResources
	}{
		{name: "empty node"},
		{name: "one running, one pending",
			allocs:  []*structs.Allocation{alloc(run, structs.AllocClientStatusRunning), alloc(run, structs.AllocClientStatusPending)},
			running: 1, pending: 1, allocated: structs.ComparableResources{CPU: 300, MemoryMB: 192, DiskMB: 300}},
		{name: "finished and stopped ones hold nothing",
			allocs: []*structs.Allocation{alloc(run, structs.AllocClientStatusComplete), alloc(run, structs.AllocClientStatusFailed),
				alloc(stop, structs.AllocClientStatusRunning), alloc(run, structs.AllocClientStatusRunning)},
			running: 1, terminal: 3, allocated: structs.ComparableResources{CPU: 150, MemoryMB: 96, DiskMB: 150}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := gaugesOf(node, tc.allocs)
			if g.running != tc.running || g.pending != tc.pending || g.terminal != tc.terminal {
				t.Errorf("running/pending/terminal = %d/%d/%d, want %d/%d/%d",
					g.running, g.pending, g.terminal, tc.running, tc.pending, tc.terminal)
			}
			if g.allocated != tc.allocated {
				t.Errorf("allocated = %+v, want %+v", g.allocated, tc.allocated)
			}
			want := structs.ComparableResources{CPU: 3900 - tc.allocated.CPU, MemoryMB: 7992 - tc.allocated.MemoryMB,
				DiskMB: 9700 - tc.allocated.DiskMB}
			if g.unallocated != want {
				t.Errorf("unallocated = %+v, want %+v", g.unallocated, want)
			}
		})
	}
}

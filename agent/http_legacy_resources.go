package agent

import "github.com/drover-project/drover/structs"

// Nomad's API still carries the flat resource blocks of Nomad 0.8 beside
// the structured ones (a node's Resources and Reserved, an allocation's
// Resources, SharedResources and TaskResources), and Nomad's CLI up to
// 1.6 reads them without a nil check: `nomad node status <id>` derefs
// node.Resources.CPU, node.Reserved.CPU and, for each running
// allocation, alloc.Resources.CPU. Drover does not store them; they are
// derived here, at HTTP time, from the structured resources, so neither
// Raft nor the scheduler carries them.

// legacyResources is Nomad's flat resources block (api.Resources), every
// number present.
type legacyResources struct {
	CPU         int64
	Cores       int64
	MemoryMB    int64
	MemoryMaxMB int64
	DiskMB      int64
	IOPS        int64
}

// nodeHTTP is a node as Nomad's API renders it. ReservedResources is
// never null: Nomad's CLI since 1.7 subtracts it without a nil check.
type nodeHTTP struct {
	*structs.Node
	Resources         *legacyResources
	Reserved          *legacyResources
	ReservedResources *structs.NodeReservedResources
}

func nodeForHTTP(n *structs.Node) *nodeHTTP {
	out := &nodeHTTP{Node: n, Resources: &legacyResources{}, Reserved: &legacyResources{},
		ReservedResources: n.ReservedResources}
	if r := n.NodeResources; r != nil {
		*out.Resources = legacyResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB}
	}
	if out.ReservedResources == nil {
		out.ReservedResources = &structs.NodeReservedResources{}
	}
	r := out.ReservedResources
	*out.Reserved = legacyResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB}
	return out
}

// allocHTTP is an allocation as Nomad's API renders it: Resources is the
// sum of its tasks' and the group's shared disk, TaskResources each
// task's, SharedResources the group's.
type allocHTTP struct {
	*structs.Allocation
	Resources       *legacyResources
	SharedResources *legacyResources
	TaskResources   map[string]*legacyResources
}

func allocForHTTP(a *structs.Allocation) *allocHTTP {
	out := &allocHTTP{Allocation: a, Resources: &legacyResources{}, SharedResources: &legacyResources{},
		TaskResources: map[string]*legacyResources{}}
	ar := a.AllocatedResources
	if ar == nil {
		return out
	}
	for name, t := range ar.Tasks {
		tr := &legacyResources{CPU: t.Cpu.CpuShares, Cores: int64(len(t.Cpu.ReservedCores)),
			MemoryMB: t.Memory.MemoryMB, MemoryMaxMB: t.Memory.MemoryMaxMB}
		out.TaskResources[name] = tr
		out.Resources.CPU += tr.CPU
		out.Resources.Cores += tr.Cores
		out.Resources.MemoryMB += tr.MemoryMB
		out.Resources.MemoryMaxMB += tr.MemoryMaxMB
	}
	out.SharedResources.DiskMB = ar.Shared.DiskMB
	out.Resources.DiskMB = ar.Shared.DiskMB
	return out
}

func allocsForHTTP(allocs []*structs.Allocation) []*allocHTTP {
	out := make([]*allocHTTP, len(allocs))
	for i, a := range allocs {
		out[i] = allocForHTTP(a)
	}
	return out
}

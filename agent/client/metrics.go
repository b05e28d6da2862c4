package client

import (
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/structs"
)

// Metric names. Each is emitted in one place; see the comment beside it.
var (
	// metricRegister: time of a successful Node.Register.
	metricRegister = []string{"drover", "client", "register"}
	// metricHeartbeat: time of a successful heartbeat (Node.UpdateStatus).
	metricHeartbeat = []string{"drover", "client", "heartbeat"}
	// metricHeartbeatFailed: heartbeats that failed on every server.
	metricHeartbeatFailed = []string{"drover", "client", "heartbeat_failed"}
	// metricUpdateBatch: time of one Node.UpdateAlloc carrying a batch.
	metricUpdateBatch = []string{"drover", "client", "update_allocs"}
	// metricUpdateBatchSize: allocations carried by one batch.
	metricUpdateBatchSize = []string{"drover", "client", "update_allocs_batch_size"}
	// metricAllocsStarted: allocations the client started running.
	metricAllocsStarted = []string{"drover", "client", "allocs_started"}
	// metricReadinessFailed: failed attempts of the readiness gate
	// (readiness.go), each retry counted.
	metricReadinessFailed = []string{"drover", "client", "readiness_failed"}
)

// Node gauges, under Nomad's names, set every Config.MetricsInterval by
// emitGauges with the labels node_id, datacenter, node_class, node_pool.
// Resources are in Nomad's units: MHz and MB.
var (
	metricAllocatedCPU      = []string{"nomad", "client", "allocated", "cpu"}
	metricAllocatedMemory   = []string{"nomad", "client", "allocated", "memory"}
	metricAllocatedDisk     = []string{"nomad", "client", "allocated", "disk"}
	metricUnallocatedCPU    = []string{"nomad", "client", "unallocated", "cpu"}
	metricUnallocatedMemory = []string{"nomad", "client", "unallocated", "memory"}
	metricUnallocatedDisk   = []string{"nomad", "client", "unallocated", "disk"}
	// Allocations this client holds, by state: running, pending (not yet
	// running) and terminal (finished or told to stop, not yet collected).
	metricAllocsRunning  = []string{"nomad", "client", "allocations", "running"}
	metricAllocsPending  = []string{"nomad", "client", "allocations", "pending"}
	metricAllocsTerminal = []string{"nomad", "client", "allocations", "terminal"}
)

func incr(key []string) { metrics.IncrCounter(key, 1) }

// nodeGauges is what one emitGauges pass reports.
type nodeGauges struct {
	allocated, unallocated     structs.ComparableResources
	running, pending, terminal int
}

// allocsForGauges returns the client's view of every allocation it holds.
func (c *Client) allocsForGauges() []*structs.Allocation {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	allocs := make([]*structs.Allocation, 0, len(c.runners))
	for _, ar := range c.runners {
		allocs = append(allocs, ar.Alloc())
	}
	return allocs
}

// gaugesOf counts allocs by state and sums the resources the live ones hold
// (an allocation is live until it is terminal on the client or the servers
// told it to stop); unallocated is the node's resources less its reserved
// and allocated ones.
func gaugesOf(node *structs.Node, allocs []*structs.Allocation) nodeGauges {
	var g nodeGauges
	for _, a := range allocs {
		switch {
		case a.TerminalStatus():
			g.terminal++
			continue
		case a.ClientStatus == structs.AllocClientStatusRunning:
			g.running++
		default:
			g.pending++
		}
		g.allocated.Add(a.AllocatedResources.Comparable())
	}
	var total structs.ComparableResources
	if r := node.NodeResources; r != nil {
		total = structs.ComparableResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB}
	}
	if r := node.ReservedResources; r != nil {
		total.CPU -= r.Cpu.CpuShares
		total.MemoryMB -= r.Memory.MemoryMB
		total.DiskMB -= r.Disk.DiskMB
	}
	g.unallocated = structs.ComparableResources{CPU: total.CPU - g.allocated.CPU,
		MemoryMB: total.MemoryMB - g.allocated.MemoryMB, DiskMB: total.DiskMB - g.allocated.DiskMB}
	return g
}

// emitGauges sets the node gauges once.
func (c *Client) emitGauges() {
	node := c.Node()
	g := gaugesOf(node, c.allocsForGauges())
	labels := []metrics.Label{{Name: "node_id", Value: node.ID}, {Name: "datacenter", Value: node.Datacenter},
		{Name: "node_class", Value: node.NodeClass}, {Name: "node_pool", Value: node.NodePool}}
	set := func(key []string, v int64) { metrics.SetGaugeWithLabels(key, float32(v), labels) }
	set(metricAllocatedCPU, g.allocated.CPU)
	set(metricAllocatedMemory, g.allocated.MemoryMB)
	set(metricAllocatedDisk, g.allocated.DiskMB)
	set(metricUnallocatedCPU, g.unallocated.CPU)
	set(metricUnallocatedMemory, g.unallocated.MemoryMB)
	set(metricUnallocatedDisk, g.unallocated.DiskMB)
	set(metricAllocsRunning, int64(g.running))
	set(metricAllocsPending, int64(g.pending))
	set(metricAllocsTerminal, int64(g.terminal))
}

// metricsLoop emits the node gauges every MetricsInterval until shutdown.
func (c *Client) metricsLoop() {
	t := time.NewTicker(c.cfg.MetricsInterval)
	defer t.Stop()
	for {
		select {
		case <-c.shutdownCh:
			return
		case <-t.C:
			c.emitGauges()
		}
	}
}

package client

import (
	"sort"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/structs"
)

// updateBatcher collects allocation status changes and sends them to the
// servers every UpdateInterval in one Node.UpdateAlloc, keeping only the
// latest state of each allocation. Updates that fail to send stay queued
// (unless a newer one replaced them) for the next round.
type updateBatcher struct {
	c *Client

	mu      sync.Mutex
	pending map[string]*structs.Allocation // guarded by mu
	// faults are node faults the runners reported, sent with the next
	// batch of updates (the allocation whose task failed is in it, or in
	// a later one). Guarded by mu.
	faults []*structs.NodeFault
}

// maxPendingFaults bounds the node faults kept for sending (the oldest
// go first): far past any quarantine threshold.
const maxPendingFaults = 64

func newUpdateBatcher(c *Client) *updateBatcher {
	return &updateBatcher{c: c, pending: map[string]*structs.Allocation{}}
}

// add queues the latest state of an allocation. It never blocks on I/O:
// runners call it on every change. Only the fields the client owns are
// sent (the servers merge them onto their copy and ignore the rest).
func (u *updateBatcher) add(a *structs.Allocation) {
	upd := &structs.Allocation{
		ID: a.ID, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
		TaskStates: a.TaskStates, ModifyTime: time.Now().UnixNano(),
	}
	if a.DeploymentStatus.HasHealth() {
		// The runner's health verdict for the allocation's deployment.
		healthy := *a.DeploymentStatus.Healthy
		upd.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: a.DeploymentStatus.Timestamp}
	}
	u.mu.Lock()
	u.pending[a.ID] = upd
	u.mu.Unlock()
}

// addFault queues a node fault (see allocrunner.Config.NodeFault). It
// never blocks.
func (u *updateBatcher) addFault(f *structs.NodeFault) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.faults = append(u.faults, f)
	if n := len(u.faults); n > maxPendingFaults {
		u.faults = append([]*structs.NodeFault(nil), u.faults[n-maxPendingFaults:]...)
	}
}

// run sends batches until shutdown, then tries once more.
func (u *updateBatcher) run() {
	t := time.NewTicker(u.c.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			u.flush()
		case <-u.c.shutdownCh:
			u.flush()
			return
		}
	}
}

// flush sends what is pending in one RPC.
func (u *updateBatcher) flush() {
	u.mu.Lock()
	if len(u.pending) == 0 {
		u.mu.Unlock()
		return
	}
	batch, faults := u.pending, u.faults
	u.pending, u.faults = map[string]*structs.Allocation{}, nil
	u.mu.Unlock()

	list := make([]*structs.Allocation, 0, len(batch))
	for _, a := range batch {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	id, secret := u.c.nodeIdentity()
	for _, f := range faults {
		f.NodeID = id
	}
	req := &structs.AllocUpdateRequest{Alloc: list, NodeSecrets: map[string]string{id: secret}, NodeFaults: faults,
		WriteRequest: structs.WriteRequest{Region: u.c.cfg.Region, AuthToken: secret}}
	var resp structs.GenericResponse
	start := time.Now()
	metrics.AddSample(metricUpdateBatchSize, float32(len(list)))
	err := u.c.RPC("Node.UpdateAlloc", req, &resp)
	if err == nil {
		metrics.MeasureSince(metricUpdateBatch, start)
	}
	if err != nil {
		u.c.logger.Warn("sending allocation updates failed; will retry", "error", err, "count", len(list))
		u.mu.Lock()
		for id, a := range batch {
			if _, newer := u.pending[id]; !newer {
				u.pending[id] = a
			}
		}
		u.faults = append(faults, u.faults...)
		if n := len(u.faults); n > maxPendingFaults {
			u.faults = u.faults[n-maxPendingFaults:]
		}
		u.mu.Unlock()
	}
}

package sim

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/structs"
)

// updateBatcher collects the allocation updates of every simulated node
// and sends them every UpdateInterval: one Node.UpdateAlloc per
// UpdateMaxBatch allocations (several sent together when the backlog is
// larger), keeping only the latest update of each allocation. Updates of a
// failed call stay queued (unless a newer one replaced them).
type updateBatcher struct {
	s    *Sim
	next atomic.Uint32 // rotates the first server tried
	done chan struct{} // closed when run returns

	mu      sync.Mutex
	pending map[string]queuedUpdate // by allocation ID; guarded by mu
}

// queuedUpdate is an allocation update with the node it is for, whose
// secret the request must carry (AllocUpdateRequest.NodeSecrets).
type queuedUpdate struct {
	alloc *structs.Allocation
	node  *structs.Node
}

func newUpdateBatcher(s *Sim) *updateBatcher {
	return &updateBatcher{s: s, pending: map[string]queuedUpdate{}, done: make(chan struct{})}
}

// add queues an update of an allocation on node; it never blocks on I/O.
func (u *updateBatcher) add(node *structs.Node, a *structs.Allocation) {
	u.mu.Lock()
	u.pending[a.ID] = queuedUpdate{alloc: a, node: node}
	u.mu.Unlock()
}

// run flushes every UpdateInterval until the Sim stops, then once more.
func (u *updateBatcher) run() {
	defer close(u.done)
	t := time.NewTicker(u.s.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			u.flush()
		case <-u.s.shutdownCh:
			u.flush()
			return
		}
	}
}

// wait returns once run has returned (or was never started).
func (u *updateBatcher) wait() {
	if u.s.started.Load() {
		<-u.done
	}
}

// flush sends what is pending.
func (u *updateBatcher) flush() {
	u.mu.Lock()
	if len(u.pending) == 0 {
		u.mu.Unlock()
		return
	}
	batch := u.pending
	u.pending = map[string]queuedUpdate{}
	u.mu.Unlock()

	list := make([]queuedUpdate, 0, len(batch))
	for _, q := range batch {
		list = append(list, q)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].alloc.ID < list[j].alloc.ID })
	var wg sync.WaitGroup
	for start := 0; start < len(list); start += u.s.cfg.UpdateMaxBatch {
		chunk := list[start:min(start+u.s.cfg.UpdateMaxBatch, len(list))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.send(chunk)
		}()
	}
	wg.Wait()
}

// send delivers one chunk, failing over between servers; on failure the
// chunk is queued again.
func (u *updateBatcher) send(chunk []queuedUpdate) {
	servers := u.s.cfg.Servers
	first := int(u.next.Add(1))
	tr := u.s.transports[first%len(u.s.transports)]
	req := &structs.AllocUpdateRequest{
		Alloc:       make([]*structs.Allocation, len(chunk)),
		NodeSecrets: make(map[string]string),
		// Any of the nodes' secrets authenticates the call with ACLs on;
		// the servers check each node's secret in NodeSecrets.
		WriteRequest: structs.WriteRequest{Region: u.s.cfg.Region, AuthToken: chunk[0].node.SecretID},
	}
	for i, q := range chunk {
		req.Alloc[i] = q.alloc
		req.NodeSecrets[q.node.ID] = q.node.SecretID
	}
	var err error
	for i := range servers {
		var resp structs.GenericResponse
		err = tr.RPC(servers[(first+i)%len(servers)], "Node.UpdateAlloc", req, &resp)
		if err == nil || !failoverErr(err) {
			break
		}
	}
	u.s.counters.updateRPCs.Add(1)
	if err == nil {
		u.s.counters.updatesSent.Add(uint64(len(chunk)))
		return
	}
	u.s.counters.updatesFailed.Add(1)
	u.s.logger.Warn("sending allocation updates failed; will retry", "error", err, "count", len(chunk))
	u.mu.Lock()
	for _, q := range chunk {
		if _, newer := u.pending[q.alloc.ID]; !newer {
			u.pending[q.alloc.ID] = q
		}
	}
	u.mu.Unlock()
}

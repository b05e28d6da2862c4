package sim

import (
	"errors"
	"sort"

	"github.com/drover-project/drover/agent/client/allocwatch"
	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// watch follows the servers' allocations for the node, as a real client:
// a blocking Node.GetClientAllocs maps allocation IDs to their
// AllocModifyIndex; only new or changed ones are fetched
// (Alloc.GetAllocs) and acted on. The servers answer when they change an
// allocation of the node, not on the node's own updates; allocations they
// collect show up missing when a query times out. The first query is a
// consistent read (leader); later ones may be answered by any server
// (stale), so the watches spread over the servers as real clients' do,
// except to confirm an answer below the last index (see allocwatch.Index).
func (n *simNode) watch() {
	b := backoff.New(n.s.cfg.RetryBase, n.s.cfg.RetryLimit)
	var w allocwatch.Index
	for !n.s.stopping() {
		req := &structs.NodeSpecificRequest{NodeID: n.node.ID, SecretID: n.node.SecretID,
			QueryOptions: w.Options(n.s.cfg.Region, n.s.cfg.MaxQueryTime)}
		var resp structs.NodeClientAllocsResponse
		if err := n.rpc("Node.GetClientAllocs", req, &resp); err != nil {
			if n.s.stopping() {
				return
			}
			n.s.counters.watchErrors.Add(1)
			n.s.logger.Debug("watching allocations failed; will retry", "node_id", n.node.ID, "error", err)
			if !n.s.sleep(b.Next()) {
				return
			}
			continue
		}
		if !w.Accept(resp.Index) {
			continue // confirm with the leader first
		}
		if pull, minIndex := n.diff(resp.Allocs); len(pull) > 0 {
			allocs, err := n.fetch(pull, minIndex)
			if err != nil {
				if n.s.stopping() {
					return
				}
				n.s.counters.watchErrors.Add(1)
				n.s.logger.Debug("fetching allocations failed; will retry", "node_id", n.node.ID, "error", err, "count", len(pull))
				if !n.s.sleep(b.Next()) {
					return
				}
				continue
			}
			n.apply(allocs)
		}
		b.Reset()
		w.Done(resp.Index)
	}
}

// diff compares the servers' map with what the node knows: it returns the
// IDs to fetch (new or modified) with the index the fetch must wait for,
// and forgets allocations the servers no longer list (cancelling their
// timers).
//
// The fetch waits for the highest AllocModifyIndex among the pulled
// allocations, not for the watch's index: that one may be another
// allocation's (or the node's CreateIndex), and Alloc.GetAllocs (whose
// index is the highest ModifyIndex of the allocations asked for) would
// then block until its timeout.
func (n *simNode) diff(server map[string]uint64) (pull []string, minIndex uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, idx := range server {
		if known, ok := n.known[id]; !ok || idx > known {
			pull = append(pull, id)
			minIndex = max(minIndex, idx)
		}
	}
	for id := range n.known {
		if _, ok := server[id]; ok {
			continue
		}
		delete(n.known, id)
		if a := n.allocs[id]; a != nil {
			n.removeLocked(a)
		}
	}
	sort.Strings(pull)
	return pull, minIndex
}

// fetch gets allocations by ID from a server that has caught up with
// index (the highest AllocModifyIndex of ids). Every requested allocation
// must come back, else it is an error (retried).
func (n *simNode) fetch(ids []string, index uint64) ([]*structs.Allocation, error) {
	req := &structs.AllocsGetRequest{AllocIDs: ids, QueryOptions: structs.QueryOptions{
		Region: n.s.cfg.Region, MinQueryIndex: index - 1, MaxQueryTime: n.s.cfg.MaxQueryTime, AllowStale: true}}
	var resp structs.AllocsGetResponse
	if err := n.rpc("Alloc.GetAllocs", req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Allocs) != len(ids) {
		return nil, structs.NewError(structs.ErrCodeNotFound, "asked for %d allocations, got %d", len(ids), len(resp.Allocs))
	}
	return resp.Allocs, nil
}

// errNoJob is logged for an allocation fetched without its job.
var errNoJob = errors.New("allocation has no job")

// apply acts on fetched allocations: new ones start (reported running
// after ReportDelay), ones the servers stopped are reported complete.
func (n *simNode) apply(allocs []*structs.Allocation) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range allocs {
		n.known[a.ID] = a.AllocModifyIndex
		cur := n.allocs[a.ID]
		switch {
		case cur == nil:
			if a.ServerTerminalStatus() || a.ClientTerminalStatus() || a.NodeID != n.node.ID {
				continue // stopped before it ran, finished earlier, or not ours
			}
			g, err := n.s.groups.lookup(a, n.s.cfg.RunFor)
			if err != nil {
				n.s.logger.Warn("cannot run allocation", "alloc_id", a.ID, "error", err)
				continue
			}
			n.startLocked(a, g)
		case a.ServerTerminalStatus() && !cur.state.terminal():
			n.stopLocked(cur)
		}
	}
}

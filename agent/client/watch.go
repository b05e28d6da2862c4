package client

import (
	"errors"
	"sort"

	"github.com/drover-project/drover/agent/client/allocrunner"
	"github.com/drover-project/drover/agent/client/allocwatch"
	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// errShutdown is returned by blocking calls cut short by Shutdown.
var errShutdown = structs.ErrShutdown

// blockingRPC makes an RPC that may block for a long time; Shutdown
// abandons it (the call finishes in the background and is discarded).
func (c *Client) blockingRPC(method string, args, reply any) error {
	done := make(chan error, 1)
	go func() { done <- c.RPC(method, args, reply) }()
	select {
	case err := <-done:
		return err
	case <-c.shutdownCh:
		return errShutdown
	}
}

// watchAllocs waits for the node to be registered, then follows the
// servers' allocations for it with blocking queries: each answer maps
// allocation IDs to their AllocModifyIndex; only new or changed ones are
// handed to runners, as the answer carries them (InlineAllocs) or else
// fetched (Alloc.GetAllocs), and runners of
// allocations the servers no longer list are destroyed.
//
// The servers answer when they change an allocation of the node (not on
// the client's own updates); allocations they collect show up missing in
// the answer of a query that timed out (MaxQueryTime). Queries are stale
// reads, served by any server, except the first and those confirming an
// answer below the last index (see allocwatch.Index).
func (c *Client) watchAllocs() {
	select {
	case <-c.registeredCh:
	case <-c.shutdownCh:
		return
	}
	b := backoff.New(c.cfg.RetryBase, c.cfg.RetryLimit)
	var w allocwatch.Index
	for !c.shuttingDown() {
		node := c.Node()
		req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID,
			InlineAllocs: structs.MaxInlineAllocs, QueryOptions: w.Options(c.cfg.Region, c.cfg.MaxQueryTime)}
		req.AuthToken = node.SecretID // with ACLs on, the node's credential
		var resp structs.NodeClientAllocsResponse
		if err := c.blockingRPC("Node.GetClientAllocs", req, &resp); err != nil {
			if errors.Is(err, errShutdown) && c.shuttingDown() {
				return
			}
			c.logger.Warn("watching allocations failed; will retry", "error", err)
			if !c.sleep(b.Next()) {
				return
			}
			continue
		}
		if !w.Accept(resp.Index) {
			continue // confirm with the leader first
		}
		pull, removed := c.diffAllocs(resp.Allocs)
		// The answer carries most changes itself (InlineAllocs); the
		// rest are fetched.
		allocs, pull := inlineAllocs(resp.Changed, pull)
		if len(pull) > 0 {
			// Wait for the pulled allocations' own index, not the watch's:
			// that may belong to an allocation not pulled (or be the
			// node's CreateIndex), above anything Alloc.GetAllocs will
			// report for these, and the fetch would block until its
			// timeout.
			var need uint64
			for _, id := range pull {
				idx, _ := resp.Allocs.Get(id)
				need = max(need, idx)
			}
			got, err := c.fetchAllocs(pull, need)
			if err != nil {
				c.logger.Warn("fetching allocations failed; will retry", "error", err, "count", len(pull))
				if !c.sleep(b.Next()) {
					return
				}
				continue
			}
			allocs = append(allocs, got...)
		}
		b.Reset()
		c.runAllocs(allocs, removed)
		w.Done(resp.Index)
	}
}

// diffAllocs compares the servers' map with what the client knows: it
// returns the IDs to fetch (new or modified) and the runners to remove.
// An allocation listed at a lower AllocModifyIndex than the client knows
// is fetched too: the servers' state went back (an operator snapshot
// restore), and runAllocs tells them what the client really runs.
func (c *Client) diffAllocs(server structs.AllocIndexes) (pull, removed []string) {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	for _, a := range server { // sorted by ID
		if known, ok := c.known[a.ID]; !ok || a.AllocModifyIndex != known {
			pull = append(pull, a.ID)
		}
	}
	for id := range c.runners {
		if _, ok := server.Get(id); !ok {
			removed = append(removed, id)
		}
	}
	// Forget IDs the servers dropped that have no runner (collected).
	for id := range c.known {
		if _, ok := server.Get(id); !ok && c.runners[id] == nil {
			delete(c.known, id)
		}
	}
	sort.Strings(removed)
	return pull, removed
}

// inlineAllocs takes from changed (a watch answer's Changed) copies of
// the allocations pull asks for, and returns them and what is left to
// fetch; pull is sorted.
func inlineAllocs(changed []*structs.Allocation, pull []string) (have []*structs.Allocation, rest []string) {
	if len(changed) == 0 {
		return nil, pull
	}
	byID := make(map[string]*structs.Allocation, len(changed))
	for _, a := range changed {
		if a != nil {
			byID[a.ID] = a
		}
	}
	rest = pull[:0:0]
	for _, id := range pull {
		if a := byID[id]; a != nil {
			// Answers from an in-process server share the state store's
			// objects: take a copy the runner may keep.
			have = append(have, a.Copy())
		} else {
			rest = append(rest, id)
		}
	}
	return have, rest
}

// fetchAllocs gets allocations by ID from any server that has caught up
// with index (the highest AllocModifyIndex among them). Every requested
// allocation must come back, else it is an error (retried).
func (c *Client) fetchAllocs(ids []string, index uint64) ([]*structs.Allocation, error) {
	min := uint64(0)
	if index > 0 {
		min = index - 1
	}
	req := &structs.AllocsGetRequest{AllocIDs: ids, QueryOptions: structs.QueryOptions{
		Region: c.cfg.Region, MinQueryIndex: min, MaxQueryTime: c.cfg.MaxQueryTime, AllowStale: true,
		AuthToken: c.Node().SecretID}}
	var resp structs.AllocsGetResponse
	if err := c.blockingRPC("Alloc.GetAllocs", req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Allocs) != len(ids) {
		return nil, structs.NewError(structs.ErrCodeNotFound, "asked for %d allocations, got %d", len(ids), len(resp.Allocs))
	}
	out := make([]*structs.Allocation, 0, len(resp.Allocs))
	for _, a := range resp.Allocs {
		// Answers from an in-process server share the state store's
		// objects: take a copy the runner may keep.
		out = append(out, a.Copy())
	}
	return out, nil
}

// runAllocs starts, updates and removes runners. A runner whose
// allocation comes back older than the client knew it (the servers'
// state went back) also re-sends its state: the restored allocation may
// say running while the client has stopped it (the servers then replace
// it), or carry a stale status. An allocation the servers list that the
// client does not run is started, as any new one: the restored state
// wants it running here.
func (c *Client) runAllocs(allocs []*structs.Allocation, removed []string) {
	for _, id := range removed {
		c.allocMu.Lock()
		ar := c.runners[id]
		delete(c.runners, id)
		delete(c.known, id)
		c.allocMu.Unlock()
		if ar == nil {
			continue
		}
		c.logger.Info("servers no longer list the allocation; removing it", "alloc_id", id)
		c.goLoop(func() { c.destroy(ar) })
	}
	for _, a := range allocs {
		c.allocMu.Lock()
		ar := c.runners[a.ID]
		prev, seen := c.known[a.ID]
		c.known[a.ID] = a.AllocModifyIndex
		c.allocMu.Unlock()
		if ar != nil {
			ar.Update(a)
			if a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
				// The servers lost touch with this node and hold the
				// allocation as unknown: tell them how it is.
				c.logger.Info("the servers hold the allocation as unknown; re-sending its state", "alloc_id", a.ID)
				c.updates.add(ar.Alloc())
				continue
			}
			if seen && a.AllocModifyIndex < prev {
				c.logger.Info("the servers' allocation went back; re-sending its state",
					"alloc_id", a.ID, "alloc_modify_index", a.AllocModifyIndex, "known_index", prev)
				c.updates.add(ar.Alloc())
			}
			continue
		}
		if a.ServerTerminalStatus() || a.ClientTerminalStatus() {
			// Stopped before it ran here, or finished by an earlier
			// client and since collected: nothing to run.
			continue
		}
		if a.NodeID != "" && a.NodeID != c.NodeID() {
			c.logger.Warn("ignoring an allocation for another node", "alloc_id", a.ID, "node_id", a.NodeID)
			continue
		}
		ar, err := c.newRunner(a, nil)
		if err != nil {
			c.logger.Error("cannot run allocation", "alloc_id", a.ID, "error", err)
			continue
		}
		if !c.addRunner(a.ID, ar, nil) {
			return
		}
		c.logger.Debug("starting allocation", "alloc_id", a.ID, "job_id", a.JobID, "task_group", a.TaskGroup)
		incr(metricAllocsStarted)
		ar.Run()
	}
}

// destroy kills an allocation's tasks and removes its directory and state.
func (c *Client) destroy(ar *allocrunner.AllocRunner) {
	c.identities.forget(ar.ID())
	c.hbStop.forget(ar.ID())
	if err := ar.Destroy(); err != nil {
		c.logger.Warn("removing allocation failed", "alloc_id", ar.ID(), "error", err)
	}
}

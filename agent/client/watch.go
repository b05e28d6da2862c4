package client

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/drover-project/drover/agent/client/allocrunner"
	"github.com/drover-project/drover/agent/client/allocwatch"
	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// errShutdown is returned by blocking calls cut short by Shutdown.
var errShutdown = structs.ErrShutdown

// errWatchReset is returned by blocking calls cut short by resetWatch.
var errWatchReset = errors.New("allocation watch restarted")

// blockingMargin is how much longer than its MaxQueryTime (and the
// servers' jitter of up to a sixteenth of it) the client waits for a
// blocking query's answer before it takes the connection for dead: a
// query forwarded to the leader may first wait up to the servers'
// NoLeaderTimeout (5 s by default) for one.
const blockingMargin = 5 * time.Second

// blockingTimeout bounds one server's answer to a blocking query that
// waits up to maxQuery.
func blockingTimeout(maxQuery time.Duration) time.Duration {
	return maxQuery + maxQuery/16 + blockingMargin
}

// resetWatch restarts the allocation watch's blocking query (or cuts its
// wait before a retry short): the client has moved to another server or
// reached one again after failures, and the query may be waiting on a
// server it left or on a connection that died (one that silently lost
// its packets never answers). It never blocks.
func (c *Client) resetWatch() {
	select {
	case c.watchReset <- struct{}{}:
	default: // one is pending already
	}
}

// blockingRPC makes an RPC that may block for a long time. Each server
// gets blockingTimeout(MaxQueryTime) to answer; one that does not is
// left for the next (Client.rpc). Shutdown (errShutdown) and resetWatch
// (errWatchReset) abandon it: the call ends at once over a
// ContextTransport (and in process, for a query that carries the
// context), else it finishes in the background and is discarded; reply
// must not be read after either error.
func (c *Client) blockingRPC(method string, args, reply any) error {
	select {
	case <-c.watchReset: // asked before this call, which uses the current server
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if q, ok := args.(interface{ WithContext(context.Context) }); ok {
		q.WithContext(ctx) // ends the query when served in process
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.rpc(ctx, blockingTimeout(c.cfg.MaxQueryTime), method, args, reply)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-c.shutdownCh:
		return errShutdown
	case <-c.watchReset:
		return errWatchReset
	}
}

// watchPause waits d before the watch retries a failed call; resetWatch
// cuts it short (reset), Shutdown too (ok false).
func (c *Client) watchPause(d time.Duration) (reset, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, true
	case <-c.watchReset:
		return true, true
	case <-c.shutdownCh:
		return false, false
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
			if !c.watchFailed(b, err, "watching allocations failed; will retry") {
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
				if !c.watchFailed(b, err, "fetching allocations failed; will retry", "count", len(pull)) {
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

// watchFailed handles a failed call of the watch: after a reset it
// retries at once, otherwise after the backoff (which a reset cuts
// short). It returns false on shutdown.
func (c *Client) watchFailed(b *backoff.Backoff, err error, msg string, kv ...any) bool {
	if c.shuttingDown() {
		return false
	}
	if errors.Is(err, errWatchReset) {
		c.logger.Info("restarting the allocation watch: the client changed servers or reached them again", "server", c.servers.current())
		b.Reset()
		return true
	}
	c.logger.Warn(msg, append(kv, "error", err)...)
	reset, ok := c.watchPause(b.Next())
	if reset {
		c.logger.Info("retrying the allocation watch now: the client reached the servers again", "server", c.servers.current())
		b.Reset()
	}
	return ok
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

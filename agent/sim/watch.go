package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/agent/client/allocwatch"
	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// watch follows the servers' allocations for the node, as a real client:
// a blocking Node.GetClientAllocs maps allocation IDs to their
// AllocModifyIndex; only new or changed ones are acted on, as the answer
// carries them (InlineAllocs) or else fetched (Alloc.GetAllocs). The
// servers answer when they change an allocation of the node, not on the
// node's own updates; allocations they
// collect show up missing when a query times out. The first query is a
// consistent read (leader); later ones may be answered by any server
// (stale), so the watches spread over the servers as real clients' do,
// except to confirm an answer below the last index (see allocwatch.Index).
func (n *simNode) watch() {
	b := backoff.New(n.s.cfg.RetryBase, n.s.cfg.RetryLimit)
	var w allocwatch.Index
	// The request and the two replies are reused from one query to the
	// next: the transport is done with a request when the call returns,
	// and each reply is released once read.
	req := &structs.NodeSpecificRequest{NodeID: n.node.ID, SecretID: n.node.SecretID}
	var watchReply, fetchReply rawReply
	var acted uint64 // index of the last answer acted on
	for !n.s.stopping() {
		req.InlineAllocs = structs.MaxInlineAllocs
		req.QueryOptions = w.Options(n.s.cfg.Region, n.s.cfg.MaxQueryTime)
		req.AuthToken = n.node.SecretID
		err := n.rpc("Node.GetClientAllocs", req, &watchReply)
		var resp clientAllocs
		if err == nil {
			resp, err = readClientAllocs(watchReply.body)
		}
		if err == nil {
			n.s.counters.watchAnswers.Add(1)
			if !w.Accept(resp.index) {
				watchReply.release()
				continue // confirm with the leader first
			}
			err = n.act(&resp, acted, &fetchReply)
		}
		watchReply.release()
		if err != nil {
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
		b.Reset()
		w.Done(resp.index)
		acted = resp.index
	}
}

// act acts on an answer: it starts or stops what changed, from the
// allocations the answer carries (InlineAllocs) and, for the rest, a
// fetch into fetchReply (released here). acted is the index of the last
// answer acted on.
func (n *simNode) act(resp *clientAllocs, acted uint64, fetchReply *rawReply) error {
	pull, minIndex, err := n.diff(resp, acted)
	if err != nil || len(pull) == 0 {
		return err
	}
	have, haveIDs, rest := splitInline(resp.changed, pull)
	if len(have) > 0 {
		n.apply(have, haveIDs)
	}
	if len(rest) == 0 {
		return nil
	}
	if len(rest) < len(pull) {
		minIndex = resp.highestOf(rest)
	}
	allocs, err := n.fetch(rest, minIndex, fetchReply)
	if err == nil {
		n.apply(allocs, rest)
	}
	fetchReply.release()
	if err != nil {
		return fmt.Errorf("fetching %d allocations: %w", len(rest), err)
	}
	return nil
}

// diff compares the servers' map with what the node knows: it returns the
// IDs to fetch (new or modified) with the index the fetch must wait for,
// and forgets allocations the servers no longer list (cancelling their
// timers). It reads the map as encoded: IDs are copied only to be pulled.
//
// acted is the index of the last answer the node acted on (0 for none).
// When this answer is not below it, an entry at or below acted is known
// without looking it up: it was in that answer too (an answer's index is
// the highest AllocModifyIndex of the same state it lists, so the state
// held every allocation modified at or before it), with the same index,
// and acting on that answer fetched it if needed. Only a wake-up's new
// entries cost a lookup.
//
// The fetch waits for the highest AllocModifyIndex among the pulled
// allocations, not for the watch's index: that one may be another
// allocation's (or the node's CreateIndex), and Alloc.GetAllocs (whose
// index is the highest ModifyIndex of the allocations asked for) would
// then block until its timeout.
func (n *simNode) diff(server *clientAllocs, acted uint64) (pull []string, minIndex uint64, err error) {
	if server.index < acted {
		acted = 0 // the leader's answer after a rebuild: compare everything
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	listed := 0 // known allocations the servers still list
	for it := server.iter(); ; {
		if !it.next() {
			if err := it.err(); err != nil {
				return nil, 0, fmt.Errorf("reading Node.GetClientAllocs: %w", err)
			}
			break
		}
		if it.index <= acted {
			listed++
			continue
		}
		known, ok := n.known[string(it.id)]
		if ok {
			listed++
		}
		if !ok || it.index > known {
			pull = append(pull, string(it.id))
			minIndex = max(minIndex, it.index)
		}
	}
	if listed < len(n.known) {
		// Some are gone (the map's IDs are distinct): find which.
		ids := make(map[string]struct{}, server.count)
		for it := server.iter(); it.next(); {
			ids[string(it.id)] = struct{}{}
		}
		for id := range n.known {
			if _, ok := ids[id]; ok {
				continue
			}
			delete(n.known, id)
			if a := n.allocs[id]; a != nil {
				n.removeLocked(a)
			}
		}
	}
	sort.Strings(pull)
	return pull, minIndex, nil
}

// splitInline takes from changed (an answer's carried allocations, in ID
// order) those pull (sorted) asks for: it returns them with their IDs (in
// the same order) and the IDs left to fetch.
func splitInline(changed []wireAlloc, pull []string) (have []wireAlloc, haveIDs, rest []string) {
	if len(changed) == 0 {
		return nil, nil, pull
	}
	i := 0
	for _, id := range pull {
		for i < len(changed) && string(changed[i].id) < id {
			i++
		}
		if i < len(changed) && string(changed[i].id) == id {
			have = append(have, changed[i])
			haveIDs = append(haveIDs, id)
			i++
			continue
		}
		rest = append(rest, id)
	}
	return have, haveIDs, rest
}

// highestOf returns the highest AllocModifyIndex the answer's map lists
// for ids (sorted).
func (c *clientAllocs) highestOf(ids []string) uint64 {
	var high uint64
	for it := c.iter(); it.next(); {
		if _, found := sort.Find(len(ids), func(i int) int { return strings.Compare(string(it.id), ids[i]) }); found {
			high = max(high, it.index)
		}
	}
	return high
}

// fetch gets allocations by ID from a server that has caught up with
// index (the highest AllocModifyIndex of ids), into reply (the caller
// releases it after using what fetch returns). Every requested allocation
// must come back, else it is an error (retried).
func (n *simNode) fetch(ids []string, index uint64, reply *rawReply) ([]wireAlloc, error) {
	req := &structs.AllocsGetRequest{AllocIDs: ids, QueryOptions: structs.QueryOptions{
		Region: n.s.cfg.Region, MinQueryIndex: index - 1, MaxQueryTime: n.s.cfg.MaxQueryTime, AllowStale: true,
		AuthToken: n.node.SecretID}}
	n.s.counters.fetches.Add(1)
	if err := n.rpc("Alloc.GetAllocs", req, reply); err != nil {
		return nil, err
	}
	allocs, err := readAllocs(reply.body)
	if err != nil {
		return nil, err
	}
	if len(allocs) != len(ids) {
		return nil, structs.NewError(structs.ErrCodeNotFound, "asked for %d allocations, got %d", len(ids), len(allocs))
	}
	return allocs, nil
}

// errNoJob is logged for an allocation fetched without its job.
var errNoJob = errors.New("allocation has no job")

// apply acts on fetched allocations: new ones start (reported running
// after ReportDelay), ones the servers stopped are reported complete. ids
// are the IDs asked for: the servers answer in that order, so an
// allocation's ID string is usually ids[i], not a new copy.
func (n *simNode) apply(allocs []wireAlloc, ids []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range allocs {
		a := &allocs[i]
		var id string
		if i < len(ids) && ids[i] == string(a.id) {
			id = ids[i]
		} else {
			id = string(a.id)
		}
		n.known[id] = a.allocModifyIndex
		cur := n.allocs[id]
		switch {
		case cur == nil:
			if a.serverTerminal() || a.clientTerminal() || string(a.nodeID) != n.node.ID {
				continue // stopped before it ran, finished earlier, or not ours
			}
			g, err := n.s.groups.lookup(a, n.s.cfg.RunFor)
			if err != nil {
				n.s.logger.Warn("cannot run allocation", "alloc_id", id, "error", err)
				continue
			}
			n.startLocked(id, g)
		case a.serverTerminal() && !cur.state.terminal():
			n.stopLocked(cur)
		}
	}
}

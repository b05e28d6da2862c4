package server

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// UpdateAlloc takes client status updates. Every allocation updated must
// be on a node whose secret NodeSecrets carries (state.CheckNodeSecrets);
// otherwise the whole request is refused with permission_denied and
// nothing is written. Only the client-owned fields
// of each update (ID, ClientStatus, ClientDescription, TaskStates,
// ModifyTime, and the health of DeploymentStatus) are kept, before the request is forwarded to the leader, so
// neither the forward nor the Raft entry carries anything else. Updates
// arriving while a Raft write of earlier ones is in flight are gathered and
// written together (group commit), so many clients cost few entries. An
// allocation that fails for the first time gets an evaluation of its job
// (trigger alloc-failure) in the same entry, so its reschedule policy runs;
// so does a service or system allocation reported complete or lost while
// the servers want it running (see finishedAllocEval), and an allocation
// of a deployment whose health is reported (see healthEval).
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	s := n.srv
	if len(args.Alloc) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Alloc", Message: "no allocation updates"}}}
	}
	// The server that took the client's call checks the task states (they
	// are stored as sent, and decoded only when read); a forward carries
	// checked ones.
	check := !args.IsForwarded()
	updates := make([]*structs.Allocation, 0, len(args.Alloc))
	for i, a := range args.Alloc {
		if a == nil || a.ID == "" {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Alloc", Message: "update " + strconv.Itoa(i) + " has no allocation ID"}}}
		}
		if check {
			if err := a.TaskStates.Validate(); err != nil {
				return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Alloc[" + strconv.Itoa(i) + "].TaskStates", Message: err.Error()}}}
			}
		}
		u := &structs.Allocation{
			ID: a.ID, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
			TaskStates: a.TaskStates, ModifyTime: a.ModifyTime,
		}
		if a.DeploymentStatus.HasHealth() {
			// The client's health report: only its verdict and time.
			healthy := *a.DeploymentStatus.Healthy
			u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: a.DeploymentStatus.Timestamp}
		}
		updates = append(updates, u)
	}
	if check {
		if err := validNodeFaults(args); err != nil {
			return err
		}
	}
	// Evals are the servers' to add; a client's are dropped. The nodes'
	// secrets go with a forward and are checked by the leader, against
	// its latest state; the Raft entry (allocBatch) carries none, nor the
	// node faults (the leader's quarantine watcher counts them).
	req := &structs.AllocUpdateRequest{Alloc: updates, NodeSecrets: args.NodeSecrets, NodeFaults: args.NodeFaults, WriteRequest: args.WriteRequest}
	if done, err := s.forward("Node.UpdateAlloc", req, req, reply); done {
		return err
	}
	defer measureSince(metricNodeUpdateAlloc, time.Now())
	st := s.fsm.State()
	if err := st.CheckNodeSecrets(updates, req.NodeSecrets); err != nil {
		return err
	}
	now := time.Now()
	var evals []*structs.Evaluation
	for _, a := range updates {
		if e := finishedAllocEval(st, a, now); e != nil {
			evals = append(evals, e)
		} else if e := healthEval(st, a, now); e != nil {
			evals = append(evals, e)
		}
	}
	index, err := s.allocUpdates.submit(func(b *allocBatch) {
		b.allocs = append(b.allocs, updates...)
		b.evals = append(b.evals, evals...)
	})
	if err != nil {
		return err
	}
	s.reportNodeFaults(req.NodeFaults...)
	reply.Index = index
	return nil
}

// maxNodeFaultsPerUpdate bounds the node faults one allocation update
// may carry.
const maxNodeFaultsPerUpdate = 256

// validNodeFaults checks the node faults of a client update: each of a
// known kind, on a node whose secret the request carries (so checked with
// the updates' secrets).
func validNodeFaults(args *structs.AllocUpdateRequest) error {
	if len(args.NodeFaults) > maxNodeFaultsPerUpdate {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeFaults",
			Message: "at most " + strconv.Itoa(maxNodeFaultsPerUpdate) + " node faults per update"}}}
	}
	for i, f := range args.NodeFaults {
		field := "NodeFaults[" + strconv.Itoa(i) + "]"
		switch {
		case f == nil:
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: field, Message: "missing node fault"}}}
		case !structs.ValidNodeFaultKind(f.Kind):
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: field + ".Kind", Message: "unknown node fault kind " + strconv.Quote(f.Kind)}}}
		}
		if _, ok := args.NodeSecrets[f.NodeID]; !ok {
			return structs.NewError(structs.ErrCodePermissionDenied, "node fault on node %q, whose secret the request does not carry", f.NodeID)
		}
	}
	return nil
}

// finishedAllocEval returns the evaluation for an allocation the client
// reports finished while the servers still want it running, or nil if none
// is needed (not finished, unknown, already finished, stopped by the
// servers, or its job is gone or stopped). A failed allocation gets one
// for its reschedule policy (trigger alloc-failure), of any job type. A
// service or system allocation that the client reports complete or lost
// without the servers having stopped it gets one too (trigger alloc-stop):
// it no longer counts and needs a replacement (so does one the servers
// stopped as lost with a fenced replacement pending, whose client came
// back and now reports it finished). That is what a client
// reports after a snapshot restore brought back, as running, allocations
// it had already stopped. A batch or sysbatch allocation that completed is
// done.
func finishedAllocEval(st *state.StateStore, update *structs.Allocation, now time.Time) *structs.Evaluation {
	trigger := structs.EvalTriggerRetryFailedAlloc
	switch update.ClientStatus {
	case structs.AllocClientStatusFailed:
	case structs.AllocClientStatusComplete, structs.AllocClientStatusLost:
		trigger = structs.EvalTriggerAllocStop
	case structs.AllocClientStatusRunning, structs.AllocClientStatusPending:
		return reconnectEval(st, update, now)
	default:
		return nil
	}
	prev, err := st.AllocByID(nil, update.ID)
	if err != nil || prev.ClientTerminalStatus() {
		return nil
	}
	// A lost allocation of a fenced group (scheduler/fence.go) still
	// holds its place until its client says it has ended: that word lets
	// the replacement be placed.
	if prev.ServerTerminalStatus() && prev.FollowupEvalID == "" {
		return nil
	}
	job, err := st.JobByID(nil, prev.Namespace, prev.JobID)
	if err != nil || job.Stopped() {
		return nil
	}
	if trigger == structs.EvalTriggerAllocStop && structs.IsBatchType(job.Type) {
		return nil
	}
	return structs.NewEval(job, trigger, now)
}

// reconnectEval returns the evaluation for an allocation the servers hold
// as unknown (its node was disconnected) that its client reports live
// again: the job's reconcile policy decides between it and its
// replacement (scheduler/disconnect.go). nil for any other.
func reconnectEval(st *state.StateStore, update *structs.Allocation, now time.Time) *structs.Evaluation {
	prev, err := st.AllocByID(nil, update.ID)
	if err != nil || prev.ClientStatus != structs.AllocClientStatusUnknown || prev.ServerTerminalStatus() {
		return nil
	}
	job, err := st.JobByID(nil, prev.Namespace, prev.JobID)
	if err != nil || job.Stopped() {
		return nil
	}
	return structs.NewEval(job, structs.EvalTriggerReconnect, now)
}

// healthEval returns the evaluation for a client's first health report of
// an allocation of a deployment (trigger deployment-watcher): the
// scheduler places the deployment's next batch, or marks it successful,
// as allocations turn healthy. Nil when the update reports no health, or
// the allocation is unknown, in no deployment, or already has its health.
func healthEval(st *state.StateStore, update *structs.Allocation, now time.Time) *structs.Evaluation {
	if !update.DeploymentStatus.HasHealth() {
		return nil
	}
	prev, err := st.AllocByID(nil, update.ID)
	if err != nil || prev.DeploymentID == "" || prev.DeploymentStatus.HasHealth() || prev.ServerTerminalStatus() {
		return nil
	}
	job, err := st.JobByID(nil, prev.Namespace, prev.JobID)
	if err != nil || job.Stopped() {
		return nil
	}
	return structs.NewEval(job, structs.EvalTriggerDeploymentWatcher, now)
}

// allocBatch is the work of one client-update Raft entry: the updates of
// every Node.UpdateAlloc gathered while the previous entry was written
// (groupCommit), and the evaluations they need.
type allocBatch struct {
	allocs []*structs.Allocation
	evals  []*structs.Evaluation
}

// writeAllocBatch writes one batch of client updates.
func (s *Server) writeAllocBatch(b *allocBatch) (uint64, error) {
	req := &structs.AllocUpdateRequest{Alloc: b.allocs, Evals: dedupeJobEvals(b.evals)}
	index, _, err := s.raftApply(structs.AllocClientUpdateRequestType, req)
	return index, err
}

// dedupeJobEvals keeps the first evaluation of each job.
func dedupeJobEvals(evals []*structs.Evaluation) []*structs.Evaluation {
	if len(evals) < 2 {
		return evals
	}
	seen := make(map[structs.NamespacedID]bool, len(evals))
	out := evals[:0:0]
	for _, e := range evals {
		id := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		if !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	return out
}

// GetClientAllocs is the client's watch: it maps every allocation on the
// node to its AllocModifyIndex. The node must exist and SecretID must be
// its secret (else permission_denied). With InlineAllocs the answer also carries the allocations
// modified after MinQueryIndex (up to that many), which the client would
// otherwise fetch next with Alloc.GetAllocs: one round trip per change
// instead of two.
//
// The reply index is the highest of the node's CreateIndex and its
// allocations' AllocModifyIndex, so a blocking query answers only when the
// servers changed something the client must act on: a new allocation, a
// stop or eviction, an in-place update, a desired transition. It waits on
// two rows only: the node's, and the node's row of allocation data in the
// state store (state.NodeAllocIndex, which holds that highest
// AllocModifyIndex), so client status updates (which move only
// ModifyIndex) do not even wake it, unless one makes an allocation
// terminal: that changes the node's usage, kept in the same row, which
// wakes the query to find the same index and wait on. The allocations are
// listed once, for the answer. A deleted node ends
// the query with a not-found error; status, drain and eligibility changes
// of the node wake it but do not answer it. Allocations deleted by the
// garbage collector (always terminal) do not answer it either: a waiting
// client sees them gone when its query times out (MaxQueryTime), whose
// answer lists the allocations as they are then.
//
// The index goes down when a collected allocation held the highest one.
// An answer below MinQueryIndex thus comes from a server that is behind (a
// stale read that timed out before it caught up) or from one past such a
// collection: clients (agent/client, agent/sim) confirm it with the leader
// before acting on what it no longer lists.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	s := n.srv
	if done, err := s.forward("Node.GetClientAllocs", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	q := getClientAllocsQuery(args.NodeID, args.SecretID, args.MinQueryIndex)
	defer putClientAllocsQuery(q)
	if err := s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, q.runFn); err != nil {
		return err
	}
	allocs, index, err := q.result()
	if err != nil {
		return err
	}
	reply.Allocs = allocs
	reply.Index = index
	if limit := min(args.InlineAllocs, structs.MaxInlineAllocs); limit > 0 {
		reply.Changed, err = q.st.ClientAllocsChanged(&q.key, args.MinQueryIndex, limit, nil)
		if err != nil {
			return err
		}
	}
	return nil
}

// clientAllocsQuery is the blocking query of Node.GetClientAllocs. run
// may be called many times (on every change to the node or its allocation
// index); it reads two rows, in one transaction. result lists the
// allocations once, after the last run. Queries are pooled
// (getClientAllocsQuery): the node's key and the bound run are built once
// per query object, not per call.
type clientAllocsQuery struct {
	key      state.NodeKey
	secretID string
	minIndex uint64
	runFn    state.QueryFn // q.run, bound once

	// Results of the last run.
	st          *state.StateStore // the store it read
	createIndex uint64            // of the node
	answered    bool              // its index passed minIndex
	missing     error             // not found, in a state that has not reached minIndex
}

var clientAllocsQueries = sync.Pool{New: func() any {
	q := &clientAllocsQuery{}
	q.runFn = q.run
	return q
}}

func getClientAllocsQuery(nodeID, secretID string, minIndex uint64) *clientAllocsQuery {
	q := clientAllocsQueries.Get().(*clientAllocsQuery)
	q.key.Reset(nodeID)
	q.secretID, q.minIndex = secretID, minIndex
	return q
}

// putClientAllocsQuery pools q once its call is done with it.
func putClientAllocsQuery(q *clientAllocsQuery) {
	q.key.Release()
	q.secretID, q.st, q.createIndex, q.answered, q.missing = "", nil, 0, false, nil
	clientAllocsQueries.Put(q)
}

// run reads the node and its allocation index and returns the index of the
// last change the client must act on (see GetClientAllocs). It watches
// those two rows only.
//
// A node that is missing from a state whose latest index has not passed
// minIndex may simply not be there yet: the caller saw it at minIndex
// (every answer's index is at least the node's CreateIndex), and this
// server, answering a stale read, is behind. run then waits (returns 0)
// for the registration to arrive; if the wait times out, result reports
// the node not found. Once the state has passed minIndex, a missing node
// was deleted, and the error ends the query at once.
func (q *clientAllocsQuery) run(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
	q.st, q.createIndex, q.answered, q.missing = st, 0, false, nil
	node, allocIndex, err := st.ClientNode(ws, &q.key)
	if err != nil {
		if q.minIndex == 0 || !errors.Is(err, structs.ErrNotFound) {
			return 0, err
		}
		// The index of the very state the lookup read: a later one (a
		// stale follower catching up meanwhile) may hold the node.
		if q.key.MissingAt() > q.minIndex {
			return 0, err
		}
		q.missing = err
		return 0, nil
	}
	if q.secretID != node.SecretID {
		return 0, errNodeSecret(node.ID)
	}
	q.createIndex = node.CreateIndex
	index := max(node.CreateIndex, allocIndex)
	q.answered = q.minIndex == 0 || index > q.minIndex
	return index, nil
}

// result lists the node's allocations, from the store the last run read,
// and returns them with their AllocModifyIndex (shared with the store) and the reply
// index computed from that same list, or the not-found error of a node
// that never appeared. An answered query lists them from the state its
// last run read (the same transaction, just read); one that timed out
// lists them as they are now (allocations collected while it waited,
// which need not wake it, are gone from its answer). Either way the index
// agrees with the list even when a write landed after the last run.
func (q *clientAllocsQuery) result() (structs.AllocIndexes, uint64, error) {
	if q.missing != nil {
		return nil, 0, q.missing
	}
	out, high, err := q.st.ClientAllocIndexesOf(&q.key, !q.answered)
	if err != nil {
		return nil, 0, err
	}
	return out, max(q.createIndex, high), nil
}

// GetAllocs returns every allocation on a node (blocking on the node's
// allocations).
func (n *Node) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) error {
	s := n.srv
	if done, err := s.forward("Node.GetAllocs", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Allocs = allocs
		var index uint64
		for _, a := range allocs {
			index = max(index, a.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}

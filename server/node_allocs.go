package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// UpdateAlloc takes client status updates. Updates arriving while a Raft
// write of earlier ones is in flight are gathered and written together
// (group commit), so many clients cost few entries. An allocation that
// fails for the first time gets an evaluation of its job (trigger
// alloc-failure) in the same entry, so its reschedule policy runs.
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	s := n.srv
	if done, err := s.forward("Node.UpdateAlloc", args, args, reply); done {
		return err
	}
	defer measureSince(metricNodeUpdateAlloc, time.Now())
	if len(args.Alloc) == 0 {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Alloc", Message: "no allocation updates"}}}
	}
	st := s.fsm.State()
	now := time.Now()
	updates := make([]*structs.Allocation, 0, len(args.Alloc))
	var evals []*structs.Evaluation
	for i, a := range args.Alloc {
		if a == nil || a.ID == "" {
			return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Alloc", Message: "update " + strconv.Itoa(i) + " has no allocation ID"}}}
		}
		// Only the client-owned fields travel through Raft.
		updates = append(updates, &structs.Allocation{
			ID: a.ID, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
			TaskStates: a.TaskStates, ModifyTime: a.ModifyTime,
		})
		if a.ClientStatus != structs.AllocClientStatusFailed {
			continue
		}
		if e := failedAllocEval(st, a.ID, now); e != nil {
			evals = append(evals, e)
		}
	}
	index, err := s.allocUpdates.submit(updates, evals)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// failedAllocEval returns the evaluation for an allocation the client
// reports failed, or nil if none is needed (unknown, already finished,
// stopped by the servers, or its job is gone or stopped).
func failedAllocEval(st *state.StateStore, allocID string, now time.Time) *structs.Evaluation {
	prev, err := st.AllocByID(nil, allocID)
	if err != nil || prev.ClientTerminalStatus() || prev.ServerTerminalStatus() {
		return nil
	}
	job, err := st.JobByID(nil, prev.Namespace, prev.JobID)
	if err != nil || job.Stopped() {
		return nil
	}
	return structs.NewEval(job, structs.EvalTriggerRetryFailedAlloc, now)
}

// allocUpdateBatcher group-commits client allocation updates: the first
// caller starts a writer; callers that arrive while it writes join the
// next batch.
type allocUpdateBatcher struct {
	s *Server

	mu      sync.Mutex
	next    *allocBatch // batch being gathered; guarded by mu
	running bool        // a writer goroutine is active; guarded by mu
}

type allocBatch struct {
	allocs []*structs.Allocation
	evals  []*structs.Evaluation
	done   chan struct{} // closed once index and err are set
	index  uint64
	err    error
}

// submit adds updates (and evals) to the next batch and waits for it to
// be written.
func (b *allocUpdateBatcher) submit(allocs []*structs.Allocation, evals []*structs.Evaluation) (uint64, error) {
	b.mu.Lock()
	if b.next == nil {
		b.next = &allocBatch{done: make(chan struct{})}
	}
	batch := b.next
	batch.allocs = append(batch.allocs, allocs...)
	batch.evals = append(batch.evals, evals...)
	if !b.running {
		b.running = true
		go b.write()
	}
	b.mu.Unlock()
	<-batch.done
	return batch.index, batch.err
}

// write applies batches until none is waiting.
func (b *allocUpdateBatcher) write() {
	for {
		b.mu.Lock()
		batch := b.next
		b.next = nil
		if batch == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		req := &structs.AllocUpdateRequest{Alloc: batch.allocs, Evals: dedupeJobEvals(batch.evals)}
		batch.index, _, batch.err = b.s.raftApply(structs.AllocClientUpdateRequestType, req)
		close(batch.done)
	}
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
// node to its AllocModifyIndex, blocking until one changes past
// MinQueryIndex. The node must exist and, when SecretID is given, match.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	s := n.srv
	if done, err := s.forward("Node.GetClientAllocs", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		if args.SecretID != "" && args.SecretID != node.SecretID {
			return 0, structs.NewError(structs.ErrCodeInvalid, "node secret ID does not match")
		}
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Allocs = make(map[string]uint64, len(allocs))
		var index uint64
		for _, a := range allocs {
			reply.Allocs[a.ID] = a.AllocModifyIndex
			index = max(index, a.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
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

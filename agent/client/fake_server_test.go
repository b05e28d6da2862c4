package client

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// fakeCluster is a tiny in-memory stand-in for the servers: one shared
// state reachable through several addresses, each of which can be taken
// down (its calls then fail like a refused connection). It implements the
// RPCs the client uses, per structs/rpc_sched.go.
type fakeCluster struct {
	t   *testing.T
	ttl time.Duration

	mu      sync.Mutex
	down    map[string]bool
	index   uint64
	changed chan struct{} // closed and replaced on every write
	nodes   map[string]*structs.Node
	// nodeIndex is each node's CreateIndex (kept across re-registration).
	nodeIndex map[string]uint64
	allocs    map[string]*structs.Allocation
	// lagging, when set, answers the next stale Node.GetClientAllocs as a
	// follower that is behind would (then it is cleared).
	lagging *structs.NodeClientAllocsResponse
	// noInline makes Node.GetClientAllocs ignore InlineAllocs, as Nomad
	// and older servers do.
	noInline bool
	// consistentWatches counts Node.GetClientAllocs calls that were not
	// stale reads.
	consistentWatches int
	// calls counts RPCs by "addr method".
	calls map[string]int
	// heartbeats records when each heartbeat arrived and where.
	heartbeats []heartbeatCall
	updates    []*structs.AllocUpdateRequest
	// registrations are the nodes registered, in order, as sent.
	registrations []*structs.Node
}

type heartbeatCall struct {
	at   time.Time
	addr string
}

func newFakeCluster(t *testing.T, ttl time.Duration) *fakeCluster {
	return &fakeCluster{t: t, ttl: ttl, down: map[string]bool{}, changed: make(chan struct{}),
		nodes: map[string]*structs.Node{}, nodeIndex: map[string]uint64{}, allocs: map[string]*structs.Allocation{}, calls: map[string]int{}}
}

var errRefused = errors.New("dial tcp: connection refused")

func (f *fakeCluster) setDown(addr string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[addr] = down
}

func (f *fakeCluster) bumpLocked() uint64 {
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
	return f.index
}

func (f *fakeCluster) count(addr, method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if addr == "" {
		n := 0
		for k, v := range f.calls {
			if len(k) > len(method) && k[len(k)-len(method):] == method {
				n += v
			}
		}
		return n
	}
	return f.calls[addr+" "+method]
}

// RPC implements Transport.
func (f *fakeCluster) RPC(addr, method string, args, reply any) error {
	f.mu.Lock()
	if f.down[addr] {
		f.mu.Unlock()
		return fmt.Errorf("rpc to %s: %w", addr, errRefused)
	}
	f.calls[addr+" "+method]++
	f.mu.Unlock()
	switch method {
	case "Node.Register":
		return f.register(args.(*structs.NodeRegisterRequest), reply.(*structs.NodeUpdateResponse))
	case "Node.UpdateStatus":
		return f.updateStatus(addr, args.(*structs.NodeUpdateStatusRequest), reply.(*structs.NodeUpdateResponse))
	case "Node.GetClientAllocs":
		return f.getClientAllocs(args.(*structs.NodeSpecificRequest), reply.(*structs.NodeClientAllocsResponse))
	case "Alloc.GetAllocs":
		return f.getAllocs(args.(*structs.AllocsGetRequest), reply.(*structs.AllocsGetResponse))
	case "Node.UpdateAlloc":
		return f.updateAlloc(args.(*structs.AllocUpdateRequest), reply.(*structs.GenericResponse))
	}
	return structs.NewError(structs.ErrCodeUnsupported, "unknown method %s", method)
}

func (f *fakeCluster) register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	n := args.Node.Copy()
	n.Canonicalize()
	if err := n.Validate(); err != nil {
		return err
	}
	if n.SecretID == "" {
		return structs.NewError(structs.ErrCodeInvalid, "missing secret")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.nodes[n.ID]; old != nil && old.SecretID != n.SecretID {
		return structs.NewError(structs.ErrCodeInvalid, "secret mismatch")
	}
	f.nodes[n.ID] = n
	f.registrations = append(f.registrations, args.Node.Copy())
	reply.HeartbeatTTL = f.ttl
	reply.Index = f.bumpLocked()
	if f.nodeIndex[n.ID] == 0 {
		f.nodeIndex[n.ID] = reply.Index
	}
	return nil
}

func (f *fakeCluster) updateStatus(addr string, args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[args.NodeID]
	if n == nil {
		return structs.NewError(structs.ErrCodeNotFound, "node %s not found", args.NodeID)
	}
	n.Status = args.Status
	f.heartbeats = append(f.heartbeats, heartbeatCall{at: time.Now(), addr: addr})
	reply.HeartbeatTTL = f.ttl
	return nil
}

// getClientAllocs answers as a server does: its index is the highest of
// the node's CreateIndex and its allocations' AllocModifyIndex, so only
// changes the servers make answer a blocking query; one that times out
// answers the current state.
func (f *fakeCluster) getClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	deadline := time.After(args.MaxQueryTime)
	f.mu.Lock()
	if !args.AllowStale {
		f.consistentWatches++
	}
	f.mu.Unlock()
	for {
		f.mu.Lock()
		if n := f.nodes[args.NodeID]; n == nil || n.SecretID != args.SecretID {
			f.mu.Unlock()
			return structs.NewError(structs.ErrCodeNotFound, "node not found")
		}
		if lag := f.lagging; lag != nil && args.AllowStale {
			f.lagging = nil
			reply.Allocs, reply.Index = lag.Allocs, lag.Index
			f.mu.Unlock()
			return nil
		}
		f.clientAllocsLocked(args.NodeID, reply)
		if args.MinQueryIndex == 0 || reply.Index > args.MinQueryIndex {
			f.inlineLocked(args, reply)
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			f.mu.Lock()
			f.clientAllocsLocked(args.NodeID, reply)
			f.inlineLocked(args, reply)
			f.mu.Unlock()
			return nil
		}
	}
}

func (f *fakeCluster) clientAllocsLocked(nodeID string, reply *structs.NodeClientAllocsResponse) {
	allocs := map[string]uint64{}
	reply.Index = f.nodeIndex[nodeID]
	for id, a := range f.allocs {
		if a.NodeID == nodeID {
			allocs[id] = a.AllocModifyIndex
			reply.Index = max(reply.Index, a.AllocModifyIndex)
		}
	}
	reply.Allocs = structs.NewAllocIndexes(allocs)
}

// inlineLocked fills Changed as a server does for InlineAllocs: the
// listed allocations modified after MinQueryIndex, in ID order, up to the
// limit.
func (f *fakeCluster) inlineLocked(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) {
	if f.noInline || args.InlineAllocs <= 0 {
		return
	}
	ids := make([]string, 0, len(reply.Allocs))
	for _, a := range reply.Allocs {
		if a.AllocModifyIndex > args.MinQueryIndex {
			ids = append(ids, a.ID)
		}
	}
	sort.Strings(ids)
	for _, id := range ids[:min(len(ids), args.InlineAllocs)] {
		reply.Changed = append(reply.Changed, f.allocs[id].Copy())
	}
}

func (f *fakeCluster) getAllocs(args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var highest uint64
	for _, id := range args.AllocIDs {
		if a := f.allocs[id]; a != nil {
			reply.Allocs = append(reply.Allocs, a.Copy())
			highest = max(highest, a.AllocModifyIndex)
		}
	}
	// A real server answers Alloc.GetAllocs at the requested allocations'
	// highest AllocModifyIndex and blocks while that is not above
	// MinQueryIndex: such a call would wait for its whole timeout.
	if highest > 0 && args.MinQueryIndex >= highest {
		f.t.Errorf("Alloc.GetAllocs with MinQueryIndex %d would block on a real server: the allocations' highest AllocModifyIndex is %d",
			args.MinQueryIndex, highest)
	}
	reply.Index = f.index
	return nil
}

func (f *fakeCluster) updateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, args)
	for _, u := range args.Alloc {
		a := f.allocs[u.ID]
		if a == nil {
			continue
		}
		c := a.Copy()
		c.ClientStatus, c.ClientDescription, c.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
		f.allocs[u.ID] = c
	}
	reply.Index = f.bumpLocked()
	return nil
}

// upsertAlloc places or changes an allocation (as the scheduler would).
func (f *fakeCluster) upsertAlloc(a *structs.Allocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := a.Copy()
	idx := f.bumpLocked()
	c.AllocModifyIndex, c.ModifyIndex = idx, idx
	if old := f.allocs[a.ID]; old != nil {
		c.ClientStatus, c.TaskStates = old.ClientStatus, old.TaskStates
	}
	f.allocs[a.ID] = c
}

func (f *fakeCluster) stopAlloc(id string) {
	f.mu.Lock()
	a := f.allocs[id].Copy()
	f.mu.Unlock()
	a.DesiredStatus = structs.AllocDesiredStatusStop
	f.upsertAlloc(a)
}

func (f *fakeCluster) removeAlloc(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.allocs, id)
	f.bumpLocked()
}

func (f *fakeCluster) forgetNodes() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = map[string]*structs.Node{}
	f.nodeIndex = map[string]uint64{}
	f.bumpLocked()
}

func (f *fakeCluster) alloc(id string) *structs.Allocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allocs[id].Copy()
}

func (f *fakeCluster) node(id string) *structs.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[id].Copy()
}

func (f *fakeCluster) heartbeatLog() []heartbeatCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]heartbeatCall(nil), f.heartbeats...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

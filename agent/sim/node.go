package sim

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// minHeartbeatInterval keeps a tiny TTL from spinning.
const minHeartbeatInterval = 10 * time.Millisecond

// simNode is one simulated client node.
type simNode struct {
	s    *Sim
	idx  int
	node *structs.Node // the registration; read-only after New
	tr   Transport
	// server is the index (into Config.Servers) of the server in use.
	server atomic.Int32

	mu         sync.Mutex
	registered bool             // guarded by mu
	ttl        time.Duration    // last TTL granted; guarded by mu
	lastOK     time.Time        // last successful heartbeat; guarded by mu
	hbTimer    clock.Timer      // next liveness tick; guarded by mu
	hbBackoff  *backoff.Backoff // guarded by mu
	allocs     map[string]*simAlloc
	// known maps every allocation seen to the AllocModifyIndex acted on,
	// so the watch fetches only what changed. allocs and known are
	// guarded by mu.
	known map[string]uint64
}

func newSimNode(s *Sim, i int, node *structs.Node) *simNode {
	n := &simNode{
		s: s, idx: i, node: node,
		tr:        nodeTransport(s.transports[i%len(s.transports)], node),
		hbBackoff: backoff.New(s.cfg.RetryBase, s.cfg.RetryLimit),
		allocs:    map[string]*simAlloc{},
		known:     map[string]uint64{},
	}
	n.server.Store(int32(i % len(s.cfg.Servers)))
	return n
}

// rpc calls method on the node's current server, failing over to the
// next server on transport errors and leaderless answers (each server is
// tried once per call).
func (n *simNode) rpc(method string, args, reply any) error {
	servers := n.s.cfg.Servers
	var last error
	for range servers {
		cur := n.server.Load()
		err := n.tr.RPC(servers[int(cur)%len(servers)], method, args, reply)
		if err == nil {
			return nil
		}
		last = err
		if !failoverErr(err) || n.s.stopping() {
			return err
		}
		n.server.CompareAndSwap(cur, (cur+1)%int32(len(servers)))
	}
	return last
}

// start registers the node (retrying until it succeeds or the Sim stops),
// then arms its heartbeat and starts its allocation watch. It runs on a
// registration worker.
func (n *simNode) start() {
	b := backoff.New(n.s.cfg.RetryBase, n.s.cfg.RetryLimit)
	for {
		if n.s.stopping() {
			return
		}
		err := n.register()
		if err == nil {
			break
		}
		n.s.logger.Debug("registering a node failed; will retry", "node_id", n.node.ID, "error", err)
		if !n.s.sleep(b.Next()) {
			return
		}
	}
	n.s.nodeRegisteredOnce()
	if !n.s.cfg.NoWatch {
		n.s.goTracked(n.watch)
	}
}

// register sends Node.Register (one of RegisterConcurrency in flight),
// then arms the next heartbeat.
func (n *simNode) register() error {
	if !n.s.acquire(n.s.regSem) {
		return structs.ErrShutdown
	}
	node := n.node.Copy()
	node.Status = structs.NodeStatusReady
	node.StatusUpdatedAt = n.s.clock.Now().Unix()
	// The node's secret is also its calls' ACL token (as a client agent's).
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: n.s.cfg.Region, AuthToken: node.SecretID}}
	var resp structs.NodeUpdateResponse
	err := n.rpc("Node.Register", req, &resp)
	<-n.s.regSem
	if err == nil && resp.HeartbeatTTL <= 0 {
		err = errors.New("server returned no heartbeat TTL")
	}
	if err != nil {
		n.s.counters.registerFailed.Add(1)
		return err
	}
	n.s.counters.registrations.Add(1)
	n.mu.Lock()
	if !n.registered {
		n.s.counters.registered.Add(1)
	}
	n.registered, n.ttl, n.lastOK = true, resp.HeartbeatTTL, n.s.clock.Now()
	n.hbBackoff.Reset()
	n.scheduleLocked(heartbeatInterval(n.ttl, n.s.cfg.HeartbeatJitter, rand.Float64()))
	n.mu.Unlock()
	return nil
}

// heartbeatInterval is when to heartbeat next for a TTL: half of it, less
// up to jitter of it at random (r in [0,1)).
func heartbeatInterval(ttl time.Duration, jitter, r float64) time.Duration {
	d := ttl/2 - time.Duration(float64(ttl)*jitter*r)
	return max(d, minHeartbeatInterval)
}

// scheduleLocked arms the next liveness tick after d.
func (n *simNode) scheduleLocked(d time.Duration) {
	if n.hbTimer != nil {
		n.hbTimer.Stop()
	}
	n.hbTimer = n.s.clock.AfterFunc(d, n.tick)
}

// stopTimers cancels the node's heartbeat and allocation timers.
func (n *simNode) stopTimers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hbTimer != nil {
		n.hbTimer.Stop()
	}
	for _, a := range n.allocs {
		if a.timer != nil {
			a.timer.Stop()
		}
	}
}

// tick runs on the node's timer: it heartbeats, or registers again when
// the servers no longer know the node or heartbeats failed for longer
// than the TTL.
func (n *simNode) tick() {
	if !n.s.enter() {
		return
	}
	defer n.s.wg.Done()
	if n.s.stopping() {
		return
	}
	n.mu.Lock()
	registered := n.registered
	n.mu.Unlock()
	if !registered {
		if err := n.register(); err != nil {
			n.mu.Lock()
			if !n.s.stopping() {
				n.scheduleLocked(n.hbBackoff.Next())
			}
			n.mu.Unlock()
		}
		return
	}
	ttl, err := n.heartbeat()
	now := n.s.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.s.stopping() {
		return
	}
	switch {
	case err == nil:
		n.ttl, n.lastOK = ttl, now
		n.hbBackoff.Reset()
		n.scheduleLocked(heartbeatInterval(ttl, n.s.cfg.HeartbeatJitter, rand.Float64()))
	case errors.Is(err, structs.ErrNotFound):
		n.s.logger.Info("servers do not know the node; registering again", "node_id", n.node.ID)
		n.markUnregisteredLocked()
		n.scheduleLocked(0)
	default:
		n.s.logger.Debug("heartbeat failed", "node_id", n.node.ID, "error", err)
		if now.Sub(n.lastOK) > n.ttl {
			n.markUnregisteredLocked() // the servers will mark it down: register again
		}
		n.scheduleLocked(max(min(n.hbBackoff.Next(), n.ttl/4), minHeartbeatInterval))
	}
}

func (n *simNode) markUnregisteredLocked() {
	if n.registered {
		n.registered = false
		n.s.counters.registered.Add(-1)
	}
}

// heartbeat sends Node.UpdateStatus (ready) and returns the next TTL.
func (n *simNode) heartbeat() (time.Duration, error) {
	if !n.s.acquire(n.s.hbSem) {
		return 0, structs.ErrShutdown
	}
	defer func() { <-n.s.hbSem }()
	req := &structs.NodeUpdateStatusRequest{
		NodeID: n.node.ID, SecretID: n.node.SecretID, Status: structs.NodeStatusReady, UpdatedAt: n.s.clock.Now().Unix(),
		WriteRequest: structs.WriteRequest{Region: n.s.cfg.Region, AuthToken: n.node.SecretID},
	}
	var resp structs.NodeUpdateResponse
	if err := n.rpc("Node.UpdateStatus", req, &resp); err != nil {
		n.s.counters.heartbeatsFailed.Add(1)
		return 0, err
	}
	if resp.HeartbeatTTL <= 0 {
		n.s.counters.heartbeatsFailed.Add(1)
		return 0, errors.New("server returned no heartbeat TTL")
	}
	n.s.counters.heartbeats.Add(1)
	return resp.HeartbeatTTL, nil
}

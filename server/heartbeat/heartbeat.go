package heartbeat

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/clock"
)

// Timer, Clock and RealClock are the shared clock types (internal/clock).
type (
	Timer = clock.Timer
	Clock = clock.Clock
)

// RealClock is the wall clock.
var RealClock Clock = clock.Real{}

// Config tunes the timers. Zero fields take Nomad's defaults.
type Config struct {
	MinTTL       time.Duration // 10 s
	MaxPerSecond float64       // 50 heartbeats/s cluster-wide
	Grace        time.Duration // 10 s beyond the TTL before a node is down
	FailoverTTL  time.Duration // 5 min after a leader change
	Clock        Clock
	// Expired is called (on its own goroutine) with a node whose timer ran
	// out. It must not call back into the Heartbeater synchronously with a
	// lock held by the caller.
	Expired func(nodeID string)
	// Rand returns a float in [0,1); tests may fix it. Default math/rand/v2.
	Rand func() float64
}

// Heartbeater holds one timer per node. Safe for concurrent use.
type Heartbeater struct {
	cfg Config

	mu      sync.Mutex
	enabled bool             // guarded by mu
	timers  map[string]Timer // guarded by mu
	gen     map[string]uint64
	nextGen uint64 // guarded by mu
	// pending holds, while disabled, the deadline Reset handed a node
	// (a node that registers or heartbeats while a new leader is still
	// establishing itself): Initialize arms it with that deadline, not
	// the much longer FailoverTTL. Guarded by mu.
	pending map[string]time.Time
}

// New returns a disabled Heartbeater; the leader enables it with Initialize.
func New(cfg Config) *Heartbeater {
	if cfg.MinTTL == 0 {
		cfg.MinTTL = 10 * time.Second
	}
	if cfg.MaxPerSecond == 0 {
		cfg.MaxPerSecond = 50
	}
	if cfg.Grace == 0 {
		cfg.Grace = 10 * time.Second
	}
	if cfg.FailoverTTL == 0 {
		cfg.FailoverTTL = 5 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Expired == nil {
		cfg.Expired = func(string) {}
	}
	return &Heartbeater{cfg: cfg, timers: map[string]Timer{}, gen: map[string]uint64{}, pending: map[string]time.Time{}}
}

// Initialize enables the Heartbeater and arms a FailoverTTL timer for each
// node (the ones not down), replacing any timers from an earlier term; a
// node that Reset saw while disabled keeps the earlier deadline Reset gave
// it.
func (h *Heartbeater) Initialize(nodeIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopAllLocked()
	h.enabled = true
	now := h.cfg.Clock.Now()
	for _, id := range nodeIDs {
		d := h.cfg.FailoverTTL
		if dl, ok := h.pending[id]; ok && dl.Sub(now) < d {
			d = max(dl.Sub(now), 0)
		}
		h.armLocked(id, d)
	}
	clear(h.pending)
}

// Disable stops every timer; used when leadership is lost.
func (h *Heartbeater) Disable() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = false
	h.stopAllLocked()
	clear(h.pending)
}

// TTL returns the heartbeat TTL for a cluster of n nodes, with stagger:
// base = max(MinTTL, n / MaxPerSecond), TTL in [base, 2*base).
func (h *Heartbeater) TTL(n int) time.Duration {
	base := time.Duration(float64(n) / h.cfg.MaxPerSecond * float64(time.Second))
	if base < h.cfg.MinTTL {
		base = h.cfg.MinTTL
	}
	return base + time.Duration(h.cfg.Rand()*float64(base))
}

// Reset records a heartbeat from nodeID and returns the TTL the client
// must heartbeat within. When disabled (not leader) it returns the TTL
// without arming a timer.
func (h *Heartbeater) Reset(nodeID string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.timers)
	if _, ok := h.timers[nodeID]; !ok {
		n++
	}
	ttl := h.TTL(n)
	if h.enabled {
		h.armLocked(nodeID, ttl+h.cfg.Grace)
	} else {
		h.pending[nodeID] = h.cfg.Clock.Now().Add(ttl + h.cfg.Grace)
	}
	return ttl
}

// Extend arms nodeID's timer with FailoverTTL, as after a leader change;
// the leader calls it for a node whose timer fired while the leader could
// not reach the other servers (the fault was on its side, not the node's).
// No-op when disabled, or when the node heartbeated since its timer fired.
func (h *Heartbeater) Extend(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	if _, ok := h.timers[nodeID]; ok {
		return
	}
	h.armLocked(nodeID, h.cfg.FailoverTTL)
}

// Alive reports whether nodeID has a live timer: it heartbeated since its
// last timer fired (or was never found missing).
func (h *Heartbeater) Alive(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.timers[nodeID]
	return ok
}

// Clear stops tracking a node (deregistered or marked down).
func (h *Heartbeater) Clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
		delete(h.gen, nodeID)
	}
}

// Tracked returns how many nodes have live timers.
func (h *Heartbeater) Tracked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

// armLocked replaces the node's timer. A generation number makes a timer
// that fires after being replaced (Stop lost the race) a no-op.
func (h *Heartbeater) armLocked(nodeID string, d time.Duration) {
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
	}
	h.nextGen++
	gen := h.nextGen
	h.gen[nodeID] = gen
	h.timers[nodeID] = h.cfg.Clock.AfterFunc(d, func() { h.fire(nodeID, gen) })
}

func (h *Heartbeater) fire(nodeID string, gen uint64) {
	h.mu.Lock()
	if !h.enabled || h.gen[nodeID] != gen {
		h.mu.Unlock()
		return
	}
	delete(h.timers, nodeID)
	delete(h.gen, nodeID)
	h.mu.Unlock()
	h.cfg.Expired(nodeID)
}

func (h *Heartbeater) stopAllLocked() {
	for id, t := range h.timers {
		t.Stop()
		delete(h.timers, id)
	}
	clear(h.gen)
}

// Tracking reports whether nodeID has a live timer: the node heartbeated
// (or was armed at a leader change) and has not been marked down since.
func (h *Heartbeater) Tracking(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.timers[nodeID]
	return ok
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
)

// Sim runs many simulated client nodes. Create it with New, start it
// with Start, stop it with Stop.
type Sim struct {
	cfg    *Config
	logger hclog.Logger
	clock  clock.Clock

	clients    []*muxTransport // owned; closed by Stop
	transports []Transport
	nodes      []*simNode
	updates    *updateBatcher
	services   *serviceBatcher
	groups     *groupCache

	regSem chan struct{} // bounds registrations in flight
	hbSem  chan struct{} // bounds heartbeats in flight

	shutdownCh chan struct{}
	stopOnce   sync.Once
	startOnce  sync.Once
	started    atomic.Bool // Start ran: the batcher's done will close

	// trackMu orders goroutine starts against Stop, so that wg.Add never
	// races wg.Wait.
	trackMu sync.Mutex
	stopped bool // guarded by trackMu
	wg      sync.WaitGroup

	// registeredOnce counts nodes registered at least once; allRegistered
	// is closed when every node has.
	registeredOnce atomic.Int64
	allRegistered  chan struct{}

	counters counters
}

// counters are the Sim's running totals and gauges.
type counters struct {
	registered       atomic.Int64 // nodes registered now
	registrations    atomic.Uint64
	registerFailed   atomic.Uint64
	heartbeats       atomic.Uint64
	heartbeatsFailed atomic.Uint64
	watchErrors      atomic.Uint64
	watchAnswers     atomic.Uint64 // Node.GetClientAllocs answers read
	fetches          atomic.Uint64 // Alloc.GetAllocs calls made
	allocsPending    atomic.Int64  // seen, not yet reported running
	allocsRunning    atomic.Int64
	allocsComplete   atomic.Uint64
	allocsFailed     atomic.Uint64
	allocsStopped    atomic.Uint64
	updatesSent      atomic.Uint64 // allocation updates delivered
	updateRPCs       atomic.Uint64
	updatesFailed    atomic.Uint64 // RPCs that failed (updates requeued)
	// Native service registrations (services.go).
	servicesRegistered atomic.Uint64
	servicesFailed     atomic.Uint64 // Upsert calls that failed
}

// Stats is a snapshot of what the Sim has done.
type Stats struct {
	Nodes int
	// Registered is how many nodes are registered now; Registrations
	// counts every successful Node.Register (re-registrations too).
	Registered     int
	Registrations  uint64
	RegisterFailed uint64
	// Heartbeats counts successful Node.UpdateStatus calls.
	Heartbeats       uint64
	HeartbeatsFailed uint64
	WatchErrors      uint64
	// WatchAnswers counts Node.GetClientAllocs answers read; Fetches the
	// Alloc.GetAllocs calls made for what the answers did not carry.
	WatchAnswers uint64
	Fetches      uint64
	// AllocsPending and AllocsRunning are gauges; the rest are totals.
	AllocsPending  int64
	AllocsRunning  int64
	AllocsComplete uint64
	AllocsFailed   uint64
	AllocsStopped  uint64
	// UpdatesSent counts allocation updates delivered, in UpdateRPCs
	// Node.UpdateAlloc calls; UpdatesFailed counts failed calls.
	UpdatesSent   uint64
	UpdateRPCs    uint64
	UpdatesFailed uint64
	// ServicesRegistered counts native service registrations delivered;
	// ServicesFailed the ServiceRegistration.Upsert calls that failed.
	ServicesRegistered uint64
	ServicesFailed     uint64
}

// String is the one-line status `drover sim` prints.
func (s Stats) String() string {
	out := fmt.Sprintf("nodes %d/%d registered, heartbeats %d (%d failed), allocs pending %d running %d complete %d failed %d stopped %d, updates %d in %d RPCs (%d failed), watch answers %d, fetches %d, watch errors %d",
		s.Registered, s.Nodes, s.Heartbeats, s.HeartbeatsFailed,
		s.AllocsPending, s.AllocsRunning, s.AllocsComplete, s.AllocsFailed, s.AllocsStopped,
		s.UpdatesSent, s.UpdateRPCs, s.UpdatesFailed, s.WatchAnswers, s.Fetches, s.WatchErrors)
	if s.ServicesRegistered+s.ServicesFailed > 0 {
		out += fmt.Sprintf(", services registered %d (%d calls failed)", s.ServicesRegistered, s.ServicesFailed)
	}
	return out
}

// New validates cfg and builds the nodes; nothing is sent until Start.
func New(cfg *Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Sim{
		cfg:           cfg,
		logger:        cfg.Logger.Named("sim"),
		clock:         cfg.Clock,
		groups:        newGroupCache(),
		regSem:        make(chan struct{}, cfg.RegisterConcurrency),
		hbSem:         make(chan struct{}, cfg.HeartbeatWorkers),
		shutdownCh:    make(chan struct{}),
		allRegistered: make(chan struct{}),
	}
	s.transports = cfg.Transports
	if len(s.transports) == 0 {
		for range cfg.Sessions {
			c := newMuxTransport()
			if cfg.Target == TargetNomad {
				c = newNomadMuxTransport()
			}
			c.tls = cfg.TLS
			s.clients = append(s.clients, c)
			s.transports = append(s.transports, c)
		}
	}
	if cfg.Target == TargetNomad {
		wrapped := make([]Transport, len(s.transports))
		for i, tr := range s.transports {
			wrapped[i] = &nomadTransport{inner: tr}
		}
		s.transports = wrapped
		s.groups.decode = decodeNomadJob
	}
	now := s.clock.Now()
	s.nodes = make([]*simNode, cfg.Nodes)
	for i := range s.nodes {
		s.nodes[i] = newSimNode(s, i, cfg.buildNode(i, now))
	}
	s.updates = newUpdateBatcher(s)
	s.services = newServiceBatcher(s)
	return s, nil
}

// Start registers every node (RegisterConcurrency at a time) and starts
// the update batcher; each node heartbeats and watches its allocations
// from its first registration on. It returns at once.
func (s *Sim) Start() {
	s.startOnce.Do(func() {
		s.logger.Info("starting simulated nodes", "nodes", len(s.nodes), "servers", s.cfg.Servers,
			"sessions", len(s.transports), "id_prefix", s.cfg.IDPrefix)
		s.started.Store(true)
		if !s.goTracked(s.updates.run) {
			close(s.updates.done)
			close(s.services.done)
			return
		}
		if !s.goTracked(s.services.run) {
			close(s.services.done)
			return
		}
		next := make(chan *simNode)
		s.goTracked(func() {
			defer close(next)
			for _, n := range s.nodes {
				select {
				case next <- n:
				case <-s.shutdownCh:
					return
				}
			}
		})
		for range s.cfg.RegisterConcurrency {
			s.goTracked(func() {
				for n := range next {
					n.start()
				}
			})
		}
	})
}

// WaitRegistered blocks until every node has registered once, ctx ends,
// or the Sim stops.
func (s *Sim) WaitRegistered(ctx context.Context) error {
	select {
	case <-s.allRegistered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.shutdownCh:
		return structs.ErrShutdown
	}
}

// Stop ends every loop, sends the pending allocation updates once more
// (best effort), and closes the connections. It is idempotent; nodes are
// left registered (the servers mark them down when their TTLs run out).
func (s *Sim) Stop() {
	s.stopOnce.Do(func() {
		s.logger.Info("stopping simulated nodes")
		close(s.shutdownCh)
		for _, n := range s.nodes {
			n.stopTimers()
		}
		// The batcher's last flush still has the connections.
		s.updates.wait()
		s.services.wait()
		s.trackMu.Lock()
		s.stopped = true
		s.trackMu.Unlock()
		for _, c := range s.clients {
			c.Close() // ends the blocked watches
		}
		s.wg.Wait()
	})
}

// Stats returns a snapshot of the counters.
func (s *Sim) Stats() Stats {
	c := &s.counters
	return Stats{
		Nodes:              len(s.nodes),
		Registered:         int(c.registered.Load()),
		Registrations:      c.registrations.Load(),
		RegisterFailed:     c.registerFailed.Load(),
		Heartbeats:         c.heartbeats.Load(),
		HeartbeatsFailed:   c.heartbeatsFailed.Load(),
		WatchErrors:        c.watchErrors.Load(),
		WatchAnswers:       c.watchAnswers.Load(),
		Fetches:            c.fetches.Load(),
		AllocsPending:      c.allocsPending.Load(),
		AllocsRunning:      c.allocsRunning.Load(),
		AllocsComplete:     c.allocsComplete.Load(),
		AllocsFailed:       c.allocsFailed.Load(),
		AllocsStopped:      c.allocsStopped.Load(),
		UpdatesSent:        c.updatesSent.Load(),
		UpdateRPCs:         c.updateRPCs.Load(),
		UpdatesFailed:      c.updatesFailed.Load(),
		ServicesRegistered: c.servicesRegistered.Load(),
		ServicesFailed:     c.servicesFailed.Load(),
	}
}

// NodeIDs returns the simulated nodes' IDs in index order.
func (s *Sim) NodeIDs() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.node.ID
	}
	return out
}

// stopping reports whether Stop has begun.
func (s *Sim) stopping() bool {
	select {
	case <-s.shutdownCh:
		return true
	default:
		return false
	}
}

// goTracked runs f on a goroutine Stop waits for; after Stop it does
// nothing and returns false.
func (s *Sim) goTracked(f func()) bool {
	if !s.enter() {
		return false
	}
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// enter registers the calling goroutine with Stop's wait group; the
// caller must call s.wg.Done when enter returned true. Timer callbacks use
// it so Stop waits for those in flight.
func (s *Sim) enter() bool {
	s.trackMu.Lock()
	defer s.trackMu.Unlock()
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	return true
}

// sleep waits for d or shutdown; it returns false on shutdown.
func (s *Sim) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.shutdownCh:
		return false
	}
}

// acquire takes a slot of sem, or returns false on shutdown.
func (s *Sim) acquire(sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-s.shutdownCh:
		return false
	}
}

// nodeRegisteredOnce counts a node's first registration.
func (s *Sim) nodeRegisteredOnce() {
	if s.registeredOnce.Add(1) == int64(len(s.nodes)) {
		close(s.allRegistered)
		s.logger.Info("every node registered", "nodes", len(s.nodes))
	}
}

// failoverErr reports whether another server might succeed where this
// one failed: transport failures (any error that is not a typed answer)
// and answers saying there is no usable leader or the server is going
// away.
func failoverErr(err error) bool {
	var typed *structs.Error
	var invalid *structs.ValidationError
	if !errors.As(err, &typed) && !errors.As(err, &invalid) {
		return true
	}
	return errors.Is(err, structs.ErrNoLeader) || errors.Is(err, structs.ErrNotLeader) ||
		errors.Is(err, structs.ErrShutdown)
}

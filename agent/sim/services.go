package sim

import (
	"sync"
	"time"

	"github.com/drover-project/drover/structs"
)

// serviceBatcher registers the native services of simulated allocations,
// as client agents do when a task runs: every UpdateInterval, one
// ServiceRegistration.Upsert per node for what started on it since the
// last flush (a node may register only its own allocations' services, so
// calls cannot span nodes), at most serviceWorkers at once. The servers
// drop registrations themselves when an allocation stops or its node goes
// down, so the simulator never deregisters. A failed call is counted and
// its registrations queued again.
type serviceBatcher struct {
	s    *Sim
	done chan struct{} // closed when run returns

	mu      sync.Mutex
	pending map[*simNode][]*structs.ServiceRegistration // guarded by mu
}

// serviceWorkers bounds the Upsert calls in flight.
const serviceWorkers = 32

func newServiceBatcher(s *Sim) *serviceBatcher {
	return &serviceBatcher{s: s, pending: map[*simNode][]*structs.ServiceRegistration{}, done: make(chan struct{})}
}

// addLocked queues the registrations of a running allocation's services
// on n (n.mu held by the caller; the batcher's own lock is taken).
func (b *serviceBatcher) addLocked(n *simNode, sa *simAlloc) {
	g := sa.group
	regs := make([]*structs.ServiceRegistration, 0, len(g.services))
	for _, svc := range g.services {
		regs = append(regs, &structs.ServiceRegistration{
			ID:          structs.ServiceRegistrationID(sa.id, "", g.name, svc, ""),
			ServiceName: svc, Namespace: g.namespace, NodeID: n.node.ID, Datacenter: n.node.Datacenter,
			JobID: g.jobID, AllocID: sa.id, Address: "127.0.0.1",
		})
	}
	b.mu.Lock()
	b.pending[n] = append(b.pending[n], regs...)
	b.mu.Unlock()
}

// run flushes every UpdateInterval until the Sim stops.
func (b *serviceBatcher) run() {
	defer close(b.done)
	t := time.NewTicker(b.s.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.s.shutdownCh:
			return
		}
	}
}

// wait returns once run has returned (or was never started).
func (b *serviceBatcher) wait() {
	if b.s.started.Load() {
		<-b.done
	}
}

// flush sends what is pending, one call per node.
func (b *serviceBatcher) flush() {
	b.mu.Lock()
	batch := b.pending
	b.pending = map[*simNode][]*structs.ServiceRegistration{}
	b.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	sem := make(chan struct{}, serviceWorkers)
	var wg sync.WaitGroup
	for n, regs := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			b.send(n, regs)
		}()
	}
	wg.Wait()
}

// send registers regs, all of node n's, with its secret.
func (b *serviceBatcher) send(n *simNode, regs []*structs.ServiceRegistration) {
	req := &structs.ServiceRegistrationUpsertRequest{Services: regs,
		WriteRequest: structs.WriteRequest{Region: b.s.cfg.Region, AuthToken: n.node.SecretID}}
	var resp structs.GenericResponse
	if err := n.rpc("ServiceRegistration.Upsert", req, &resp); err != nil {
		b.s.counters.servicesFailed.Add(1)
		b.s.logger.Warn("registering services failed; will retry", "node", n.node.ID, "error", err, "count", len(regs))
		b.mu.Lock()
		b.pending[n] = append(b.pending[n], regs...)
		b.mu.Unlock()
		return
	}
	b.s.counters.servicesRegistered.Add(uint64(len(regs)))
}

package server

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/backoff"
)

// barrierTimeout bounds the Raft barrier run on gaining leadership.
const barrierTimeout = time.Minute

// monitorLeadership reacts to Raft leadership changes: on gaining
// leadership it starts leaderLoop; on losing it, it stops the loop, which
// revokes everything the loop established.
func (s *Server) monitorLeadership() {
	defer s.wg.Done()
	var (
		stopCh chan struct{}
		doneCh chan struct{}
	)
	stop := func() {
		if stopCh == nil {
			return
		}
		close(stopCh)
		<-doneCh
		stopCh, doneCh = nil, nil
	}
	for {
		select {
		case isLeader := <-s.leaderNotifyCh:
			if isLeader {
				if stopCh != nil {
					continue
				}
				s.logger.Info("cluster leadership acquired")
				stopCh, doneCh = make(chan struct{}), make(chan struct{})
				go s.leaderLoop(stopCh, doneCh)
			} else {
				if stopCh == nil {
					continue
				}
				s.logger.Info("cluster leadership lost")
				stop()
			}
		case <-s.shutdownCh:
			stop()
			return
		}
	}
}

// leaderLoop runs while this server is the leader: it waits for a barrier
// (so local state has every committed entry), establishes the leader
// hooks, then reconciles cluster membership until stopCh closes.
func (s *Server) leaderLoop(stopCh, doneCh chan struct{}) {
	defer close(doneCh)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
		case <-s.shutdownCh:
		}
		cancel()
	}()

	b := backoff.New(50*time.Millisecond, 5*time.Second)
	var established []LeaderHook
	defer s.leaderReady.Store(false)
	for {
		start := time.Now()
		err := s.waitFuture(s.raft.Barrier(barrierTimeout))
		measureSince(metricLeaderBarrier, start)
		if err == nil {
			s.leaderReady.Store(true)
			s.leaderChange.notify() // requests waiting here may be served now
			established, err = s.establishLeadership()
			if err == nil {
				break
			}
			s.revokeLeadership(established)
			established = nil
		}
		s.logger.Error("failed to establish leadership; retrying", "error", err)
		if b.Wait(ctx) != nil {
			return
		}
	}
	s.leaderEstablished.Store(true)
	s.leaderChange.notify() // dequeues waiting for the broker may go on
	defer func() {
		s.leaderReady.Store(false)
		s.leaderEstablished.Store(false)
		s.revokeLeadership(established)
	}()

	ticker := time.NewTicker(s.config.RetryInterval)
	defer ticker.Stop()
	for {
		s.reconcileMembers()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-s.reconcileCh:
		case done := <-s.restoredCh:
			// The state was replaced by an operator snapshot: leader
			// components rebuild from it (pending evals, blocked evals,
			// heartbeat timers), and every job is evaluated again.
			s.logger.Info("restarting leader components after a snapshot restore")
			s.revokeLeadership(established)
			established = nil
			if err := s.waitFuture(s.raft.Barrier(barrierTimeout)); err != nil {
				s.logger.Error("barrier after snapshot restore failed", "error", err)
			}
			var err error
			if established, err = s.establishLeadership(); err != nil {
				s.logger.Error("re-establishing leadership after snapshot restore failed; stepping down", "error", err)
				s.revokeLeadership(established)
				established = nil
				_ = s.raft.LeadershipTransfer()
			} else if err := s.reevaluateRestored(); err != nil {
				s.logger.Error("re-evaluating jobs after snapshot restore failed", "error", err)
			}
			close(done)
		}
	}
}

// triggerReconcile asks the leader loop to reconcile membership now.
func (s *Server) triggerReconcile() {
	select {
	case s.reconcileCh <- struct{}{}:
	default:
	}
}

// establishLeadership runs every LeaderHook in order. On error it returns
// the hooks established so far so the caller can revoke them.
//
// The server's own leader components (plan applier, eval broker and
// blocked evals, heartbeat timers, worker pausing) come first, then
// Config.LeaderHooks.
func (s *Server) establishLeadership() ([]LeaderHook, error) {
	var done []LeaderHook
	for _, h := range s.leaderHooks {
		if err := h.Establish(s); err != nil {
			s.logger.Error("leader hook failed", "hook", h.Name(), "error", err)
			return done, err
		}
		done = append(done, h)
	}
	return done, nil
}

// revokeLeadership revokes hooks in reverse order.
func (s *Server) revokeLeadership(hooks []LeaderHook) {
	for i := len(hooks) - 1; i >= 0; i-- {
		if err := hooks[i].Revoke(s); err != nil {
			s.logger.Error("leader hook revoke failed", "hook", hooks[i].Name(), "error", err)
		}
	}
}

// reconcileMembers adds every alive known server that is missing from the
// Raft configuration as a voter. A server answering at an address that the
// configuration holds under another ID (a wiped server) replaces that entry.
func (s *Server) reconcileMembers() {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		s.logger.Warn("failed to read raft configuration", "error", err)
		return
	}
	conf := f.Configuration()
	for _, m := range s.members.snapshot(time.Now(), s.aliveWindow()) {
		if m.Status != MemberStatusAlive {
			continue
		}
		present := false
		for _, srv := range conf.Servers {
			if string(srv.ID) == m.ID && string(srv.Address) == m.RPCAddr {
				present = true
			}
		}
		if present {
			continue
		}
		for _, srv := range conf.Servers {
			if string(srv.Address) == m.RPCAddr && string(srv.ID) != m.ID {
				s.logger.Info("removing stale raft peer at a reused address", "peer_id", srv.ID, "addr", srv.Address)
				if err := s.waitFuture(s.raft.RemoveServer(srv.ID, 0, 0)); err != nil {
					s.logger.Error("failed to remove stale raft peer", "peer_id", srv.ID, "error", err)
					return
				}
			}
		}
		s.logger.Info("adding server to raft", "peer_id", m.ID, "name", m.Name, "addr", m.RPCAddr)
		if err := s.waitFuture(s.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.RPCAddr), 0, 0)); err != nil {
			s.logger.Error("failed to add raft peer", "peer_id", m.ID, "error", err)
		}
	}
}

// leaderVerifier batches raft.VerifyLeader: a consistent read waits for
// the next verification round that starts after it arrives, so concurrent
// reads share one round of heartbeats.
type leaderVerifier struct {
	verify func() error

	mu      sync.Mutex
	running bool         // guarded by mu
	next    *verifyRound // round queued behind the running one; guarded by mu
}

type verifyRound struct {
	done chan struct{}
	err  error
}

// Verify returns nil if this server was the leader at some moment after
// the call began.
func (v *leaderVerifier) Verify() error {
	v.mu.Lock()
	if !v.running {
		v.running = true
		r := &verifyRound{done: make(chan struct{})}
		v.mu.Unlock()
		go v.run(r)
		<-r.done
		return r.err
	}
	if v.next == nil {
		v.next = &verifyRound{done: make(chan struct{})}
	}
	r := v.next
	v.mu.Unlock()
	<-r.done
	return r.err
}

// run executes rounds until none is queued.
func (v *leaderVerifier) run(r *verifyRound) {
	for r != nil {
		r.err = v.verify()
		close(r.done)
		v.mu.Lock()
		r, v.next = v.next, nil
		if r == nil {
			v.running = false
		}
		v.mu.Unlock()
	}
}

// verifyLeader is the verifier's round: one raft.VerifyLeader.
func (s *Server) verifyLeader() error {
	defer measureSince(metricVerifyLeader, time.Now())
	if err := s.waitFuture(s.raft.VerifyLeader()); err != nil {
		return err
	}
	return nil
}

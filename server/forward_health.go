package server

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/drover-project/drover/structs"
)

// Forwards follow the leader. A server forwards writes and consistent
// reads to the leader Raft names; a leader that is paused (SIGSTOP) or cut
// off keeps that name on its followers until they elect another, and a
// forward sent to it would wait for it to come back. So forwards run
// under a leader epoch: a context that lives while this server hears from
// that leader over Raft (a heartbeat within raft's heartbeat timeout, the
// silence after which a follower starts an election). When the leader
// falls silent or is replaced, the epoch ends: forwards in flight are
// abandoned (pool.AbandonedError) and no new one is sent until a leader
// answers again. The deadline follows the leader's liveness, not the
// request's duration, so a blocking query that legitimately waits minutes
// on a live leader is never cut short.

// leaderEpoch is the forwarding context of one leader.
type leaderEpoch struct {
	addr   string
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// leaderSilentError is the cause of an epoch that ended.
type leaderSilentError struct {
	addr   string
	reason string
}

func (e *leaderSilentError) Error() string {
	return "leader " + e.addr + " " + e.reason
}

// forwardEpoch returns the epoch of the leader to forward to, or nil when
// no leader is known to answer.
func (s *Server) forwardEpoch() *leaderEpoch {
	if ep := s.leaderEpoch.Load(); ep != nil && ep.ctx.Err() == nil && ep.addr == s.Leader() {
		return ep
	}
	return s.checkLeaderHealth(time.Now())
}

// checkLeaderHealth ends the current epoch if its leader is no longer the
// one Raft names or has been silent for a heartbeat timeout, starts one
// for a leader that answers, and returns the current epoch (nil: none).
func (s *Server) checkLeaderHealth(now time.Time) *leaderEpoch {
	leader := s.Leader()
	var reason string
	switch {
	case leader == "" || leader == s.rpcAddr || s.IsLeader():
		reason = "is no longer the leader"
	default:
		if silent := now.Sub(s.raft.LastContact()); silent >= s.leaderSilence {
			reason = fmt.Sprintf("has not been heard from over Raft for %v", silent.Round(time.Millisecond))
		}
	}
	ep := s.leaderEpoch.Load()
	if ep != nil && (ep.addr != leader || reason != "") {
		if s.leaderEpoch.CompareAndSwap(ep, nil) {
			why := reason
			if ep.addr != leader {
				why = "is no longer the leader"
			}
			ep.cancel(&leaderSilentError{addr: ep.addr, reason: why})
		}
		ep = nil
	}
	if ep != nil || reason != "" {
		return ep
	}
	ctx, cancel := context.WithCancelCause(s.shutdownCtx)
	ep = &leaderEpoch{addr: leader, ctx: ctx, cancel: cancel}
	if !s.leaderEpoch.CompareAndSwap(nil, ep) {
		cancel(nil)
		return s.leaderEpoch.Load()
	}
	return ep
}

// watchLeaderHealth checks the leader's liveness four times per heartbeat
// timeout until shutdown.
func (s *Server) watchLeaderHealth() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.leaderSilence/4, 5*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.checkLeaderHealth(now)
		case <-s.shutdownCh:
			if ep := s.leaderEpoch.Swap(nil); ep != nil {
				ep.cancel(structs.ErrShutdown)
			}
			return
		}
	}
}

// resendSafe reports whether a write whose first attempt may have been
// applied can be sent again without the risk of being applied twice:
//   - a job register with a check index (EnforceIndex): applied once, it
//     moves the job's modify index, so a second one fails its check
//     (answered as outcome unknown by resentAnswer);
//   - a node's heartbeat (Node.UpdateStatus) and registration
//     (Node.Register): they set the node to what it says it is.
func resendSafe(method string, args any) bool {
	switch method {
	case "Job.Register":
		req, ok := args.(*structs.JobRegisterRequest)
		return ok && req.EnforceIndex
	case "Node.UpdateStatus", "Node.Register":
		return true
	}
	return false
}

// resentAnswer is the answer to a write sent again after an attempt of
// unknown outcome (see resendSafe), when the resent one failed: a failed
// check index may be the first attempt's own doing.
func resentAnswer(method, addr string, err error) error {
	if structs.CodeOf(err) == structs.ErrCodeConflict {
		return outcomeUnknown(method, addr, fmt.Errorf("sent again, its check index no longer matched, perhaps because the first attempt was applied: %w", err))
	}
	return err
}

// serveResent serves on this server, now the leader, a write it had sent
// to the previous leader without an answer. The caller's rights were
// checked when the request arrived; it runs as an in-process call.
func (s *Server) serveResent(method string, args, reply any) error {
	m := s.methods[method]
	zeroReply(reply)
	out := m.fn.Call([]reflect.Value{reflect.ValueOf(args), reflect.ValueOf(reply)})
	if err, _ := out[0].Interface().(error); err != nil {
		return resentAnswer(method, s.rpcAddr, err)
	}
	return nil
}

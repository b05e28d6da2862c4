package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Backoff while waiting for a leader to be known.
const (
	leaderWaitBase  = 50 * time.Millisecond
	leaderWaitLimit = time.Second
)

// endpoints are the RPC receivers, by registered name. Every exported
// method of each has the net/rpc shape func(*Args, *Reply) error. inproc
// tells the receivers their arguments belong to an in-process caller (and
// must be copied before the server keeps or changes them); arguments
// decoded from the wire are private to the call.
func (s *Server) endpoints(inproc bool) map[string]any {
	return map[string]any{
		"Status":    &Status{srv: s},
		"Job":       &Job{srv: s, inproc: inproc},
		"Node":      &Node{srv: s},
		"Eval":      &Eval{srv: s},
		"Plan":      &Plan{srv: s, inproc: inproc},
		"Alloc":     &Alloc{srv: s},
		"System":    &System{srv: s},
		"Operator":  &Operator{srv: s},
		"ACL":       &ACL{srv: s},
		"Variables": &Variables{srv: s},
		"Keyring":   &Keyring{srv: s},
		// Native service discovery (service_endpoint.go).
		"ServiceRegistration": &ServiceRegistration{srv: s},
		"Scaling":             &Scaling{srv: s},
		"NodePool":            &NodePool{srv: s},
		"Deployment":          &Deployment{srv: s},
	}
}

// setupRPC builds the method tables of remote calls (rpc_serve.go) and
// of in-process ones.
func (s *Server) setupRPC() error {
	var err error
	if s.remoteMethods, err = rpcMethods(s.endpoints(false)); err != nil {
		return err
	}
	if s.methods, err = rpcMethods(s.endpoints(true)); err != nil {
		return err
	}
	for name, m := range s.remoteMethods {
		m.access = rpcAccessTable[name]
	}
	if err := checkACLRules(s.methods); err != nil {
		return err
	}
	s.aclOn = s.config.ACLEnabled
	s.rpcWorkers = &rpcWorkers{}
	return nil
}

// RPC makes an in-process call with exactly the routing of a remote one:
// writes and consistent reads are forwarded to the leader, reads block on
// MinQueryIndex, and errors are typed (*structs.Error, or the endpoint's
// *structs.ValidationError when the call was served by this server; a
// validation error that crossed a forward is a *structs.Error with code
// invalid and the field messages joined by "; ").
//
// args is copied (shallowly) before the call, so the caller's request is
// not marked forwarded; objects it points to must not be modified until RPC
// returns and are owned by the server afterwards. Objects in reply may be
// shared with the state store: copy before modifying.
func (s *Server) RPC(method string, args, reply any) error {
	m, ok := s.methods[method]
	if !ok {
		return structs.NewError(structs.ErrCodeUnsupported, "unknown RPC method %q", method)
	}
	av, rv := reflect.ValueOf(args), reflect.ValueOf(reply)
	if av.Type() != reflect.PointerTo(m.argType) || rv.Type() != reflect.PointerTo(m.replyType) || av.IsNil() || rv.IsNil() {
		return structs.NewError(structs.ErrCodeInvalid, "RPC %s takes (*%s, *%s), got (%T, %T)",
			method, m.argType, m.replyType, args, reply)
	}
	argsCopy := reflect.New(m.argType)
	argsCopy.Elem().Set(av.Elem())
	if !s.aclOn {
		return s.callEndpoint(m, argsCopy, rv)
	}
	return s.callWithACL(method, m, argsCopy, rv)
}

// callWithACL runs a call under its ACL rule (rpc_acl.go): the rule
// first, the method, then the reply filter. Both dispatchers use it.
func (s *Server) callWithACL(method string, m *rpcMethod, args, reply reflect.Value) error {
	a, err := s.authorizeRPC(method, args.Interface())
	if err != nil {
		return err
	}
	if err := s.callEndpoint(m, args, reply); err != nil {
		return err
	}
	return filterRPCReply(method, a, reply.Interface())
}

// forward routes a request. It returns handled=true when the request was
// answered elsewhere (or failed routing), with err the final result; with
// handled=false the caller serves the request locally.
//
//   - Stale reads are served by any server.
//   - Writes and consistent reads go to the leader. The leader serves them
//     once its post-election barrier is done (its state holds every
//     committed entry), and verifies its leadership (batched) before serving
//     a consistent read; a leader that finds itself deposed answers a
//     forwarded read structs.ErrNotLeader and sends its own reads on to the
//     new leader. A write's refusal from local state is verified the same
//     way after the endpoint decided it (callEndpoint, leader_check.go).
//   - A request already forwarded once is never forwarded again: a server
//     that receives one but is not the leader answers structs.ErrNotLeader,
//     which the forwarding server retries against the new leader.
//   - A forward runs only while the leader answers this server's Raft
//     (forward_health.go): one that stops answering (paused, partitioned)
//     or is replaced has its forwards abandoned, and none are sent to it.
//     The request is then sent to the next leader when that is safe
//     (retryForward): it was never sent, the old leader refused it, or it
//     is a read or an idempotent write. A write that was sent and may have
//     been applied fails with structs.ErrCodeOutcomeUnknown instead.
//   - While no leader is known (or the leader is not ready, or does not
//     answer), the request waits (backoff from 50 ms to 1 s) up to
//     Config.NoLeaderTimeout, then fails with structs.ErrNoLeader.
func (s *Server) forward(method string, info structs.RPCInfo, args, reply any) (handled bool, err error) {
	if info.IsRead() && info.AllowStaleRead() {
		return false, nil
	}

	// Read once: forwardTo marks the request before a retry comes round.
	forwarded := info.IsForwarded()
	// The wait for a leader ends at deadline; a failed forward restarts it.
	deadline := time.Now().Add(s.config.NoLeaderTimeout)
	b := backoff.New(leaderWaitBase, leaderWaitLimit)
	var lastErr error // the last forward that failed, for the final error
	resent := false   // a write of unknown outcome was sent again
	for {
		changed := s.leaderChange.wait()
		switch {
		case s.IsLeader():
			if s.leaderReady.Load() {
				if resent {
					return true, s.serveResent(method, args, reply)
				}
				if !info.IsRead() {
					return false, nil
				}
				err := s.verifier.Verify()
				if err == nil {
					return false, nil
				}
				if forwarded || errors.Is(err, structs.ErrShutdown) {
					return true, err
				}
				// Deposed: once Raft has stepped down, the read
				// goes to the new leader.
				lastErr = err
				break
			}
			// Elected, but the barrier has not yet applied every
			// committed entry: wait.
		case forwarded:
			return true, structs.ErrNotLeader
		default:
			ep := s.forwardEpoch()
			if ep == nil {
				break // no leader answers: wait for one
			}
			err := s.forwardTo(ep, method, info, args, reply)
			retry, unknown := retryForward(err, info.IsRead())
			if unknown {
				if !resendSafe(method, args) {
					return true, outcomeUnknown(method, ep.addr, err)
				}
				resent = true
				retry = true
			}
			if resent && err != nil && !retry {
				return true, resentAnswer(method, ep.addr, err)
			}
			if !retry {
				return true, err
			}
			lastErr = err
			// The failed attempt may have half decoded an answer into
			// reply; whoever serves the request next (maybe this
			// server, once it leads) starts from a zero reply.
			zeroReply(reply)
			s.logger.Debug("forward to leader failed; retrying", "method", method, "leader", ep.addr, "error", err)
			// The wait for the next leader starts now.
			deadline = time.Now().Add(s.config.NoLeaderTimeout)
		}
		if s.waitLeaderUntil(deadline, b, changed) != nil {
			if s.isShutdown() {
				return true, structs.ErrShutdown
			}
			if cause := s.disk.full(); cause != nil {
				return true, diskFullError(cause)
			}
			if resent {
				return true, outcomeUnknown(method, "", lastErr)
			}
			return true, noLeaderError(s.config.NoLeaderTimeout, lastErr)
		}
	}
}

// noLeaderError is the error of a request that found no leader to serve
// it: structs.ErrNoLeader, saying why when a forward failed.
func noLeaderError(waited time.Duration, lastErr error) error {
	if lastErr == nil {
		return structs.ErrNoLeader
	}
	return structs.NewError(structs.ErrCodeNoLeader, "%s: no leader answered within %v; the last forward failed: %v",
		structs.ErrNoLeader.Message, waited, lastErr)
}

// outcomeUnknown is the error of a write sent to a leader that did not
// answer (addr "" when the leader is no longer known).
func outcomeUnknown(method, addr string, err error) error {
	to := "the leader"
	if addr != "" {
		to = "the leader at " + addr
	}
	return structs.NewError(structs.ErrCodeOutcomeUnknown,
		"%s was sent to %s, which stopped answering (%v); the write may or may not have been applied: "+
			"read it back before repeating it (repeating it is safe only if it is idempotent, e.g. a job register with a check index)",
		method, to, err)
}

// zeroReply resets the value reply points at.
func zeroReply(reply any) {
	if rv := reflect.ValueOf(reply); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
}

// forwardTo sends the request to the leader of ep; the call is abandoned
// when ep ends (the leader stopped answering or was replaced).
func (s *Server) forwardTo(ep *leaderEpoch, method string, info structs.RPCInfo, args, reply any) error {
	defer measureSince(metricForward, time.Now())
	info.SetForwarded()
	if method == methodTransferLeadership {
		// Its leader is replaced by design before it answers: wait for
		// the answer, bounded, rather than for the epoch.
		ctx, cancel := context.WithTimeout(context.Background(), transferForwardTimeout)
		defer cancel()
		return s.pool.RPCContext(ctx, ep.addr, method, args, reply)
	}
	return s.pool.RPCContext(ep.ctx, ep.addr, method, args, reply)
}

// methodTransferLeadership is the one forwarded call whose answer comes
// after the leader it was sent to has stepped down.
const methodTransferLeadership = "Operator.TransferLeadership"

// transferForwardTimeout bounds a forwarded leadership transfer (Raft
// gives the target an election timeout to win).
const transferForwardTimeout = 30 * time.Second

// retryForward reports whether a forward may be sent again once a leader
// is known (retry): the target refused it as not the leader (nothing was
// written), no leader was known there, the request never left this
// server, or it was a read that failed in transport (always safe to
// repeat). unknown reports a write that was sent and not answered (a
// transport failure, or the leader stopped answering): it may have been
// applied.
func retryForward(err error, isRead bool) (retry, unknown bool) {
	var notSent *pool.NotSentError
	var remote *structs.Error
	switch {
	case err == nil:
		return false, false
	case errors.Is(err, structs.ErrNotLeader), errors.Is(err, structs.ErrNoLeader):
		return true, false
	case errors.As(err, &notSent):
		return true, false
	case errors.As(err, &remote):
		// An answer from the endpoint (outcome_unknown included: the
		// leader lost its leadership while committing).
		return false, !isRead && remote.Code == structs.ErrCodeOutcomeUnknown
	case isRead:
		return true, false
	}
	var ve *structs.ValidationError
	if errors.As(err, &ve) {
		return false, false
	}
	return false, true
}

// setQueryMeta fills the leader-contact fields of a read response.
func (s *Server) setQueryMeta(m *structs.QueryMeta) {
	if s.IsLeader() {
		m.LastContact = 0
		m.KnownLeader = true
		return
	}
	m.KnownLeader = s.Leader() != ""
	if last := s.raft.LastContact(); !last.IsZero() {
		m.LastContact = time.Since(last)
	}
}

// queryTimeout returns the wait for a blocking query: MaxQueryTime (default
// 5 min, at most 10 min) plus up to 1/16 of it as jitter, so many clients
// blocking on one index do not all return at once.
func queryTimeout(opts *structs.QueryOptions) time.Duration {
	wait := opts.MaxQueryTime
	if wait <= 0 {
		wait = DefaultMaxQueryTime
	}
	if wait > MaxMaxQueryTime {
		wait = MaxMaxQueryTime
	}
	if j := int64(wait / 16); j > 0 {
		wait += time.Duration(rand.Int64N(j))
	}
	return wait
}

// blockingRPC runs fn against the current state, again each time what it
// read changes, until the index it returns exceeds opts.MinQueryIndex or
// the wait times out. meta gets the index (never 0, so clients that block
// on it never spin) and the leader-contact fields.
func (s *Server) blockingRPC(opts *structs.QueryOptions, meta *structs.QueryMeta, fn state.QueryFn) error {
	var index uint64
	var err error
	if opts.MinQueryIndex == 0 {
		index, err = fn(nil, s.fsm.State())
	} else {
		ctx := s.shutdownCtx
		if caller := opts.Context(); caller != nil {
			// The caller (an HTTP request) may go away before the wait
			// ends; so may the server.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(caller)
			defer cancel()
			defer context.AfterFunc(s.shutdownCtx, cancel)()
		}
		err = s.fsm.State().BlockingQuery(ctx, opts.MinQueryIndex, queryTimeout(opts), func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
			idx, err := fn(ws, st)
			index = idx // 0 and 1 compare alike with a MinQueryIndex >= 1
			return idx, err
		})
	}
	if err != nil {
		if errors.Is(err, context.Canceled) && s.isShutdown() {
			return structs.ErrShutdown
		}
		return err
	}
	meta.Index = max(index, 1)
	s.setQueryMeta(meta)
	return nil
}

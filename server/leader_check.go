package server

import (
	"errors"
	"reflect"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/structs"
)

// A deposed leader must not answer from its own state. A leader that was
// paused (SIGSTOP) or cut off believes it leads until Raft tells it
// otherwise (its lease lapses, or a peer answers with a higher term); a
// new leader may have committed writes meanwhile. Writes it applies go
// through Raft and fail there; what needs a check is every answer it
// gives from its local state without a Raft round:
//
//   - Consistent reads: forward (rpc.go) has the leader verify its
//     leadership (raft.VerifyLeader, batched by leaderVerifier) before it
//     serves one.
//   - Refusals of writes decided from local state (a job that is not
//     found, a check index that does not match, a validation against the
//     stored objects, a stale token): callEndpoint below verifies the
//     leadership before such a refusal leaves the server. Successful
//     writes are not checked: they went through Raft.
//
// When the verification fails, the request is handled as on a follower:
// a request another server forwarded here is answered structs.ErrNotLeader
// (nothing was written, so that server sends it to the new leader); one
// that arrived here first is served again once Raft has stepped down,
// and forward sends it to the new leader.

// callEndpoint calls an endpoint method (m bound to its receiver) with
// args and reply. Both dispatchers use it: Server.RPC and the remote
// calls of rpc_serve.go, through callWithACL when ACLs are on.
func (s *Server) callEndpoint(m *rpcMethod, args, reply reflect.Value) error {
	info, _ := args.Interface().(structs.RPCInfo)
	if info == nil || info.IsRead() {
		return callMethod(m, args, reply)
	}
	arrivedForwarded := info.IsForwarded()
	leader := s.IsLeader()
	err := callMethod(m, args, reply)
	if err == nil || !leader || !localRefusal(err) || (!arrivedForwarded && info.IsForwarded()) {
		// Applied through Raft, served by a follower's own checks,
		// failed routing, or forwarded by this server: the answer is
		// not the leader's local state.
		return err
	}
	return s.confirmRefusal(m, info, arrivedForwarded, args, reply, err)
}

// callMethod calls m and returns its error.
func callMethod(m *rpcMethod, args, reply reflect.Value) error {
	out := m.fn.Call([]reflect.Value{args, reply})
	err, _ := out[0].Interface().(error)
	return err
}

// localRefusal reports whether err is an endpoint's refusal decided from
// the state it holds (or may be: a validation of the request alone is
// checked too, which costs one round on a refusal only). Routing and Raft
// failures (not_leader, no_leader, outcome_unknown, disk_full, shutdown)
// already say what happened.
func localRefusal(err error) bool {
	switch structs.CodeOf(err) {
	case structs.ErrCodeNotFound, structs.ErrCodeConflict, structs.ErrCodeInvalid,
		structs.ErrCodePermissionDenied, structs.ErrCodeTokenNotFound, structs.ErrCodeTokenMismatch:
		return true
	}
	return false
}

// maxRefusalChecks bounds the times a request is served again after its
// refusal could not be confirmed (this server leading again each time).
const maxRefusalChecks = 3

// confirmRefusal returns the refusal err of a write this server served
// as the leader once its leadership is verified; otherwise it handles the
// request as a follower does (see above).
func (s *Server) confirmRefusal(m *rpcMethod, info structs.RPCInfo, arrivedForwarded bool, args, reply reflect.Value, err error) error {
	deadline := time.Now().Add(s.config.NoLeaderTimeout)
	b := backoff.New(leaderWaitBase, leaderWaitLimit)
	for range maxRefusalChecks {
		verr := s.verifier.Verify()
		if verr == nil {
			return err
		}
		if errors.Is(verr, structs.ErrShutdown) || s.isShutdown() {
			return structs.ErrShutdown
		}
		s.logger.Debug("refusal from local state not confirmed: this server no longer leads",
			"error", err, "verify_error", verr)
		if arrivedForwarded {
			return structs.ErrNotLeader
		}
		// Wait for Raft to step down, so that forward sends the request
		// on instead of serving it here again.
		for s.IsLeader() {
			changed := s.leaderChange.wait()
			if !s.IsLeader() {
				break
			}
			if s.waitLeaderUntil(deadline, b, changed) != nil {
				if s.isShutdown() {
					return structs.ErrShutdown
				}
				return structs.ErrNotLeader
			}
		}
		reply.Elem().SetZero()
		leader := s.IsLeader()
		err = callMethod(m, args, reply)
		if err == nil || !leader || !localRefusal(err) || info.IsForwarded() {
			return err
		}
	}
	return structs.ErrNotLeader
}

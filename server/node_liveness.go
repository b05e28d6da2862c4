package server

import (
	"errors"
	"time"

	"github.com/drover-project/drover/internal/backoff"
	"github.com/drover-project/drover/server/heartbeat"
	"github.com/drover-project/drover/structs"
)

// Retry of a node-down write that failed (e.g. during a leader change).
const (
	nodeDownRetryBase  = 200 * time.Millisecond
	nodeDownRetryLimit = 5 * time.Second
	nodeDownRetryMax   = 30 * time.Second
)

// newHeartbeater creates the (disabled) per-node liveness timers.
func (s *Server) newHeartbeater() {
	s.heartbeats = heartbeat.New(heartbeat.Config{
		MinTTL:       s.config.HeartbeatMinTTL,
		MaxPerSecond: s.config.HeartbeatMaxPerSecond,
		Grace:        s.config.HeartbeatGrace,
		FailoverTTL:  s.config.FailoverHeartbeatTTL,
		Expired:      s.nodeExpired,
	})
}

// heartbeatHook arms a timer for every live node when this server gains
// leadership and stops them all when it loses it.
type heartbeatHook struct{}

func (heartbeatHook) Name() string { return "heartbeats" }

func (heartbeatHook) Establish(s *Server) error {
	nodes, err := s.fsm.State().Nodes(nil)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if !n.TerminalStatus() {
			ids = append(ids, n.ID)
		}
	}
	s.heartbeats.Initialize(ids)
	s.logger.Debug("heartbeat timers armed", "nodes", len(ids), "ttl", s.config.FailoverHeartbeatTTL)
	return nil
}

func (heartbeatHook) Revoke(s *Server) error {
	s.heartbeats.Disable()
	return nil
}

// nodeExpired runs when a node missed its heartbeat: the node is marked
// down, with the evaluations of its jobs (node_evals.go), in one Raft
// entry. It runs on the timer's goroutine.
//
// Only a leader in contact with a quorum marks nodes down (Nomad #3840):
// it first verifies its leadership with a round of Raft heartbeats. A
// leader cut off from the other servers (partitioned, or paused and not
// yet aware of a newer leader) fails that round and writes nothing: no
// node-down entry is appended to its log, so none can be committed if it
// wins the election after the partition heals. If it is still leader
// afterwards, the node gets the failover TTL, as after a leader change:
// the node may have been heartbeating all along to servers that could not
// reach this one. A node that heartbeated since its timer fired (a
// heartbeat racing the timer) is left alone too.
func (s *Server) nodeExpired(nodeID string) {
	logger := s.logger.With("node_id", nodeID)
	b := backoff.New(nodeDownRetryBase, nodeDownRetryLimit)
	err := backoff.Retry(s.shutdownCtx, b, nodeDownRetryMax, retryNodeDown, func() error {
		if !s.IsLeader() {
			return errNodeDownSkipped // the next leader arms its own timers
		}
		if err := s.verifier.Verify(); err != nil {
			s.heartbeats.Extend(nodeID)
			logger.Warn("node missed its heartbeats while this leader could not reach a quorum; not marked down",
				"error", err)
			return errNodeDownSkipped
		}
		if s.heartbeats.Alive(nodeID) {
			return errNodeDownSkipped
		}
		return s.markNodeDown(nodeID)
	})
	switch {
	case errors.Is(err, errNodeDownSkipped):
	case err != nil:
		logger.Error("failed to mark node down after missed heartbeats", "error", err)
	default:
		logger.Warn("node missed its heartbeats; marked down")
	}
}

// errNodeDownSkipped ends nodeExpired without marking the node down.
var errNodeDownSkipped = errors.New("node down skipped")

func retryNodeDown(err error) bool {
	return !errors.Is(err, structs.ErrNotFound) && !errors.Is(err, structs.ErrShutdown) &&
		!errors.Is(err, errNodeDownSkipped)
}

// markNodeDown writes the down status and the node's evaluations.
func (s *Server) markNodeDown(nodeID string) error {
	st := s.fsm.State()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node.TerminalStatus() {
		return nil
	}
	now := time.Now()
	batch, err := s.nodeEvals(st, node, now)
	if err != nil {
		return err
	}
	req := &structs.NodeUpdateStatusRequest{
		NodeID:    nodeID,
		Status:    structs.NodeStatusDown,
		UpdatedAt: now.Unix(),
		NodeEvent: &structs.NodeEvent{
			Message: "Node heartbeat missed", Subsystem: "Cluster", Timestamp: now,
		},
		CreateEvals: batch.evals,
	}
	index, _, err := s.raftApply(structs.NodeUpdateStatusRequestType, req)
	batch.done(index)
	return err
}

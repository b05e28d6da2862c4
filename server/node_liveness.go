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
// down, with one evaluation per job that has allocations on it, in one
// Raft entry. It runs on the timer's goroutine.
func (s *Server) nodeExpired(nodeID string) {
	logger := s.logger.With("node_id", nodeID)
	b := backoff.New(nodeDownRetryBase, nodeDownRetryLimit)
	err := backoff.Retry(s.shutdownCtx, b, nodeDownRetryMax, retryNodeDown, func() error {
		if !s.IsLeader() {
			return nil // the next leader arms its own timers
		}
		return s.markNodeDown(nodeID)
	})
	if err != nil {
		logger.Error("failed to mark node down after missed heartbeats", "error", err)
		return
	}
	logger.Warn("node missed its heartbeats; marked down")
}

func retryNodeDown(err error) bool {
	return !errors.Is(err, structs.ErrNotFound) && !errors.Is(err, structs.ErrShutdown)
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

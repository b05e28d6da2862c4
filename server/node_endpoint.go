package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Node is the node endpoint: client registration, heartbeats, allocation
// watches and updates, drain and eligibility, and node reads.
type Node struct {
	srv *Server
}

// Register creates or updates a client node. A node that exists already
// must present the same SecretID. A node that becomes ready (new, or back
// from another status) gets evaluations for the jobs with allocations on
// it and for every system job, written in the same Raft entry. The reply
// carries the heartbeat TTL and the servers the client may use.
func (n *Node) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	s := n.srv
	if done, err := s.forward("Node.Register", args, args, reply); done {
		return err
	}
	defer measureSince(metricNodeRegister, time.Now())

	if args.Node == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Node", Message: "missing node"}}}
	}
	node := args.Node.Copy()
	node.Canonicalize()
	if err := node.Validate(); err != nil {
		return err
	}
	if node.SecretID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "SecretID", Message: "missing node secret ID"}}}
	}
	node.ComputeClass()
	st := s.fsm.State()
	existing, err := st.NodeByID(nil, node.ID)
	switch {
	case err == nil:
		if existing.SecretID != node.SecretID {
			return errNodeSecret(node.ID)
		}
	case errors.Is(err, structs.ErrNotFound):
		existing = nil
	default:
		return err
	}
	now := time.Now()
	node.StatusUpdatedAt = now.Unix()

	req := *args
	req.Node = node
	req.CreateEvals = nil
	batch := &nodeEvalBatch{}
	if node.Ready() && (existing == nil || !existing.Ready()) {
		if batch, err = s.nodeEvals(st, node, now); err != nil {
			return err
		}
		req.CreateEvals = batch.evals
	}
	index, _, err := s.raftApply(structs.NodeRegisterRequestType, &req)
	batch.done(index)
	if err != nil {
		return err
	}
	s.reportNodeFaults(nodeChangeFaults(existing, node, now)...)
	s.nodeReply(node.ID, node.Status, index, reply)
	reply.NodeModifyIndex = index
	reply.EvalIDs = evalIDs(req.CreateEvals)
	if len(req.CreateEvals) > 0 {
		reply.EvalCreateIndex = index
	}
	return nil
}

// errNodeSecret is the answer to a node's call without that node's secret
// (SecretID missing or wrong): the same for both, so it tells a caller
// nothing about the secret.
func errNodeSecret(nodeID string) error {
	return structs.NewError(structs.ErrCodePermissionDenied, "node %q: missing or wrong node secret", nodeID)
}

// nodeReply fills what every node write answers: the heartbeat TTL (and
// arms the node's timer, or clears it for a down node), the leader and the
// servers, and the cluster size.
func (s *Server) nodeReply(nodeID, status string, index uint64, reply *structs.NodeUpdateResponse) {
	if status == structs.NodeStatusDown {
		s.heartbeats.Clear(nodeID)
	} else {
		reply.HeartbeatTTL = s.heartbeats.Reset(nodeID)
	}
	reply.Index = index
	reply.LeaderRPCAddr = s.rpcAddr
	for _, m := range s.Members() {
		if m.Status == MemberStatusAlive {
			reply.Servers = append(reply.Servers, &structs.NodeServerInfo{
				RPCAdvertiseAddr: m.RPCAddr, Datacenter: m.Datacenter,
			})
		}
	}
	reply.NumNodes = int32(s.heartbeats.Tracked())
}

// UpdateStatus is the client heartbeat. It must carry the node's secret
// (else permission_denied, and nothing changes): one comparison with the
// node row read anyway. It always resets the node's
// liveness timer and returns its TTL; only a change of status is written
// through Raft, with evaluations when the node goes down (its jobs) or
// becomes ready (its jobs and every system job).
func (n *Node) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	s := n.srv
	if done, err := s.forward("Node.UpdateStatus", args, args, reply); done {
		return err
	}
	defer measureSince(metricNodeUpdateStatus, time.Now())
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	if !structs.ValidNodeStatus(args.Status) {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Status", Message: "unknown node status " + args.Status}}}
	}
	st := s.fsm.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if args.SecretID != node.SecretID {
		return errNodeSecret(node.ID)
	}
	index, err := st.Index(state.TableNodes)
	if err != nil {
		return err
	}
	if node.Status != args.Status {
		now := time.Now()
		req := *args
		req.SecretID = ""
		req.UpdatedAt = now.Unix()
		req.CreateEvals = nil
		if req.NodeEvent == nil {
			req.NodeEvent = &structs.NodeEvent{Message: "Node status changed to " + args.Status, Subsystem: "Cluster", Timestamp: now}
		}
		next := node.Copy()
		next.Status = args.Status
		batch := &nodeEvalBatch{}
		if args.Status == structs.NodeStatusDown || (next.Ready() && !node.Ready()) {
			if batch, err = s.nodeEvals(st, next, now); err != nil {
				return err
			}
			req.CreateEvals = batch.evals
		}
		index, _, err = s.raftApply(structs.NodeUpdateStatusRequestType, &req)
		batch.done(index)
		if err != nil {
			return err
		}
		if f := flapFault(node, args.Status, now); f != nil {
			s.reportNodeFaults(f)
		}
		reply.NodeModifyIndex = index
		reply.EvalIDs = evalIDs(req.CreateEvals)
		if len(req.CreateEvals) > 0 {
			reply.EvalCreateIndex = index
		}
	}
	s.nodeReply(args.NodeID, args.Status, index, reply)
	return nil
}

// UpdateDrain starts or ends a drain. Starting one makes the node
// ineligible; the leader's node drainer then marks its allocations for
// migration, group by group within each migrate max_parallel, and ends the
// drain once they are gone (or at the deadline). Ending one with
// MarkEligible makes the node eligible again, with evaluations as on
// registration.
func (n *Node) UpdateDrain(args *structs.NodeUpdateDrainRequest, reply *structs.NodeUpdateResponse) error {
	s := n.srv
	if done, err := s.forward("Node.UpdateDrain", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	st := s.fsm.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	now := time.Now()
	req := *args
	req.UpdatedAt = now.Unix()
	req.CreateEvals = nil
	if req.DrainStrategy != nil && req.DrainStrategy.StartedAt.IsZero() {
		ds := *req.DrainStrategy
		ds.StartedAt = now
		req.DrainStrategy = &ds
	}
	if req.NodeEvent == nil {
		msg := "Node drain strategy set"
		if req.DrainStrategy == nil {
			msg = "Node drain disabled"
		}
		req.NodeEvent = &structs.NodeEvent{Message: msg, Subsystem: "Drain", Timestamp: now}
	}
	batch := &nodeEvalBatch{}
	if req.DrainStrategy == nil && req.MarkEligible && !node.Ready() {
		next := node.Copy()
		next.Drain, next.DrainStrategy, next.SchedulingEligibility = false, nil, structs.NodeSchedulingEligible
		if batch, err = s.nodeEvals(st, next, now); err != nil {
			return err
		}
		req.CreateEvals = batch.evals
	}
	index, _, err := s.raftApply(structs.NodeUpdateDrainRequestType, &req)
	batch.done(index)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex = index
	reply.EvalIDs = evalIDs(req.CreateEvals)
	if len(req.CreateEvals) > 0 {
		reply.EvalCreateIndex = index
	}
	reply.Index = index
	return nil
}

// UpdateEligibility sets a node's scheduling eligibility. A node that
// becomes able to take placements gets evaluations as on registration.
func (n *Node) UpdateEligibility(args *structs.NodeUpdateEligibilityRequest, reply *structs.NodeUpdateResponse) error {
	s := n.srv
	if done, err := s.forward("Node.UpdateEligibility", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "NodeID", Message: "missing node ID"}}}
	}
	switch args.Eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "Eligibility", Message: "must be eligible or ineligible; got " + args.Eligibility}}}
	}
	st := s.fsm.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node.DrainStrategy != nil && args.Eligibility == structs.NodeSchedulingEligible {
		return structs.NewError(structs.ErrCodeInvalid, "node %q is draining and cannot be marked eligible", node.ID)
	}
	now := time.Now()
	req := *args
	req.UpdatedAt = now.Unix()
	req.CreateEvals = nil
	if req.NodeEvent == nil {
		req.NodeEvent = &structs.NodeEvent{Message: "Node marked as " + args.Eligibility, Subsystem: "Cluster", Timestamp: now}
	}
	next := node.Copy()
	next.SchedulingEligibility = args.Eligibility
	batch := &nodeEvalBatch{}
	if next.Ready() && !node.Ready() {
		if batch, err = s.nodeEvals(st, next, now); err != nil {
			return err
		}
		req.CreateEvals = batch.evals
	}
	index, _, err := s.raftApply(structs.NodeUpdateEligibilityRequestType, &req)
	batch.done(index)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex = index
	reply.EvalIDs = evalIDs(req.CreateEvals)
	if len(req.CreateEvals) > 0 {
		reply.EvalCreateIndex = index
	}
	reply.Index = index
	return nil
}

// GetNode returns one node; a missing node is a nil Node with the nodes
// table index.
func (n *Node) GetNode(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) error {
	if done, err := n.srv.forward("Node.GetNode", args, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		switch {
		case err == nil:
			reply.Node = node
			return node.ModifyIndex, nil
		case errors.Is(err, structs.ErrNotFound):
			reply.Node = nil
			return st.Index(state.TableNodes)
		default:
			return 0, err
		}
	})
}

// List returns node stubs, filtered by Prefix.
func (n *Node) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
	if done, err := n.srv.forward("Node.List", args, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		nodes, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		stubs := make([]*structs.NodeListStub, 0, len(nodes))
		for _, node := range nodes {
			stubs = append(stubs, node.Stub())
		}
		reply.Nodes = stubs
		return st.Index(state.TableNodes)
	})
}

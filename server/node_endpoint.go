package server

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Node is the node endpoint: client registration and node reads.
type Node struct {
	srv *Server
}

// Register creates or updates a client node. A node that exists already
// must present the same SecretID. The reply carries the heartbeat TTL and
// the servers the client may use.
func (n *Node) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.Register", args, args, reply); done {
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
	existing, err := n.srv.fsm.State().NodeByID(nil, node.ID)
	switch {
	case err == nil:
		if existing.SecretID != node.SecretID {
			return structs.NewError(structs.ErrCodeInvalid, "node secret ID does not match the registered node")
		}
	case !errors.Is(err, structs.ErrNotFound):
		return err
	}
	node.StatusUpdatedAt = time.Now().Unix()

	req := *args
	req.Node = node
	index, _, err := n.srv.raftApply(structs.NodeRegisterRequestType, &req)
	if err != nil {
		return err
	}
	reply.HeartbeatTTL = n.srv.config.HeartbeatTTL
	reply.NodeModifyIndex = index
	reply.Index = index
	reply.LeaderRPCAddr = n.srv.rpcAddr
	for _, m := range n.srv.Members() {
		if m.Status == MemberStatusAlive {
			reply.Servers = append(reply.Servers, &structs.NodeServerInfo{
				RPCAdvertiseAddr: m.RPCAddr, Datacenter: m.Datacenter,
			})
		}
	}
	if nodes, err := n.srv.fsm.State().Nodes(nil); err == nil {
		reply.NumNodes = int32(len(nodes))
	}
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

package server

import (
	"errors"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Operator is the operator endpoint: Raft configuration inspection and
// peer removal.
type Operator struct {
	srv *Server
}

// RaftGetConfiguration returns the Raft configuration with the leader and
// voter flags set; names come from the known members.
func (op *Operator) RaftGetConfiguration(args *structs.GenericRequest, reply *structs.RaftConfigurationResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.RaftGetConfiguration", args, args, reply); done {
		return err
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftError(err)
	}
	names := make(map[string]string)
	for _, m := range s.Members() {
		names[m.ID] = m.Name
	}
	leaderAddr, leaderID := s.raft.LeaderWithID()
	reply.Servers = nil
	for _, srv := range f.Configuration().Servers {
		reply.Servers = append(reply.Servers, &structs.RaftServer{
			ID:           string(srv.ID),
			Node:         names[string(srv.ID)],
			Address:      string(srv.Address),
			Leader:       srv.ID == leaderID && srv.Address == leaderAddr,
			Voter:        srv.Suffrage == raft.Voter,
			RaftProtocol: "3",
		})
	}
	reply.Index = f.Index()
	return nil
}

// RaftRemovePeer removes a server from the Raft configuration, named by ID
// or, failing that, by address. A server not in the configuration fails
// with code not_found. A removed server that is still running and
// announcing itself is added back by the leader (as Nomad does); stop it
// first.
func (op *Operator) RaftRemovePeer(args *structs.RaftPeerRequest, reply *structs.GenericResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.RaftRemovePeer", args, args, reply); done {
		return err
	}
	if args.ID == "" && args.Address == "" {
		return &structs.ValidationError{Errors: []structs.FieldError{{Field: "ID", Message: "an ID or an address is required"}}}
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftError(err)
	}
	var id raft.ServerID
	for _, srv := range f.Configuration().Servers {
		if (args.ID != "" && string(srv.ID) == args.ID) || (args.ID == "" && string(srv.Address) == args.Address) {
			id = srv.ID
			break
		}
	}
	if id == "" {
		if args.ID != "" {
			return structs.NewError(structs.ErrCodeNotFound, "no raft peer with ID %q", args.ID)
		}
		return structs.NewError(structs.ErrCodeNotFound, "no raft peer with address %q", args.Address)
	}
	rf := s.raft.RemoveServer(id, 0, 0)
	if err := rf.Error(); err != nil {
		return raftError(err)
	}
	s.members.remove(string(id))
	s.logger.Info("removed raft peer", "peer_id", id)
	reply.Index = rf.Index()
	return nil
}

// TransferLeadership hands leadership to the server named by ID or,
// failing that, by address, or with neither to the follower Raft picks
// (the most up to date). It returns once the target has been told to
// start an election and the old leader has stepped down, or with the
// error that stopped it; it is never retried on another server (a
// second transfer would move leadership on again). A target that is not
// a voter in the configuration fails with not_found or invalid, naming
// it; naming the leader itself does nothing and sets Noop.
func (op *Operator) TransferLeadership(args *structs.LeadershipTransferRequest, reply *structs.LeadershipTransferResponse) error {
	s := op.srv
	if done, err := s.forward(methodTransferLeadership, args, args, reply); done {
		return err
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raftError(err)
	}
	reply.From = structs.RaftIDAddress{ID: s.nodeID, Address: s.rpcAddr}
	var target *raft.Server
	if args.ID != "" || args.Address != "" {
		for _, srv := range f.Configuration().Servers {
			if (args.ID != "" && string(srv.ID) == args.ID) || (args.ID == "" && string(srv.Address) == args.Address) {
				target = &srv
				break
			}
		}
		switch {
		case target == nil && args.ID != "":
			return structs.NewError(structs.ErrCodeNotFound, "no raft peer with ID %q", args.ID)
		case target == nil:
			return structs.NewError(structs.ErrCodeNotFound, "no raft peer with address %q", args.Address)
		case target.Suffrage != raft.Voter:
			return structs.NewError(structs.ErrCodeInvalid, "raft peer %q is not a voter and cannot lead", target.ID)
		}
		reply.To = structs.RaftIDAddress{ID: string(target.ID), Address: string(target.Address)}
		if target.ID == raft.ServerID(s.nodeID) {
			reply.Noop = true
			reply.Index = f.Index()
			return nil
		}
	}
	var tf raft.Future
	if target != nil {
		tf = s.raft.LeadershipTransferToServer(target.ID, target.Address)
	} else {
		tf = s.raft.LeadershipTransfer()
	}
	if err := tf.Error(); err != nil {
		return transferError(err)
	}
	if target == nil {
		addr, id := s.raft.LeaderWithID()
		reply.To = structs.RaftIDAddress{ID: string(id), Address: string(addr)}
	}
	s.logger.Info("transferred leadership", "to_id", reply.To.ID, "to_address", reply.To.Address)
	reply.Index = s.raft.LastIndex()
	return nil
}

// transferError maps a failed leadership transfer to a coded error. None
// of them is not_leader, so no forwarding server sends the transfer on to
// the new leader.
func transferError(err error) error {
	switch {
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return structs.NewError(structs.ErrCodeConflict, "a leadership transfer is already in progress")
	case errors.Is(err, raft.ErrNotLeader):
		return structs.NewError(structs.ErrCodeConflict, "this server lost leadership before the transfer started; nothing was transferred")
	case errors.Is(err, raft.ErrRaftShutdown):
		return structs.ErrShutdown
	}
	return structs.NewError(structs.ErrCodeInternal, "leadership transfer failed: %v", err)
}

// SchedulerGetConfiguration returns the scheduler configuration in force
// (Nomad's default until an operator sets one). A blocking query.
func (op *Operator) SchedulerGetConfiguration(args *structs.GenericRequest, reply *structs.SchedulerConfigurationResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SchedulerGetConfiguration", args, args, reply); done {
		return err
	}
	return s.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		index, c, err := st.SchedulerConfig(ws)
		if err != nil {
			return 0, err
		}
		reply.SchedulerConfig = c
		return index, nil
	})
}

// SchedulerSetConfiguration sets the scheduler configuration through Raft.
// With CAS, a configuration whose ModifyIndex is not the stored one is not
// written and Updated is false. Settings Drover does not implement are
// refused by name (structs.SchedulerConfiguration.Validate).
func (op *Operator) SchedulerSetConfiguration(args *structs.SchedulerSetConfigRequest, reply *structs.SchedulerSetConfigurationResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SchedulerSetConfiguration", args, args, reply); done {
		return err
	}
	if err := args.Config.Validate(); err != nil {
		return err
	}
	index, _, err := s.raftApply(structs.SchedulerConfigRequestType, args)
	switch {
	case err == nil:
		reply.Updated = true
	case args.CAS && structs.CodeOf(err) == structs.ErrCodeConflict:
		reply.Updated = false
	default:
		return err
	}
	reply.Index = index
	return nil
}

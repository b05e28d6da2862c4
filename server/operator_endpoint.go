package server

import (
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
